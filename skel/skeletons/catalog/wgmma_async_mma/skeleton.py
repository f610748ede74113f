"""Replace warp-level `mma.sync` / WMMA with Hopper's asynchronous warpgroup MMA (WGMMA) on sm_90a.

## What it does
Rewrites the inner product of a tensor-core mainloop from per-warp `mma.sync.aligned.m16n8k16`
(or `nvcuda::wmma::mma_sync`) fed by `ldmatrix` into `wgmma.mma_async`: four warps (a
warpgroup, 128 threads) issue one `m64nNk16` (BF16/FP16), `m64nNk32` (FP8) or `m64nNk8`
(TF32) instruction whose operands are read straight from shared memory through 64-bit
matrix descriptors (start address, leading/stride byte offsets, swizzle mode), with the
accumulator in registers. The instructions are asynchronous, so the loop becomes a
fence / issue / commit / wait protocol:

    warpgroup_arrive();                                   // wgmma.fence.sync.aligned
    for (int k = 0; k < BLOCK_K / 16; ++k)
        wgmma_m64n128k16_bf16(acc, desc_a + k * 2, desc_b + k * 2);   // wgmma.mma_async
    warpgroup_commit_batch();                             // wgmma.commit_group.sync.aligned
    warpgroup_wait<0>();                                  // wgmma.wait_group.sync.aligned 0

## Why it is faster
On H100/H200, `mma.sync` reaches only about two thirds of the tensor cores' peak: each
warp must first move its fragments from shared memory into registers (`ldmatrix`), and
every instruction is synchronous, so register traffic and issue slots sit between MMAs.
WGMMA reads A and B from shared memory itself, covers a 64×N tile per instruction (N up to
256), and runs asynchronously — the warpgroup can wait on the next stage's barrier or
rescale the previous results while the tensor cores work (`wait_group<1>` keeps one batch
in flight). It is the only way to reach the dense FP8/BF16 peak on Hopper: CUTLASS's sm90
collectives, FlashAttention-3 and DeepGEMM are written on it.

## Applies when
- a K loop issues `mma.sync` (PTX) or WMMA `mma_sync` on FP16, BF16, TF32, FP8 (e4m3/e5m2)
  or INT8 operands staged in shared memory;
- the block has at least one full warpgroup (128 threads) to issue each WGMMA;
- the target is Hopper, compiled for `sm_90a` (the `a` suffix: WGMMA is an
  architecture-specific feature).

## Does not apply when
- the MMAs are FP64 (`mma.sync...f64`, DMMA), FP4/FP6 (`e2m1`), INT4 or block-scaled
  (`kind::mxf4nvf4.block_scale`, sm_120): WGMMA has no form for them;
- operands go from global memory straight to registers (GEMV-like skinny kernels): B must
  be in shared memory for WGMMA, so the tile has to be staged first;
- the block is a single warp or two (`__launch_bounds__(32)`, `(64)`): a warpgroup needs
  four warps executing the instruction together;
- the target is Blackwell (sm_100+), where WGMMA is gone: the equivalent there is
  `tcgen05.mma` (UMMA) with tensor-memory accumulators; or Ada/Ampere (sm_8x), which have
  `mma.sync` only; or AMD GPUs (MFMA);
- the shared-memory layout cannot take a WGMMA-canonical swizzle (32/64/128-byte) without
  a bigger rewrite — the descriptors only describe those layouts.

## References
- DeepGEMM (commit 54e2261) `deep_gemm/include/deep_gemm/ptx/wgmma.cuh` (`warpgroup_arrive`, `warpgroup_commit_batch`, `warpgroup_wait<N>`: the fence/commit/wait PTX)
- DeepGEMM (commit 54e2261) `deep_gemm/include/deep_gemm/mma/sm90.cuh` (`FP8MMASelector`, `BF16MMASelector`: `cute::SM90::GMMA::MMA_64xNx32_F32E4M3E4M3_SS_TN` atoms, `make_smem_desc`)
- DeepGEMM (commit 54e2261) `deep_gemm/include/deep_gemm/impls/sm90_bf16_gemm.cuh` (`sm90_bf16_gemm_impl`: the issue loop over `BLOCK_K / WGMMA::K`)
- CUTLASS `include/cute/arch/mma_sm90_gmma.hpp` (`SM90_64x128x16_F32BF16BF16_SS`: the `wgmma.mma_async` instructions) and `include/cute/arch/mma_sm90_desc.hpp` (`GmmaDescriptor`)
- PTX ISA, "Warpgroup Level Matrix Multiply-Accumulate Instructions" (`wgmma.mma_async`, `wgmma.fence`, `wgmma.commit_group`, `wgmma.wait_group`, matrix descriptors)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.patterns import decorators
from skel.skeletons.predicates.cuda_gemm import (cp_async_loads, mma_calls, mma_in_k_loop, shared_arrays, tma_loads,
                                                 wgmma_names, wgmma_protocol)

if TYPE_CHECKING:
    from skel.kernels.model import Decorator, KernelFacts

_INT = re.compile(r"^\s*(\d+)\s*$")


def _wgmma_used(k: KernelFacts) -> list[int] | None:
    lines = [c.line for c in mma_calls(k, ("wgmma", "umma"))] + wgmma_protocol(k) + wgmma_names(k)
    return lines or None


#: operand types and modes `wgmma.mma_async` has no form for: FP64 (DMMA), FP4/FP6
#: (`e2m1`, `e3m2`, `e2m3`), 4-bit integers, and block-scaled MMAs (`kind::mxf8f6f4`,
#: `.block_scale`: sm_100/sm_120 instructions)
_NO_WGMMA_FORM = re.compile(r"\.f64\b|\.e2m1\b|\.e3m2\b|\.e2m3\b|\.[su]4\b|block_scale|kind::mx")


def _mma_without_wgmma_form(k: KernelFacts) -> list[int] | None:
    """An MMA WGMMA cannot express: `mma.sync ... .f64` (DMMA), FP4/FP6 or INT4 operands,
    block-scaled `kind::mxf4nvf4`; or WMMA fragments of `double`."""
    lines = [c.line for c in k.calls if c.name.startswith("ptx:mma.") and _NO_WGMMA_FORM.search(c.name)]
    lines += [k.names.get(v, k.line_start) for v, t in (getattr(k, "var_types", None) or {}).items()
              if "fragment" in t and re.search(r"\bdouble\b", t)]
    return lines or None


def _below_warpgroup(d: Decorator, k: KernelFacts) -> bool:
    """`__launch_bounds__(N)` with a literal N below one warpgroup (128 threads)."""
    m = _INT.match(d.list_items[0]) if d.list_items else None
    return m is not None and int(m.group(1)) < 128


def _mma_sync_in_k_loop(k: KernelFacts) -> list[int]:
    return mma_in_k_loop(k, ("mma.sync",))


def _smem_operands(k: KernelFacts) -> list[int] | None:
    """Operand tiles staged in shared memory: `__shared__` arrays, dynamic shared memory,
    `ldmatrix`, or asynchronous copies into shared memory."""
    lines = [c.line for c in k.calls if c.name.startswith("ptx:ldmatrix")]
    lines += [k.names[n] for n in ("__shared__", "extern __shared__") if n in k.names]
    lines += cp_async_loads(k) + tma_loads(k)
    if not lines:
        lines = [k.names[a] for a in shared_arrays(k) if a in k.names]
    return lines or None


WGMMA_USED = custom("wgmma", "WGMMA / UMMA already (`wgmma.mma_async`, `warpgroup_arrive`, `SM90_64x..._SS` atoms)",
                    _wgmma_used)
MMA_SYNC_IN_K_LOOP = custom("mma-sync-in-k-loop", "warp-level `mma.sync` / WMMA `mma_sync` inside the K loop",
                            _mma_sync_in_k_loop)
NO_WGMMA_FORM = custom("mma-without-wgmma-form",
                       "an MMA type WGMMA lacks (FP64, FP4/FP6, INT4, block-scaled `kind::mx*`)",
                       _mma_without_wgmma_form)
SMALL_BLOCK = decorators("__launch_bounds__", where=_below_warpgroup, name="block-below-warpgroup",
                         describe="a block smaller than a warpgroup (`__launch_bounds__` below 128)")
SMEM_OPERANDS = custom("smem-operands", "MMA operands staged in shared memory (`__shared__` tiles, `ldmatrix`)",
                       _smem_operands)

SKELETON = Skeleton(
    id="wgmma-async-mma",
    title="WGMMA: asynchronous warpgroup MMA instead of mma.sync / WMMA",
    summary="Issue wgmma.mma_async from shared-memory descriptors (fence/commit/wait) instead of mma.sync on sm_90a.",
    category=Category.ARITHMETIC,
    doc=__doc__,
    ruled_out_by=(r"\bwgmma\b", r"warp[\s_-]*group[\s_-]*mma", r"\bGMMA\b"),
    present=WGMMA_USED,
    preconditions=[MMA_SYNC_IN_K_LOOP, SMEM_OPERANDS, ~NO_WGMMA_FORM, ~SMALL_BLOCK],
    subject=MMA_SYNC_IN_K_LOOP,
    env=Env(backends=("cuda",), min_cc=90, max_cc=90),
    helps=("compute",),
    languages=("cuda",),
)
