"""Make the grid a function of the autotuned block size: `grid = lambda meta: ...`.

## What it does
Replaces a grid computed on the host from a block size (`grid = (triton.cdiv(N, 1024),)`)
by a callable the launcher evaluates *after* the autotuner has chosen a config:
`grid = lambda meta: (triton.cdiv(N, meta['BLOCK']),)` (or a `def grid(meta)`), and
stops passing the tuned `BLOCK` from the host.

## Why it is faster
It is what makes autotuning a grid-setting block size correct at all. When a kernel
computes its tile offset as `pid * BLOCK` and `BLOCK` is autotuned, a grid computed from
a fixed host-side block covers the problem only for the config that happens to match:
a larger tuned `BLOCK` launches too many programs (wasted, masked-out work), a smaller
one leaves the tail unprocessed (wrong results). With a meta-dependent grid every
config launches exactly `cdiv(N, BLOCK)` programs, so the tuner can also pick the
larger blocks that cut the program count.

## Applies when
- the kernel is `@triton.autotune`d over a block size (a constexpr set in the configs),
  and its program id is multiplied by that block size (`pid * BLOCK`), i.e. the block
  size decides how many programs are needed;
- and a launch in the same file passes a fixed grid (a tuple or expression, not a
  callable).

## Does not apply when
- the tuned block only tiles a loop inside each program (`for k in range(0, K, BK)`):
  the grid does not depend on it and a fixed grid is right;
- the grid is a persistent launch (`NUM_SMS` programs looping over tiles);
- the launch already uses a callable grid. Detection reads the launch facts; a grid
  held in a local variable is resolved by reading the host function in the source file
  when that file is available and matches the kernel.
- a fixed grid sized for the smallest tuned block only launches extra, fully masked programs: on an
  H200 that cost nothing measurable (1.00×, `benchmarks/results/gpu-2026-12-01-catalog/verify_catalog_2026-12-01.md`); the lambda is a correctness and tidiness fix.

## References
- flash-linear-attention `fla/ops/gla/chunk.py` (`chunk_gla_fwd_o_gk`: `def grid(meta): return (triton.cdiv(V, meta['BV']), NT, B * H)` for `chunk_gla_fwd_kernel_o`, whose `BV` is autotuned) — at `49b00f0a94`, before 2025-07-01
- Triton tutorial `03-matrix-multiplication.py` (`matmul`: `grid = lambda META: ...`)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.patterns import launches
from skel.skeletons.predicates.autotune import tuned_meta_params
from skel.skeletons.predicates.programs import program_id_vars

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts, Launch


def grid_kind(k: KernelFacts, launch: Launch) -> str:
    """"callable" or "static" for one launch of kernel ``k``. The extractor resolves a
    grid name bound to a lambda or a ``def grid(meta)`` in the launching function or at
    module level; any other name is taken as a fixed grid."""
    grid = launch.grid.strip()
    if launch.grid_is_callable or "lambda" in grid or re.search(r"\bmeta\b|\bMETA\b", grid):
        return "callable"
    return "static"


def _callable_grid(ln: Launch, k: KernelFacts) -> bool:
    return grid_kind(k, ln) == "callable"


def _static_grid(ln: Launch, k: KernelFacts) -> bool:
    return grid_kind(k, ln) == "static"


def _tuned_block_sets_grid(k: KernelFacts) -> list[int] | None:
    tuned = tuned_meta_params(k)
    pids = program_id_vars(k)
    if not tuned:
        return None
    lines = []
    body = k.source
    pid_alt = "|".join(sorted(map(re.escape, pids))) if pids else None
    for t in tuned:
        pats = [rf"program_id\([^)]*\)\s*\*\s*{t}\b", rf"\b{t}\s*\*\s*tl\.program_id\("]
        if pid_alt:
            pats += [rf"\b(?:{pid_alt})\s*\*\s*{t}\b", rf"\b{t}\s*\*\s*(?:{pid_alt})\b"]
        for pat in pats:
            for m in re.finditer(pat, body):
                lines.append(k.line_start + body.count("\n", 0, m.start()))
    return lines or None


CALLABLE_GRID = launches(where=_callable_grid, name="callable-grid",
                         describe="a launch with a meta-dependent (callable) grid")
STATIC_GRID = launches(where=_static_grid, name="static-grid-launch",
                       describe="a launch with a fixed (non-callable) grid")
TUNED_BLOCK_SETS_GRID = custom(
    "tuned-block-sets-grid", "an autotuned block size that scales the program id (`pid * BLOCK`)",
    _tuned_block_sets_grid)

SKELETON = Skeleton(
    id="autotune-grid-lambda",
    title="Meta-dependent grid for autotuned block sizes",
    summary="Launch with grid = lambda meta: (cdiv(N, meta['BLOCK']),) when an autotuned BLOCK sets the grid.",
    category=Category.HOST,
    doc=__doc__,
    ruled_out_by=(r"\bgrid[\s_-]*lambda\b", r"\bgrid as a (lambda|callable)\b"),
    present=CALLABLE_GRID,
    preconditions=[TUNED_BLOCK_SETS_GRID, STATIC_GRID],
    subject=TUNED_BLOCK_SETS_GRID,
    env=Env(),
    helps=("occupancy",),
)
