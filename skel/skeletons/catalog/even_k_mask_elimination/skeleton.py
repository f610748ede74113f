"""Compile out per-iteration load masks when the loop extent divides the block (EVEN_K).

## What it does
Adds a constexpr flag such as `EVEN_K` (computed on the host or in
`@triton.heuristics({"EVEN_K": lambda args: args["K"] % args["BLOCK_K"] == 0})`) and
splits the loop's loads: `if EVEN_K: a = tl.load(a_ptrs)` else
`a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k, other=0.0)`. The flag is a
constexpr, so each variant compiles only one path.

## Why it is faster
A mask that changes every iteration (`offs < K - k * BLOCK_K`) costs integer compares,
predicate registers and selects on every element of every tile, and a masked load with
an unknown bound can block the widest vector loads. When the extent is a multiple of
the block, every tile is full and the mask is always true: dropping it removes that
work from the hot loop. The effect is largest in memory- or issue-bound loops with
small tiles; in big compute-bound GEMMs the MMAs hide most of it.

## Applies when
- a `range`/`tl.range` loop loads 2-D tiles that feed a `tl.dot`, with a `mask=` that
  depends on the loop index (`offs_k[None, :] < K - k * BK`, `o_t < T` with `o_t` built
  from `i_t`), and every loop-varying part of that mask is a bounds check against a
  *runtime* argument (K, T, n_cols passed per launch). With the extent a multiple of
  the block those parts are always true, so the flag leaves either an unmasked load or
  only loop-invariant conjuncts (a row mask `rm[:, None] < M`, as in SGLang's `even_Ks`
  path), which the compiler hoists out of the loop;
- the extent is often a multiple of the block size (model dimensions, padded lengths),
  so the unmasked variant actually runs.

## Does not apply when
- the divisibility is not guaranteed: dropping the mask reads out of bounds. The flag
  must be derived from the actual arguments (heuristics or the launcher), never assumed;
- the limit is a constexpr (a head dim `K: tl.constexpr`, a loop of 1–2 iterations over
  it): `K % BK` is known at compile time, and a flag only drops an always-true compare;
- the mask does not move with the loop index (a head-dim mask, or a mask recomputed each
  iteration from loop-invariant offsets): the compiler already hoists it;
- the masked load is not a `tl.dot` operand tile (a 1-D gate or bias vector that scales
  an operand, a streaming loop without MMAs): its mask is a small share of the work;
- a loop-varying part of the mask is not a runtime bound: semantic masks (causal,
  sparsity, data-dependent) stay, so no divisibility flag removes them;
- `tl.static_range` loops, whose trip count and bounds are compile-time already, and
  guard loops that run at most once (`range(0, flag, 1)`);
- sequence lengths vary per call (`do_not_specialize=["T"]` kernels, varlen `eos - bos`
  read from memory): a T-divisibility flag doubles the compiled variants for little
  gain or cannot be computed on the host; a peeled last iteration is better.
- on an H200 with Triton 3.6, the unmasked K loop of a fp16 GEMM measured 0.95× of the masked one
  (`benchmarks/results/gpu-2026-12-01-catalog/verify_catalog_2026-12-01.md`): the compiler already hoists the K mask; do not expect a gain there.

## References
- Triton (history) `python/triton/ops/blocksparse/matmul.py` (`_dsd_kernel`)
- triton_kernels `matmul_ogs_details/_p_matmul_ogs.py` (`_p_matmul_ogs`, `EVEN_K`)
- SGLang `python/sglang/kernels/ops/moe/fused_moe_triton_kernels.py` (`fused_moe_kernel`, `even_Ks`)
- vLLM `vllm/lora/ops/triton_ops/kernel_utils.py` (`mm_k`, `EVEN_K`)
- lightllm `grouped_matmul_kernel` (`NEED_K_MASK`)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.kernels.flow import args_of, comparison, has_call, walk
from skel.skeletons.predicates.addresses import bounds_mask, is_vector_expr, manual_2d_address
from skel.skeletons.predicates.loops import at_most_one_trip, conjuncts, depends_on_loop
from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.patterns import addresses

if TYPE_CHECKING:
    from skel.kernels.flow import CallInfo, Flow, LoopInfo, Node
    from skel.kernels.model import KernelFacts

_FLAG = re.compile(r"(?:EVEN|Even|even)(?:_\w+|[A-Z]\w*)?|NEED_\w*MASK\w*|\w*DIVISIBLE\w*|\w*divisible\w*")


def _even_flags(k: KernelFacts) -> list[int]:
    """The `if` statements testing an `EVEN_*` flag (a constexpr parameter or a heuristics
    key), else the flag's first `if` in the source: flags from parameters and decorators,
    lines from the `if`s or the text."""
    flags = {p.name for p in k.params if p.constexpr and _FLAG.fullmatch(p.name)}
    for d in k.decorators:
        if d.name == "triton.heuristics":
            flags |= {n for item in d.list_items if _FLAG.fullmatch(n := item.strip("'\" "))}
    hits = []
    for name in sorted(flags):  # the `if` that branches on the flag (the statement, not the header)
        ifs = [i["line"] for i in k.ifs if name in i.get("names", ())]
        m = re.search(rf"\bif\s+(?:not\s+)?\(?\s*{re.escape(name)}\b", k.source)
        hits += ifs or ([k.line_start + k.source[:m.start()].count("\n")] if m else [])
    return hits


def _no_specialize(k) -> set[str]:
    jit = k.decorator("triton.jit")
    text = (jit.kwargs.get("do_not_specialize", "") if jit else "")
    return set(re.findall(r"['\"](\w+)['\"]", text))


def _limits(fl, mask):
    """The scalar sides of the mask's comparisons (`K - k0` in `offs < K - k0`)."""
    _, exprs = fl.closure(mask)
    out = []
    for e in exprs:
        for n in walk(e):
            cmp = comparison(n)
            if cmp is not None:
                for side in (cmp[0], cmp[2]):
                    if not is_vector_expr(fl, side):
                        out.append(side)
    return out


def _static_limit(fl, k, mask) -> bool:
    """Every bound is known per launch: not read from memory (varlen `eos - bos`) and
    not a `do_not_specialize` length, so the host can compute a divisibility flag."""
    skip = _no_specialize(k)
    for side in _limits(fl, mask):
        names, exprs = fl.closure(side)
        if has_call(exprs, "tl.load") or names & skip:
            return False
    return True


def _runtime_limit(fl, k, atom) -> bool:
    """The bound a comparison checks against involves a runtime (non-constexpr) argument:
    a constexpr extent (a head dim) is known at compile time, its loop runs a handful of
    times, and divisibility can be tested statically without any flag."""
    runtime = {p.name for p in k.params if not p.constexpr}
    return any(fl.closure(side)[0] & runtime for side in _limits(fl, atom))


def _k_loop_dots(fl: Flow, k: KernelFacts) -> list[tuple[LoopInfo, set[str]]]:
    """Each `tl.dot` in a `range` loop that runs more than once: that loop, and the names
    its operands read in it (kept in the flow's memo: every load asks)."""
    cached = fl.memo.get("even-k-dot-loops")
    if isinstance(cached, list):
        return cached
    out = []
    for dot in fl.named("tl.dot"):
        if not dot.loops or dot.loops[-1].kind not in ("range", "tl.range"):
            continue
        loop = dot.loops[-1]
        if at_most_one_trip(fl, k, loop):
            continue
        operands: set[str] = set()
        for op in args_of(dot.node)[:2]:
            operands |= fl.closure(op, within=loop)[0]
        out.append((loop, operands))
    fl.memo["even-k-dot-loops"] = out
    return out


def _masked_dot_tile(fl: Flow, c: CallInfo, addr: Node, k: KernelFacts) -> bool:
    """A 2-D tile load feeding a `tl.dot` in a `range` loop whose loop-varying mask parts are
    all bounds against a runtime, per-launch limit: with the extent divisible by the block
    those parts are always true, and what is left is loop-invariant (hoisted) or nothing."""
    mask = c.arg(1, "mask")
    if mask is None:
        return False
    for loop, operands in _k_loop_dots(fl, k):
        if not loop.holds(c.line) or not (set(c.targets) & operands):
            continue
        if not manual_2d_address(fl, addr):
            continue  # a 1-D vector (a gate, a bias) scaled into an operand is not the tile
        if not bounds_mask(fl, mask) or not _static_limit(fl, k, mask):
            continue
        moving = [m for m in conjuncts(fl, mask) if depends_on_loop(fl, m, loop)]
        if moving and all(_runtime_limit(fl, k, m) for m in moving):
            return True
    return False


EVEN_FLAG_BRANCH = custom(
    "even-flag-branch", "a constexpr/heuristics flag `EVEN_*` / `NEED_*_MASK` tested by an `if`", _even_flags)
K_LOOP_MASKED_DOT_TILES = addresses(
    of=("tl.load",), kernel_where=_masked_dot_tile, name="k-loop-masked-dot-tiles",
    describe="masked 2-D tile loads feeding a `tl.dot` in a `range` loop, every loop-varying mask part a bounds"
    " check against a runtime per-launch limit (dropped when the extent divides the block)")

SKELETON = Skeleton(
    id="even-k-mask-elimination",
    title="EVEN_K: drop loop masks when the extent divides the block",
    summary="Constexpr EVEN_K (K % BLOCK_K == 0) flag selecting unmasked tile loads in the K loop.",
    category=Category.MEMORY,
    doc=__doc__,
    present=EVEN_FLAG_BRANCH,
    preconditions=[K_LOOP_MASKED_DOT_TILES],
    subject=K_LOOP_MASKED_DOT_TILES,
    env=Env(),
    helps=("memory", "latency"),
)
