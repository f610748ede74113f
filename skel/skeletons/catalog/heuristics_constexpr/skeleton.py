"""Derive constexpr flags from the arguments with `@triton.heuristics` (EVEN_K, USE_*).

## What it does
Adds `@triton.heuristics({'EVEN_K': lambda args: args['K'] % args['BLOCK_K'] == 0,
'USE_SCALE': lambda args: args['scale'] is not None})` above `@triton.jit` and turns the
corresponding runtime test in the kernel into a test of the new constexpr parameter.
The heuristic runs on the host at every launch — placed below `@triton.autotune`, after
the autotuner picked its config, so it can read tuned block sizes — and the kernel is
compiled once per flag value.

## Why it is faster
The flag compiles the unneeded path away. For divisibility the win is the classic
EVEN_K split: when `K % BLOCK_K == 0` the K-loop loads need no mask and no `other=`,
so the compiler emits unpredicated, vectorised loads and drops the per-iteration
compare-and-select. A runtime `if K % BLOCK_K == 0` inside the kernel keeps both paths.
Unlike passing the flag by hand from the launcher, a heuristic also works when
`BLOCK_K` is autotuned (the launcher cannot know it) and cannot be forgotten at one of
several call sites.

## Applies when
- the kernel is launched (reads `tl.program_id`) and
  - branches on a runtime divisibility test of its arguments (`if T % BT == 0`), or
  - loads masked tiles along a runtime dimension inside a `tl.dot` loop (the mask exists
    only for the ragged last tile; an `EVEN_K` flag removes it when shapes divide), or
  - branches on a runtime switch argument that could be derived from the others;
- and the flag has few values (a bool), so the extra variants compile once.

## Does not apply when
- the test is on `None`: Triton already treats `None` arguments as constexpr, so a
  heuristic only renames the check (useful for clarity and autotune keys, not speed);
- the dimension is rarely divisible (odd vocabulary sizes): the unmasked variant never
  runs and the extra variant is wasted compile time;
- the kernel already takes an `EVEN_*`-style constexpr computed by the caller and is not
  autotuned on the block size involved.
- when K is already a multiple of 16, Triton vectorises the masked loads itself: an EVEN_K heuristic
  measured no effect on an H200 (1.01×, `benchmarks/results/gpu-2026-12-01-catalog/verify_catalog_2026-12-01.md`).

## References
- flash-linear-attention `fla/ops/common/chunk_o.py` (`chunk_fwd_kernel_o`: `USE_G`, `IS_VARLEN` heuristics) — at `49b00f0a94`, before 2025-07-01
- flash-linear-attention `fla/modules/layernorm_gated.py` (`layer_norm_fwd_kernel`) — at `49b00f0a94`, before 2025-07-01
- Triton `triton.heuristics` documentation
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import custom, decorated
from skel.skeletons.patterns import ifs
from skel.skeletons.predicates.branches import RUNTIME_SWITCH_BRANCH
from skel.skeletons.predicates.names import IDENT
from skel.skeletons.predicates.programs import KERNEL_ENTRY

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts, Loop

_EVEN_FLAG = re.compile(r"(?i)\w*even\w*|\w*divisible\w*|need_\w*mask\w*|no_\w*mask\w*")


def _runtime_params(k: KernelFacts) -> set[str]:
    return {p.name for p in k.params if not p.constexpr}


def _runtime_divisibility(i: dict[str, Any], k: KernelFacts) -> bool:
    """An `if` testing whether a runtime argument divides (`T % BT == 0`)."""
    return "%" in i["test"] and bool(re.search(r"[!=]=\s*0\b", i["test"])) and bool(
        set(i["names"]) & _runtime_params(k))


def _mask_names(mask: str, k: KernelFacts, loop: Loop) -> set[str]:
    """Identifiers a mask reads, looking one assignment deep for local mask variables."""
    names = set(IDENT.findall(mask))
    for a in k.assigns:
        if a.line <= loop.end_line and set(a.targets) & names:
            names.update(a.names)
    return names


def even_k_candidates(k: KernelFacts) -> list[int]:
    if any(p.constexpr and _EVEN_FLAG.fullmatch(p.name) for p in k.params):
        return []
    runtime = _runtime_params(k)
    out = []
    for lp in k.loops:
        if lp.kind not in ("range", "tl.range"):
            continue
        inside = [c for c in k.calls if lp.line <= c.line <= lp.end_line]
        if not any(c.name == "tl.dot" for c in inside):
            continue
        bound = set(IDENT.findall(" ".join(lp.args))) & runtime
        if not bound:
            continue
        for c in inside:
            if c.name == "tl.load" and "mask" in c.kwargs and _mask_names(c.kwargs["mask"], k, lp) & bound:
                out.append(c.line)
    return out


RUNTIME_DIVISIBILITY = ifs(where=_runtime_divisibility, name="runtime-divisibility-test",
                           describe="an `if` on a runtime divisibility test (`T % BT == 0`)")
EVEN_K_CANDIDATE = custom(
    "masked-dot-loop-loads", "masked tile loads along a runtime dimension in a `tl.dot` loop (no EVEN_* flag)",
    even_k_candidates)
HEURISTICS = decorated("triton.heuristics", name="heuristics", describe="`@triton.heuristics({...})`")

#: the subject: tests made at run time that a heuristic could fold into a constexpr
RUNTIME_TESTS = RUNTIME_DIVISIBILITY | EVEN_K_CANDIDATE | RUNTIME_SWITCH_BRANCH

SKELETON = Skeleton(
    id="heuristics-constexpr",
    title="@triton.heuristics-derived constexpr flags",
    summary="Derive EVEN_K / USE_* constexpr flags from the arguments with @triton.heuristics to compile out branches.",
    category=Category.TUNING,
    doc=__doc__,
    present=HEURISTICS,
    preconditions=[KERNEL_ENTRY, RUNTIME_TESTS],
    subject=RUNTIME_TESTS,
    env=Env(),
    helps=("compute", "memory"),
)
