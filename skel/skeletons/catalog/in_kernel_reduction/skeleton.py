"""Loop over the split dimension inside one program instead of a split grid axis + host sum.

## What it does
The inverse of `split-k-reduction`. A kernel launched with a grid axis over blocks of its
reduction dimension (`grid = (NK, NT, B * H)`, `i_k = tl.program_id(0)`, `o_k = i_k * BK
+ tl.arange(0, BK)`) writes one partial result per block into a buffer with an extra
leading `NK` dimension (`o = q.new_empty(NK, *o.shape, dtype=torch.float)`), and the host
sums it afterwards (`o = o.sum(0)`). The rewrite drops the axis: each program loops
`for i_k in range(tl.cdiv(K, BK))`, accumulates in registers (`b_o += tl.dot(...)`) and
stores the finished output once, in the output's own dtype.

## Why it is faster
The split costs an `NK`-times larger fp32 partial buffer, written by the kernel and read
back by a separate `sum` kernel (for `NK = 2` and a bf16 output: 8 bytes of partials
written, 8 read back and 2 written again per output element, instead of 2 written), one
more launch, and recomputation of
everything the programs of one output tile share (the loads of `v`, `do`, `h` blocks that
do not depend on `i_k`). When the grid is already large without the split — an axis over
sequence chunks (`NT`) or tokens — the extra programs add no useful parallelism, so all
of that is overhead. FLA removed the key-dimension split from its NSA kernels and keeps
`K` in one program (or a loop) in its chunk kernels.

## Applies when
- a program id multiplies a tile size into the reduction dimension (`i_k * BK`) and
  indexes the stored output (one partial per block), and the launching function sums the
  partials after the launch (`.sum(0)`);
- the launch grid also has an axis over sequence chunks or tokens (`NT`,
  `cdiv(T, BT)`), so it stays large without the split.

## Does not apply when
- the grid is small without the split (decode, a single sequence, GEMV): there the split
  is what fills the SMs — that is `split-k-reduction`, which never fires on a kernel that
  already writes host-merged partials, and this one never fires without a token axis;
- the per-block work needs more registers than one program can hold when looped (very
  large `K * V` state tiles): the split can be the price of fitting in registers;
- the partials are merged by something other than a plain sum (log-sum-exp rescaling
  of flash-decoding): that merge is part of the algorithm.

## References
- flash-linear-attention `fla/ops/nsa/parallel.py` (`parallel_nsa_fwd_kernel`: the `NK` grid axis, the — at `49b00f0a94`, before 2025-07-01
  `o = torch.empty(NK, ...)` partials and `o = o.sum(0)` removed, commit 9930c972 "[NSA] Delete parallel
  along k dim", 2025-02-21)
- flash-linear-attention `fla/ops/common/chunk_o.py` (`chunk_fwd_kernel_o`: `for i_k in range(tl.cdiv(K, BK))` — at `49b00f0a94`, before 2025-07-01
  inside the program; `chunk_bwd_kernel_dqkwg`: still `grid = (NK, NT, B * H)` and `dg = dg.sum(0)`, v0.2.2)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.patterns import loops_where
from skel.skeletons.predicates.loops import loop_carried
from skel.skeletons.predicates.names import IDENT, TILE_NAME
from skel.skeletons.predicates.partials import HOST_MERGED_PARTIALS, TOKEN_PARALLEL_GRID

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts, Loop


def _reduction_block_loop(lp: Loop, k: KernelFacts) -> bool:
    """A loop over blocks of a dimension (`range(tl.cdiv(K, BK))`, `range(0, K, BK)`) that
    carries a `tl.dot` accumulator: the contraction runs inside the program. (Row kernels
    looping `tl.sum` over column blocks are not counted: they never had a split axis.)"""
    tiles = {p.name for p in k.params if p.constexpr and TILE_NAME.fullmatch(p.name)}
    if not set(IDENT.findall(" ".join(lp.args))) & tiles:
        return False
    carried = loop_carried(k, lp)
    return any(lp.line <= a.line <= lp.end_line and "tl.dot" in a.calls and set(a.targets) & set(carried)
               for a in k.assigns) or any(c.name == "tl.dot" and lp.line <= c.line <= lp.end_line
                                          and c.target in carried for c in k.calls)


REDUCTION_BLOCK_LOOP = loops_where(
    where=_reduction_block_loop, name="reduction-block-loop",
    describe="a loop over blocks of the contraction dimension carrying a `tl.dot` accumulator")

SKELETON = Skeleton(
    id="in-kernel-reduction",
    title="In-kernel reduction loop instead of a split axis + host sum",
    summary="Loop over the split dimension in one program and store once, not an NK grid axis + partials + host .sum(0).",
    category=Category.DECOMPOSITION,
    doc=__doc__,
    present=REDUCTION_BLOCK_LOOP & ~HOST_MERGED_PARTIALS,
    preconditions=[HOST_MERGED_PARTIALS, TOKEN_PARALLEL_GRID],
    subject=HOST_MERGED_PARTIALS,
    env=Env(),
    helps=("memory", "latency"),
)
