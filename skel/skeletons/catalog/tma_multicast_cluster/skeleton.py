"""Share a GEMM's operand tiles across a thread-block cluster with TMA multicast (sm_90+).

## What it does
Launches the GEMM in clusters of 2 (or more) CTAs whose output tiles share a row block of
A (or a column block of B), and loads that shared operand once per cluster: the CTA that
owns a slice issues one TMA copy with a CTA mask (`cp.async.bulk.tensor...multicast::cluster`,
CuTe's `SM90_TMA_LOAD_MULTICAST_2D::copy(desc, mbar, mcast_mask, ...)`), and the hardware
writes the tile into the shared memory of every CTA in the mask, completing the
transaction bytes on each CTA's own mbarrier. The consumers release a stage on the
mbarriers of *all* CTAs that wrote into it (`mbarrier.arrive.shared::cluster` to each
peer), and the cluster is set at launch (`__cluster_dims__(2, 1, 1)` or
`cudaLaunchAttributeClusterDimension` with `cudaLaunchKernelEx`):

    // before: every CTA loads its own copy of the B tile
    tma_load_2d(&desc_b, full_bar, smem_b[stage], k0, n0);
    // after: each of the 2 CTAs of the cluster loads half and multicasts it to both
    if (cta_rank == 0) tma_load_2d_multicast(&desc_b, full_bar, smem_b[stage], k0, n0, 0b11);

## Why it is faster
Two CTAs computing vertically adjacent output tiles read the same B tile from L2 for
every K step. With multicast the tile crosses the L2→SM interconnect once per cluster
instead of once per CTA, so the shared operand's L2 traffic halves (for a cluster of 2)
and the TMA units issue fewer copies. On H800/H100 FP8 GEMMs, where a 128×128 tile
step moves 32 KiB per operand, the L2 bandwidth saved is what lets the tensor cores stay
fed at large N; DeepGEMM enables it whenever the block count along the shared dimension
pairs up.

## Applies when
- a GEMM-like kernel (tensor-core MMAs: `wgmma`, `mma.sync`, WMMA) loads operand tiles
  into shared memory inside its K loop — already with TMA (then multicast is a local
  change), or with `cp.async`/plain loads (then it comes with moving the loads to TMA);
- the grid has several CTAs along M or N that read the same operand tile (any GEMM
  with more than one block row or column);
- the target is Hopper (sm_90/sm_90a) or newer: clusters and multicast TMA do not
  exist before sm_90.

## Does not apply when
- the kernel is not GEMM-like: an elementwise, reduction or copy kernel has no operand
  that neighbouring CTAs share (a bulk TMA row load into a reduction is not a match);
- operands go straight from global memory to registers (GEMV, tiny-M decode GEMMs with
  `mma.sync` on `ldg` fragments): nothing is staged in shared memory to multicast;
- the block count along the shared dimension is odd or data-dependent (grouped/masked
  MoE layouts where the paired CTA belongs to another group): the paired CTA would
  receive the wrong tile — guard it as DeepGEMM's `Scheduler::is_tma_multicast_valid`
  does, and fall back to per-CTA loads;
- the cluster cannot be co-scheduled: clusters need all their CTAs resident at once on
  one GPC; large shared-memory footprints per CTA limit cluster sizes above 2;
- pre-Hopper GPUs and AMD GPUs.

## References
- DeepGEMM (commit 54e2261) `deep_gemm/include/deep_gemm/common/tma_copy.cuh` (`tma::copy`: `cute::SM90_TMA_LOAD_MULTICAST_2D::copy` with mask `(1 << num_tma_multicast) - 1`, issued by `block_rank_in_cluster() == 0`)
- DeepGEMM (commit 54e2261) `deep_gemm/include/deep_gemm/impls/sm90_fp8_gemm_1d2d.cuh` (`sm90_fp8_gemm_1d2d_impl`: `kNumTMAMulticast`, `kIsTMAMulticastOnA`, empty barriers arrived on every peer CTA)
- DeepGEMM (commit 54e2261) `deep_gemm/include/deep_gemm/scheduler/gemm.cuh` (`Scheduler::is_tma_multicast_valid`) and `csrc/jit/handle.hpp` (`cudaLaunchAttributeClusterDimension`)
- CUTLASS `include/cute/arch/copy_sm90_tma.hpp` (`SM90_TMA_LOAD_MULTICAST_2D`: the `cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster` instruction)
- PTX ISA, "Data Movement and Conversion Instructions: cp.async.bulk.tensor" (`.multicast::cluster`, `ctaMask`) and CUDA C++ Programming Guide, "Thread Block Clusters" (`__cluster_dims__`)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import custom, uses_name
from skel.skeletons.patterns import calls_where
from skel.skeletons.predicates.cuda_gemm import enclosing_loops, is_ptx, mma_calls, smem_tile_loads_in_loop

if TYPE_CHECKING:
    from skel.kernels.model import Call, KernelFacts

#: a multicast copy by name: CuTe's atoms (`SM90_TMA_LOAD_MULTICAST_2D`, Blackwell's 2-CTA
#: `SM100_TMA_2SM_LOAD_2D`) or a helper named for it (`tma_load_multicast`, `copy_multicast`);
#: not a query such as the scheduler's `is_tma_multicast_valid`
_MULTICAST_COPY = re.compile(r"(?i)^SM\d+_TMA_(LOAD_MULTICAST|2SM_LOAD)\w*$|^(tma|cp_async_bulk|bulk)\w*_multicast\w*$|"
                             r"^\w*(load|copy)_multicast\w*$")


def _multicast_copy(c: Call, k: KernelFacts) -> bool:
    """A multicast TMA copy: the PTX `.multicast::cluster` form, a CuTe multicast atom, or
    a helper named for it (`tma_load_multicast`)."""
    if is_ptx(c.name):
        return "multicast::cluster" in c.name and c.name.startswith("ptx:cp.async.bulk")
    return any(_MULTICAST_COPY.match(p) for p in c.name.lstrip(".").split("::"))


def _smem_tile_loads_in_loop(k: KernelFacts) -> list[int]:
    """TMA, `cp.async` or plain shared-memory stores of tiles inside a loop."""
    return smem_tile_loads_in_loop(k)


def _mma_in_loop(k: KernelFacts) -> list[int]:
    return [c.line for c in mma_calls(k, ("wgmma", "mma.sync", "umma", "cute")) if enclosing_loops(k, c.line)]


MULTICAST_COPY = calls_where(where=_multicast_copy, name="multicast-tma-copy",
                             describe="a multicast TMA copy (`.multicast::cluster`, `SM90_TMA_LOAD_MULTICAST`)")
# `mcast` only as its own word part (`mcast_mask`, `kNumMcast`): `kNumCastStages` is not one
MULTICAST_CONFIG = uses_name(r"(\w+::)*\w*((?i:multicast)|(?<![A-Za-z])mcast|Mcast|MCast)\w*", name="multicast-name",
                             describe="a multicast count or CTA mask (`kNumTMAMulticast`, `mcast_mask`)")
SMEM_TILE_LOADS = custom(
    "smem-tile-loads-in-loop",
    "operand tiles loaded into shared memory inside a loop (TMA, `cp.async` or plain stores)",
    _smem_tile_loads_in_loop)
MMA_IN_LOOP = custom("tensor-core-mma-in-loop", "a tensor-core MMA (`wgmma`, `mma.sync`, WMMA) inside a loop",
                     _mma_in_loop)

SKELETON = Skeleton(
    id="tma-multicast-cluster",
    title="TMA multicast across a thread-block cluster",
    summary="Launch the GEMM in 2-CTA clusters and TMA-multicast the operand tile both CTAs share (sm_90+).",
    category=Category.MEMORY,
    doc=__doc__,
    ruled_out_by=(r"\bmulticast\b", r"\bclusters?\b", r"__cluster_dims__"),
    present=MULTICAST_COPY | MULTICAST_CONFIG,
    preconditions=[MMA_IN_LOOP, SMEM_TILE_LOADS],
    subject=MMA_IN_LOOP,
    env=Env(backends=("cuda",), min_cc=90),
    helps=("memory",),
    languages=("cuda",),
)
