"""Load 2-D tiles through block pointers instead of hand-built offset grids and masks.

## What it does
Replaces a tile load written as `ptr + offs_m[:, None] * stride_m + offs_n[None, :]`
with a mask built from the same offsets by a block pointer:
`p = tl.make_block_ptr(base, shape=(M, N), strides=(stride_m, 1), offsets=(m0, n0),
block_shape=(BM, BN), order=(1, 0))` and `tl.load(p, boundary_check=(0, 1))`.
Inside a loop the pointer moves with `p = tl.advance(p, (0, BN))` instead of rebuilding
the offset grid every iteration.

## Why it is faster
The compiler receives the tile's shape, strides, order and bounds as one object instead
of inferring them from integer arithmetic on a `[BM, BN]` grid of addresses. That lets
it prove contiguity and alignment for vectorized (128-bit) accesses, keeps the
per-element address and mask computation out of registers, and on Hopper lets Triton
lower suitable loads to TMA copies. Boundary checks happen per dimension, not per
element. The gain is usually modest on its own; the larger benefit is simpler masking
that the compiler cannot misread.

## Applies when
- a kernel loads 2-D tiles with manual offsets (`[:, None]` / `[None, :]` broadcast
  grids) and a bounds `mask=`, inside a `range`/`tl.range` loop, and the tile *walks*:
  the address is rebuilt from the loop index each iteration, moving by a constant step
  (`rk = k0 + tl.arange(0, BK)`, `o_t = i_t * BT + tl.arange(0, BT)`), and a tile-level
  bound in the mask moves with it (`rk[None, :] < K`, `o_t < T`). That is exactly what
  `tl.advance` plus `boundary_check` replace;
- the target runs Triton < 3.7, and the tile is a plain strided window of the tensor.

## Does not apply when
- Triton >= 3.7: Triton 3.7.1 warns "tl.make_block_ptr is deprecated"
  (triton-lang/triton#9667; seen when running this skeleton's example), and 3.9 removed
  block pointers "in favor of the tensor descriptor API" (triton-lang/triton#10833); use
  the `tma-tensor-descriptors` skeleton instead. (vLLM 0.33 has no `tl.make_block_ptr`
  left: its copies of flash-linear-attention kernels were ported off them.) With the
  version unknown the skeleton is still suggested, with that caveat;
- the rows or columns are gathered through an index tensor (no single stride), or the
  step is data-dependent or not affine (offsets loaded in the loop, paged KV, a
  grid-stride walk over flattened tiles via `block_idx // grid_n`, `% grid_n`);
- the tile does not move: the load's address and mask are loop-invariant (a reload of
  the same tile) — that is a hoisting case (`hoist-loop-invariant`);
- only a scalar base moves (`(bos + i) * stride + o_g[:, None] * K + o_d[None, :]`) while
  the offset grid and the mask stay fixed: the compiler already hoists the grid and the
  mask, so `tl.advance` has no per-iteration offset math or moving bound to replace;
  again a hoisting (or `incremental-pointer-advance`) question, not a block-pointer one;
- the pointers are already stepped in the loop (`ptrs += BK * stride`,
  `p = tl.advance(...)`): the address is strength-reduced and only the mask would change;
- `tl.static_range` loops (fully unrolled: every address folds to a constant offset) and
  guard loops that run at most once (`range(0, flag, 1)`);
- the mask is not a bounds check (causal or data-dependent masks still need `tl.where`);
- loads are 1-D rows: a `tl.arange` plus a mask is already as simple as it gets.

## References
- Triton tutorials `python/tutorials/06-fused-attention.py` (`_attn_fwd`)
- flash-linear-attention `fla/ops/gla/chunk.py` (`chunk_gla_fwd_kernel_o`: `tl.make_block_ptr` tiles loaded with `boundary_check=(0, 1)`) — at `49b00f0a94`, before 2025-07-01
- flash-linear-attention `fla/ops/gla/fused_chunk.py` (`fused_chunk_gla_fwd_kernel`: block pointers walked over T with `tl.advance(p_q, (BT, 0))`) — at `49b00f0a94`, before 2025-07-01
- Triton API: `triton.language.make_block_ptr`, `triton.language.advance`
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, KnownBad, Skeleton
from skel.skeletons.conditions import calls
from skel.skeletons.patterns import addresses, calls_where
from skel.skeletons.predicates.addresses import (BLOCK_PTR_HELPER, bounds_mask, gathered_address, is_vector_expr,
                                                 manual_2d_address)
from skel.skeletons.predicates.loops import (affine_in_loop, at_most_one_trip, conjuncts, depends_on_loop,
                                             stepped_in_loop)

if TYPE_CHECKING:
    from skel.kernels.flow import CallInfo, Flow, Node
    from skel.kernels.model import Call, KernelFacts

# ---------------------------------------------------------------------------------------
# the skeleton
# ---------------------------------------------------------------------------------------


def _walking_tile_load(fl: Flow, c: CallInfo, addr: Node, k: KernelFacts) -> bool:
    """A masked 2-D tile load whose window walks with the loop: the address moves by a
    constant step per iteration and the bounds mask moves with it (a tile-level bound,
    `(k0 + rk)[None, :] < K`, `o_t < T`), rebuilt every iteration rather than stepped."""
    mask = c.arg(1, "mask")
    if not c.in_loop or mask is None:
        return False
    loop = c.loops[-1]
    if loop.kind in ("while", "tl.static_range") or at_most_one_trip(fl, k, loop):
        return False
    if not (manual_2d_address(fl, addr) and bounds_mask(fl, mask)) or gathered_address(fl, addr):
        return False
    if not (depends_on_loop(fl, addr, loop) and affine_in_loop(fl, addr, loop)):
        return False  # the tile does not move (a hoisting case) or moves by a data-dependent step
    if stepped_in_loop(fl, addr, loop):
        return False  # already strength-reduced (`ptrs += BK * stride`): only the mask is left
    # only a scalar base moving with fixed bounds is no case: hoist the grid instead
    return any(depends_on_loop(fl, m, loop) and is_vector_expr(fl, m) for m in conjuncts(fl, mask))


def _not_triton(c: Call, k: KernelFacts) -> bool:
    """A call of the kernel's own helpers, not of `tl.*`."""
    return not c.name.startswith("tl.")


BLOCK_PTR_USED = calls("tl.make_block_ptr", "tl.advance", name="block-ptr",
                       describe="`tl.make_block_ptr` / `tl.advance`") | calls_where(
    like=BLOCK_PTR_HELPER, where=_not_triton, name="block-ptr-helper",
    describe="a helper returning a block pointer (`*_block_ptr(...)`)")
MASKED_MANUAL_TILE_LOAD_IN_LOOP = addresses(
    of=("tl.load",), kernel_where=_walking_tile_load, name="walking-masked-2d-tile-load",
    describe="a 2-D tile `tl.load` with manual `[:, None]`/`[None, :]` offsets and a bounds mask, both rebuilt"
             " from the loop index each iteration (the tile walks by a constant step; no gather, no `+=`)")

SKELETON = Skeleton(
    id="block-pointers",
    title="Block pointers for 2-D tiles",
    summary="Load 2-D tiles via tl.make_block_ptr + tl.advance + boundary_check instead of offset grids and masks.",
    category=Category.MEMORY,
    doc=__doc__,
    ruled_out_by=(r"\bblock[\s_-]?ptrs?\b", r"\bblock[\s_-]pointers?\b", r"make_block_ptr"),
    present=BLOCK_PTR_USED,
    preconditions=[MASKED_MANUAL_TILE_LOAD_IN_LOOP],
    subject=MASKED_MANUAL_TILE_LOAD_IN_LOOP,
    # deprecated from 3.7 (it warns), removed in 3.9: not advice for a current Triton
    env=Env(triton="<3.7", known_bad=(
        KnownBad("block pointers are deprecated from Triton 3.7 (`tl.make_block_ptr` warns) and were removed in "
                 "3.9, in favour of tensor descriptors", triton=">=3.7"),)),
    helps=("memory",),
)
