"""Persistent CUDA GEMM: one CTA per SM loops over output tiles in an L2-friendly (grouped) order.

## What it does
A tiled GEMM-like kernel launched with one CTA per output tile (`grid = (N/BN, M/BM)`,
`blockIdx.x`/`blockIdx.y` pick the tile) becomes a persistent kernel: the host launches
about one CTA per SM (`cudaDevAttrMultiProcessorCount`, or a small multiple), and each CTA
loops over tiles with a stride of the grid size:

    for (int tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
        // grouped (swizzled) rasterisation: GROUP_M tile rows walked column by column
        const int first_m = (tile / (GROUP_M * tiles_n)) * GROUP_M;
        const int rows    = min(tiles_m - first_m, GROUP_M);
        const int tm = first_m + (tile % (GROUP_M * tiles_n)) % rows;
        const int tn = (tile % (GROUP_M * tiles_n)) / rows;
        ...the old body, with (tm, tn) in place of (blockIdx.y, blockIdx.x)...
    }

Larger kernels put this in a scheduler object (`while (scheduler.get_next_block(m, n))`)
that also handles grouped/masked layouts and multicast pairing.

## Why it is faster
- No tail wave and no per-CTA launch/prologue cost: with T tiles and S SMs the last wave of a
  one-CTA-per-tile grid is `T mod S` CTAs long; a persistent grid keeps every SM busy until
  the tiles run out and pays CTA setup (barrier init, descriptor prefetch, smem carve-up) once.
- The epilogue of one tile can overlap the main loop of the next (with warp specialisation
  or async TMA stores), which a CTA that exits after its tile cannot do.
- Tile order decides L2 reuse: the CTAs resident at one moment read A row-panels and B
  column-panels; walking `GROUP_M` tile rows column by column makes those CTAs form a square
  patch, so each panel comes from HBM once and from L2 for the rest of the group. Row-major
  order (`tm = tile / tiles_n`) streams all of B per row of tiles.

## Applies when
- the kernel is a tiled GEMM-like `__global__` kernel: tensor-core MMAs (wmma, `mma.sync`,
  wgmma, CuTe atoms) or a shared-memory K loop with multiply-accumulate and barriers;
- its grid has one CTA per output tile: `blockIdx.x` and `blockIdx.y` pick the tile, or
  `blockIdx.x` is split into tile row and column with `/` and `%`;
- there is no tile loop yet (no stride of `gridDim.x`/SM count, no tile scheduler);
- the GEMM has many more tiles than SMs, or tile counts that leave a ragged last wave.

## Does not apply when
- the output has about as many tiles as SMs or fewer: every CTA already runs in one wave;
- the kernel is not a GEMM (transposes, reductions, element-wise): no K loop whose operands
  neighbouring tiles could share, and a grid-stride row loop is a different skeleton;
- per-tile state is hard to reset between tiles (mbarrier phases, smem pipelines that assume
  a fresh CTA): the loop has to carry stage/phase counters across tiles, as DeepGEMM does;
- split-K or stream-K decompositions that already balance work differently; MoE/grouped GEMMs
  need a scheduler that walks the groups (a plain stride over `M/BM * N/BN` is wrong there).
Already persistent but walking tiles in row-major order, the skeleton is suggested as a
refinement: add the grouped order (or a scheduler that swizzles).

## References
- DeepGEMM `deep_gemm/include/deep_gemm/scheduler/gemm.cuh` (`Scheduler::get_next_block`, `get_swizzled_block_idx`, `kNum1DBlocksPerGroup`)
- DeepGEMM `deep_gemm/include/deep_gemm/impls/sm90_fp8_gemm_1d1d.cuh` (`sm90_fp8_gemm_1d1d_impl`: `while (scheduler.get_next_block(m_block_idx, n_block_idx))`)
- DeepGEMM `deep_gemm/include/deep_gemm/impls/sm100_bf16_gemm.cuh` (`sm100_bf16_gemm_impl`: the TMA, MMA and epilogue warps each walk the same `scheduler.get_next_block` sequence)
- Triton tutorial `09-persistent-matmul.py` (the Triton analogue: `NUM_SMS` programs, `GROUP_SIZE_M` order)
- CUDA C++ Programming Guide, "Hardware Implementation" / "Occupancy Calculator" (waves of CTAs over SMs)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.patterns import loops_where, unit
from skel.skeletons.predicates.cuda_tiles import (
    gemm_like_lines,
    one_cta_per_tile_lines,
    scheduler_call_lines,
    tile_loops,
)

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts, Loop

#: Names of a grouped / swizzled tile order: GROUP_M, group_size_m, tiles_in_group,
#: first_m, kNum1DBlocksPerGroup, get_swizzled_block_idx, raster_order ...
_GROUPED_NAME = re.compile(
    r"(?i)\w*swizzl\w*|\w*raster\w*|k?group_?(size_?)?[mn]\b|\w*(tiles|blocks|pids?)_?(in|per)_?group\w*|"
    r"num_?pid_?in_?group|first_(pid_)?m|kNum1DBlocksPerGroup")


def _grouped_order(k: KernelFacts) -> list[int] | None:
    """The tile order is grouped: a grouping/swizzle name in the kernel (or its helpers), or
    tiles handed out by a scheduler object whose order this kernel does not show."""
    lines = [line for n, line in k.names.items() if _GROUPED_NAME.fullmatch(n.split("::")[-1])]
    lines += [c.line for c in k.calls if re.search(r"(?i)swizzl|raster", c.name)]
    return sorted(set(lines)) or scheduler_call_lines(k) or None


def _gemm_like(k: KernelFacts) -> list[int]:
    """MMA lines, or a barrier-synchronised K loop over shared tiles (``gemm_like_lines``)."""
    return gemm_like_lines(k)


def _one_cta_per_tile(k: KernelFacts) -> list[int]:
    """Where the block index picks the output tile (``one_cta_per_tile_lines``)."""
    return one_cta_per_tile_lines(k)


def _persistent_gemm_loop(lp: Loop, k: KernelFacts) -> bool:
    """A persistent tile loop (``tile_loops``) whose body does the GEMM work (its MMAs or
    its K loop): a grid-stride loop over rows of a norm, or a helper's loop over MoE
    blocks, is not a persistent GEMM."""
    if not any(t is lp for t in tile_loops(k)):
        return False
    return any(lp.line <= w <= lp.end_line for w in gemm_like_lines(k))


KERNEL = unit("kernel", name="cuda-kernel", describe="a `__global__` kernel")
GEMM_LIKE = custom(
    "tiled-gemm-body",
    "a tiled GEMM-like body (tensor-core MMAs, or shared tiles feeding a multiply-accumulate K loop)",
    _gemm_like)
ONE_CTA_PER_TILE = custom(
    "one-cta-per-tile",
    "one CTA per output tile (`blockIdx.x`/`blockIdx.y`, or `blockIdx.x` split with `/` and `%`)",
    _one_cta_per_tile)
TILE_LOOP = loops_where(
    where=_persistent_gemm_loop, name="persistent-tile-loop",
    describe="a loop over GEMM tiles with a `gridDim.x`/SM-count stride, or a tile scheduler's `get_next_block`")
GROUPED_ORDER = custom(
    "grouped-tile-order",
    "a grouped (swizzled) tile order (`GROUP_M` tile rows walked column by column, or a tile scheduler)",
    _grouped_order)

SKELETON = Skeleton(
    id="persistent-tile-scheduler",
    title="Persistent CUDA GEMM with a grouped tile scheduler",
    summary="Launch one CTA per SM that loops over GEMM tiles (gridDim.x stride) in a grouped, L2-friendly order.",
    category=Category.DECOMPOSITION,
    doc=__doc__,
    ruled_out_by=(r"\bpersistent\b", r"tile scheduler"),
    present=TILE_LOOP,
    preconditions=[KERNEL, GEMM_LIKE, ONE_CTA_PER_TILE],
    subject=KERNEL,
    languages=("cuda",),
    env=Env(backends=("cuda",)),
    helps=("memory", "latency"),
    refine=[GROUPED_ORDER],
)
