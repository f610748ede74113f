"""Advance tile pointers by a constant each iteration instead of rebuilding them from the base.

## What it does
Builds the tile's pointer grid once before the loop and moves it by a constant stride
each iteration — `a_ptrs += BLOCK_K * stride_ak`, `b_ptrs += BLOCK_K * stride_bk`, or
`p = tl.advance(p, (0, BLOCK_K))` for block pointers — instead of recomputing
`base + rows[:, None] * stride_m + (k * BLOCK_K + cols)[None, :] * stride_k` from the loop
index every time (strength reduction).

## Why it is faster
Rebuilding a `[BM, BK]` address grid costs integer multiplies and adds per element per
iteration (64-bit when offsets are promoted), and keeps the index vectors alive in
registers. An increment is one vector add, and the loop-invariant part is computed once.
Triton's loop-invariant code motion often hoists much of the recomputation already, so
the measured gain is usually small; it matters most in long K loops of small tiles, where
address arithmetic competes with the loads and MMAs for issue slots.

## Applies when
- inside a `range`/`tl.range` loop that runs `tl.dot` (a K loop or a chunk loop), a 2-D
  tile load's address is recomputed from the loop index (`k * BLOCK_K + offs`,
  `i_t * BT + o_t`) each iteration — in memory-bound loops without MMAs the address math
  hides behind the loads, and a loop of a few constexpr steps (`range(tl.cdiv(K, BK))`
  with constexpr K) rebuilds its addresses only a handful of times;
- the step between iterations is a constant stride (a plain strided walk, no gather).

## Does not apply when
- the only tile loops run over a LoRA rank (one to four iterations): the address grid is
  rebuilt a few times per program, nothing worth stepping;
- the address goes through an index loaded from memory (paged KV caches, MoE token
  lists): the step is not constant;
- `tl.static_range` loops: fully unrolled, the addresses fold to constants;
- the address is a block pointer recreated each iteration
  (`tl.make_block_ptr(..., (i_t * BT, 0), ...)`): that is a handful of scalar ops per
  iteration, the block-pointer load builds the same address grid whether the pointer
  was recreated or advanced, so `tl.advance` saves no per-element math;
- guard loops that run at most once (`range(0, flag, 1)`);
- the loop is not affine in the index (reverse or strided schedules are fine with a
  negative or larger constant step; data-dependent skips are not);
- Hopper fp16 GEMMs that Triton pipelines (this skeleton's example, 128x256x64 tiles,
  8 warps, 3 stages, Triton 3.6 on an H200): stepping the pointers ran 4-9% *slower*
  than rebuilding the grids, which Triton hoists and keeps in 32 bits, while stepped
  pointer tensors are loop-carried 64-bit registers — measure before keeping it;
- readability or portability matters more than a few integer ops: addresses rebuilt
  from the loop index keep every iteration self-contained — this is not a universal win.

## References
- Triton tutorials `python/tutorials/03-matrix-multiplication.py` (`matmul_kernel`: `a_ptrs += BLOCK_SIZE_K * stride_ak`)
- Triton (history) `python/triton/ops/flash_attention.py` (`_fwd_kernel`)
- Triton tutorials `python/tutorials/06-fused-attention.py` (`_attn_fwd_inner`: `tl.advance`)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.kernels.flow import binary, broadcast_axes, flow_of, has_call, name_of, names_in, operands
from skel.skeletons.predicates.addresses import gathered_address, is_block_ptr_address
from skel.skeletons.predicates.loops import RANK_LOOPS, at_most_one_trip, runtime_trip_count
from skel.skeletons.conditions import custom
from skel.skeletons.patterns import addresses

if TYPE_CHECKING:
    from skel.kernels.flow import CallInfo, Flow, Node
    from skel.kernels.model import KernelFacts

_LOOPS = ("range", "tl.range")


def _advanced_in_loop(k: KernelFacts) -> list[int]:
    """Pointers (or offsets used directly in an address) stepped by `+=`/`-=` or
    `p = p + step` inside a `for` loop, and `tl.advance` inside a loop: the flow's calls
    and definitions, read against the names of every address."""
    fl = flow_of(k)
    address_names: set[str] = set()
    for c in fl.named("tl.load", "tl.store"):
        addr = c.arg(0, "pointer")
        if addr is not None:
            address_names |= names_in(addr)
    lines = [c.line for c in fl.named("tl.advance") if c.loops]
    for name, defs in fl.defs.items():
        if name not in address_names:
            continue
        for d in defs:
            if not d.loops or d.loops[-1].kind == "while":
                continue
            stepped = d.op in ("+=", "-=") or (
                d.op == "=" and binary(d.value, "+", "-") and name_of(operands(d.value)[0]) == name)
            if stepped:
                lines.append(d.line)
    return lines


def _recomputed_tile_address(fl: Flow, c: CallInfo, addr: Node, k: KernelFacts) -> bool:
    """A 2-D tile address rebuilt from the loop index in a runtime-length `range` loop that
    runs `tl.dot`."""
    if not c.loops or c.loops[-1].kind not in _LOOPS:
        return False
    loop = c.loops[-1]
    if not any(loop.holds(d.line) for d in fl.named("tl.dot")):
        return False  # memory-bound loops hide address math behind the loads
    if not runtime_trip_count(fl, k, loop) or at_most_one_trip(fl, k, loop):
        return False  # a few constexpr steps: the rebuilt addresses cost next to nothing
    if is_block_ptr_address(fl, addr):
        # a `tl.make_block_ptr(..., offsets=(i * BT, 0), ...)` rebuilt each iteration is
        # scalar offset work: the load builds the same address grid either way, so
        # `tl.advance` saves no per-element integer math
        return False
    names, exprs = fl.closure(addr, within=loop)
    if has_call(exprs, "tl.load"):
        return False  # the step depends on data read in the loop (page tables, token lists)
    return bool(names & loop.targets) and broadcast_axes(exprs) == {"col", "row"} \
        and not gathered_address(fl, addr)


POINTER_ADVANCED_IN_LOOP = custom(
    "pointer-advanced-in-loop",
    "an address stepped in a loop (`ptrs += BLOCK * stride`, `p = tl.advance(p, ...)`)",
    _advanced_in_loop)
TILE_ADDRESS_RECOMPUTED = addresses(
    of=("tl.load", "tl.store"), kernel_where=_recomputed_tile_address, name="tile-address-recomputed-from-index",
    describe="a 2-D tile address rebuilt from the loop index in every iteration of a runtime-length `range` loop"
    " that runs `tl.dot`")

SKELETON = Skeleton(
    id="incremental-pointer-advance",
    title="Advance pointers incrementally in loops",
    summary="Step tile pointers by a constant per iteration (ptrs += BK * stride, tl.advance), not rebuild them.",
    category=Category.MEMORY,
    doc=__doc__,
    present=POINTER_ADVANCED_IN_LOOP,
    preconditions=[TILE_ADDRESS_RECOMPUTED, ~RANK_LOOPS],
    subject=TILE_ADDRESS_RECOMPUTED,
    env=Env(),
    helps=("latency",),
)
