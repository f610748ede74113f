"""TMA store epilogue: stage the output tile in shared memory and write it with one bulk tensor store.

## What it does
A tensor-core GEMM tile's epilogue usually has every thread write its accumulator fragment
straight to global memory (`C[row * ldc + col] = acc[i]`, `wmma::store_matrix_sync(C + ...)`).
The TMA epilogue instead:

    // 1. registers -> shared memory (converted to the output type; a swizzled layout avoids
    //    bank conflicts: stmatrix / st.shared)
    c_smem[r][c] = __float2bfloat16(acc[i]);
    // 2. make those generic-proxy writes visible to the async proxy the TMA reads with
    asm volatile("fence.proxy.async.shared::cta;");          // cute::tma_store_fence()
    __syncthreads();
    // 3. one thread issues the bulk tensor store of the whole box (coordinates, not pointers)
    if (threadIdx.x == 0) {
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" ...);
        asm volatile("cp.async.bulk.commit_group;");          // cute::tma_store_arrive()
        asm volatile("cp.async.bulk.wait_group.read 0;");     // cute::tma_store_wait<0>()
    }

The output's `CUtensorMap` is built on the host (`cuTensorMapEncodeTiled`) and passed as a
`const __grid_constant__ CUtensorMap` parameter. CUTLASS/CuTe spell it `SM90_TMA_STORE_2D::copy`
(`SM90_TMA_REDUCE_ADD_2D` to accumulate into the output).

## Why it is faster
- Per-thread fragment stores are narrow and scattered (each lane owns 2 adjacent values of a
  row in an mma layout), so a warp's store touches many 32-byte sectors partially; the TMA
  writes full lines of the box, with hardware address generation and bounds clipping, so
  there is no per-element index math or masking in registers.
- The store is asynchronous: the math warps go on (next tile of a persistent kernel, next
  stage of the pipeline) while the copy engine drains shared memory; only the reuse of the
  staging buffer waits (`wait_group.read`), not the whole write.
- Fewer registers for addressing and fewer instructions in the epilogue, which matters in a
  warp-specialised kernel whose math warps carry 200+ accumulator registers.
The gain is largest for large output tiles (128×128+) in bf16/fp8 output on Hopper/Blackwell;
for a small tile or a kernel dominated by its main loop it is a few percent at most.

## Applies when
- the kernel is a tensor-core GEMM-like `__global__` kernel (wmma, `mma.sync`, wgmma, tcgen05,
  CuTe MMA atoms) with shared-memory tiles;
- its epilogue writes the accumulators straight to an output pointer in global memory
  (`C[...] = ...`, `store_matrix_sync(C + ...)`, `st.global`) as a rectangular box of the
  output (row/column offsets computed from the tile index);
- target: NVIDIA sm_90+ (TMA), with a free slice of shared memory for the output tile (or an
  operand stage to reuse after the main loop).

## Does not apply when
- the output rows are scattered (`out[token_ids[r] * N + c]` in a MoE down-projection): a
  tensor-map store writes boxes, not gathered rows (Blackwell's `tile::scatter4` aside);
- the kernel is not a tensor-core tile (element-wise, reductions, CUDA-core SGEMM with tiny
  tiles): nothing is gained by staging;
- shared memory is already fully used by the main-loop stages and no stage can be reused;
- pre-Hopper GPUs or ROCm: no TMA (use 128-bit vectorised stores through shared memory).
With a TMA store already there, the skeleton is suggested as a refinement when the shared
tile is written and stored with no `fence.proxy.async` between (the copy may read stale data)
or when a loop writes the staging tile again (next tile, next N slice) with no
`wait_group.read` since the previous store (the copy may read the new data). A store at the
very end of the kernel without a wait is left alone: DeepGEMM's hc-prenorm GEMMs exit that way.

## References
- DeepGEMM `deep_gemm/include/deep_gemm/impls/sm90_bf16_gemm.cuh` (`sm90_bf16_gemm_impl`: `tma_store_fence`, `SM90_TMA_STORE_2D`, `tma_store_arrive`, deferred `tma_store_wait<0>`)
- DeepGEMM `deep_gemm/include/deep_gemm/epilogue/sm100_store_cd.cuh` (multi-stage TMA store epilogue, `kNumTMAStoreStages`)
- sglang wheel `sglang/kernels/jit/csrc/sparse_mla_q8kv8_prefill_sm90/kernel.cuh` (`tma_store_fence`, `SM90_TMA_STORE_3D::copy`, `tma_store_arrive`, `tma_store_wait<0>`)
- CUDA C++ Programming Guide, "Asynchronous Data Copies using the Tensor Memory Accelerator (TMA)" (`cp.async.bulk.tensor`, `fence.proxy.async`, `cuTensorMapEncodeTiled`)
- PTX ISA, "cp.async.bulk.tensor" and "cp.async.bulk.wait_group"
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import IDENT, custom
from skel.skeletons.patterns import absent, any_of, assigns, calls_where, implies, names_where
from skel.skeletons.predicates.cuda_tiles import is_kernel, mma_lines, shared_arrays

if TYPE_CHECKING:
    from skel.kernels.model import Assign, Call, KernelFacts

#: The TMA / bulk store instructions: tensor store, its reduce form, and the 1-D bulk store.
_STORE_PTX = re.compile(r"ptx:cp\.(reduce\.)?async\.bulk\.(tensor\.\w+\.)?global\.shared")
#: ... and their CUTLASS/CuTe and hand-written wrappers.
_STORE_NAME = re.compile(r"(?i)\w*TMA_(STORE|REDUCE)\w*|\w*BULK_COPY_S2G\w*|\w*tma_?store\w*|\w*bulk_?store\w*|"
                         r"\w*tma_?reduce\w*")
#: Raw forms whose surrounding fence and wait this kernel must show (a wrapper named
#: `store_tile_tma(...)` may fence and wait inside, out of sight).
_RAW_STORE_NAME = re.compile(r"\w*SM\d+_TMA_(STORE|REDUCE_\w+)\w*|\w*SM\d+_BULK_COPY_S2G\w*")
_FENCE = re.compile(r"ptx:fence\.proxy\.async|(?i:\w*tma_?store_?fence|fence_view_async_shared|fence_?proxy_?async\w*)")
_WAIT = re.compile(r"ptx:cp\.async\.bulk\.wait_group|(?i:\w*tma_?store_?wait\w*|\w*bulk_?wait_?group\w*)")

#: Direct global stores by call: wmma fragments, cache-hinted stores, PTX st.global.
_STORE_CALL = re.compile(r"(^|::)(store_matrix_sync|__stcs|__stcg|__stwt|__stwb|st_global\w*|st_na_global)$")


#: `0`, `0.f`, `{0, 0, 0, 0}`, `make_int4(0, 0, 0, 0)`-free literal values
_LITERAL = re.compile(r"[-+]?[\d.]+[fFuUlL]*|\{[\s\d.,fFuUlL+-]*\}")


def _last(name: str) -> str:
    return re.split(r"::|\.", name)[-1]


def _tma_store_call(c: Call, k: KernelFacts) -> bool:
    """A TMA store call: the PTX form or a wrapper (`SM90_TMA_STORE_2D::copy`, `tma_store_*`)."""
    return bool(_STORE_PTX.match(c.name) or _STORE_NAME.fullmatch(_last(c.name))
                or _STORE_NAME.search(c.name.split("::copy")[0]))


def _raw_store_atom(n: str, k: KernelFacts) -> bool:
    """A raw CuTe store atom named in the kernel (`cute::SM90_TMA_STORE_2D`)."""
    return bool(_RAW_STORE_NAME.fullmatch(n.split("::")[-1]))


def _raw_store_call(c: Call, k: KernelFacts) -> bool:
    """A raw TMA store call: the PTX form or a CuTe store atom's."""
    return bool(_STORE_PTX.match(c.name) or _RAW_STORE_NAME.search(c.name))


def _fence_call(c: Call, k: KernelFacts) -> bool:
    return bool(_FENCE.match(c.name) or _FENCE.fullmatch(_last(c.name)))


def _wait_call(c: Call, k: KernelFacts) -> bool:
    return bool(_WAIT.match(c.name) or _WAIT.fullmatch(_last(c.name)))


def _writes_shared(k, lp, shared: set[str]) -> bool:
    """Loop ``lp`` writes shared memory: an assignment into a shared array, `st.shared` /
    `stmatrix`, or a `store_matrix_sync` into a shared tile."""
    for a in k.assigns:
        if lp.line <= a.line <= lp.end_line and any(_store_target(t)[0] in shared for t in a.targets):
            return True
    for c in k.calls:
        if not lp.line <= c.line <= lp.end_line:
            continue
        if re.match(r"ptx:(st\.shared|stmatrix)", c.name) or re.search(r"(?i)st_?shared|stsm|stmatrix", _last(c.name)):
            return True
        if _last(c.name) == "store_matrix_sync" and c.args and _store_target(c.args[0].lstrip("&"))[0] in shared:
            return True
    return False


def _restaged_store(c: Call, k: KernelFacts) -> bool:
    """A raw TMA store in a loop that also writes shared memory: the next iteration may
    rewrite the staging tile the store still reads."""
    if not _raw_store_call(c, k):
        return False
    lp = {lp.line: lp for lp in k.loops}.get(c.loop_line)
    return lp is not None and _writes_shared(k, lp, _shared_names(k))


def _output_pointers(k) -> set[str]:
    """Parameters that are writable pointers (`float* C`, `T* __restrict__ out`)."""
    return {p.name for p in k.params if "*" in p.annotation and not re.search(r"\bconst\b", p.annotation)}


def _store_target(text: str) -> tuple[str, str]:
    """(pointer name, subscript text) of a store target: `C[r * N + c]`, `*(C + off)`,
    `reinterpret_cast<float2*>(C + off)[0]`."""
    t = re.sub(r"^\s*\*?\s*\(*\s*(reinterpret_cast\s*<[^>]*>\s*\(\s*)?", "", text)
    m = IDENT.match(t)
    return (m.group(0), t[m.end():]) if m else ("", "")


def _scattered(subscript: str) -> bool:
    """The store's index reads another array: `out[ids[r] * N + c]`."""
    inner = subscript.strip()
    return inner.startswith("[") and bool(re.search(r"\w\s*\[", inner[1:]))


def _shared_names(k) -> set[str]:
    """Shared arrays and the pointers set from them (`int4* sh_red = sh + off;`)."""
    shared = shared_arrays(k)
    for a in k.assigns:
        if shared & set(a.names):
            shared |= {t for t in a.targets if IDENT.fullmatch(t)}
    return shared


def _assign_stores(a: Assign, k: KernelFacts) -> set[bool]:
    """Whether each store of a computed value to an output pointer parameter that the
    assignment makes is scattered. A value read from shared memory (`C[i] = sh_red[j]`) is
    an epilogue already staged there, and a literal (`C[i] = {0, 0, 0, 0}`) is an
    initialisation, not an epilogue."""
    if a.op not in ("=", "+=") or _LITERAL.fullmatch(a.value.strip()):
        return set()
    outs = _output_pointers(k)
    found = set()
    for t in a.targets:
        name, rest = _store_target(t)
        if name in outs and (rest.lstrip().startswith("[") or "+" in t or t.lstrip().startswith("*")):
            found.add(_scattered(rest))
    if found and _shared_names(k) & set(a.names):
        return set()
    return found


def _call_stores(c: Call, k: KernelFacts) -> set[bool]:
    """Whether a store call to an output pointer parameter (`ptx:st.global`, `__stcs`,
    `store_matrix_sync`) is scattered."""
    if c.name.startswith("ptx:st.global"):
        return {False}
    if _STORE_CALL.search(c.name) and c.args:
        name, rest = _store_target(c.args[0].lstrip("&"))
        if name in _output_pointers(k):
            return {_scattered(rest)}
    return set()


def _global_kernel(k: KernelFacts) -> bool:
    """A `__global__` kernel (its kind, or its decorators): a fact with no lines."""
    return is_kernel(k)


def _mma_lines(k: KernelFacts) -> list[int]:
    """``mma_lines``: the calls of the predicate's MMA names and PTX."""
    return mma_lines(k)


def _plain_assign(a: Assign, k: KernelFacts) -> bool:
    return False in _assign_stores(a, k)


def _plain_call(c: Call, k: KernelFacts) -> bool:
    return False in _call_stores(c, k)


def _scattered_assign(a: Assign, k: KernelFacts) -> bool:
    return True in _assign_stores(a, k)


def _scattered_call(c: Call, k: KernelFacts) -> bool:
    return True in _call_stores(c, k)


KERNEL = custom("cuda-kernel", "a `__global__` kernel", _global_kernel, signature=True)
MMA = custom("tensor-core-mma", "tensor-core MMAs (wmma, `mma.sync`, wgmma, tcgen05)", _mma_lines)
#: shared memory declared: `__shared__` arrays or `extern __shared__` buffers
SHARED_TILES = names_where(r"__shared__|extern __shared__", name="shared-tiles",
                           describe="shared-memory tiles (`__shared__`)")
DIRECT_STORE = any_of(
    assigns(where=_plain_assign, name="direct-store-assign",
            describe="a computed value assigned to an output pointer (`C[r * N + c] = acc`)"),
    calls_where(where=_plain_call, name="direct-store-call",
                describe="a store call to an output pointer (`st.global`, `__stcs`, `store_matrix_sync`)"),
    name="direct-global-epilogue",
    describe="an epilogue that stores the results straight to an output pointer in global memory")
SCATTERED_STORE = any_of(
    assigns(where=_scattered_assign, name="scattered-store-assign",
            describe="a computed value assigned through an index array (`out[ids[r] * N + c] = acc`)"),
    calls_where(where=_scattered_call, name="scattered-store-call",
                describe="a store call to an output pointer indexed through an index array"),
    name="scattered-output-rows", describe="output rows scattered through an index array (`out[ids[r] * N + c]`)")
#: any identifier: a raw store atom is told by its last `::` part (``_raw_store_atom``)
_ANY_NAME = r"(?s).*"
TMA_STORE = any_of(
    calls_where(where=_tma_store_call, name="tma-store-call",
                describe="a TMA store call (`cp.async.bulk.tensor...global.shared`, `tma_store_*`)"),
    names_where(_ANY_NAME, where=_raw_store_atom, name="tma-store-atom",
                describe="a raw CuTe TMA store atom named (`SM90_TMA_STORE_2D`)"),
    name="tma-store",
    describe="a TMA store of the output tile (`cp.async.bulk.tensor...global.shared`, `SM90_TMA_STORE`, `tma_store_*`)")
#: a raw TMA store, whose fence and wait this kernel must show (a wrapper may hide them)
RAW_TMA_STORE = any_of(
    calls_where(where=_raw_store_call, name="raw-tma-store-call",
                describe="a raw TMA store call (the PTX form, a CuTe store atom's `copy`)"),
    names_where(_ANY_NAME, where=_raw_store_atom, name="raw-tma-store-atom",
                describe="a raw CuTe TMA store atom named (`SM90_TMA_STORE_2D`)"),
    name="raw-tma-store", describe="a raw TMA store (PTX, or a CuTe store atom)")
#: a `fence.proxy.async` (or `tma_store_fence`) in sight, or a store through a wrapper whose
#: body this kernel does not show
FENCED = implies(
    RAW_TMA_STORE,
    calls_where(where=_fence_call, name="tma-store-fence", describe="a `fence.proxy.async` (`tma_store_fence()`)"),
    name="tma-store-fenced", describe="a `fence.proxy.async` (`tma_store_fence()`) between the shared-memory "
    "writes and the TMA store")
#: nothing rewrites the staging tile while a TMA store may still read it: a
#: `cp.async.bulk.wait_group.read` (`tma_store_wait<N>()`) is in sight, or no loop both writes
#: shared memory and issues the store (a store at the end of the kernel, or from a buffer
#: written once, needs no wait before the CTA exits), or the store goes through a wrapper
#: whose body this kernel does not show
WAITED = implies(
    RAW_TMA_STORE,
    any_of(
        calls_where(where=_wait_call, name="tma-store-wait",
                    describe="a `cp.async.bulk.wait_group.read` (`tma_store_wait<N>()`)"),
        absent(calls_where(in_loop=True, where=_restaged_store, name="restaged-tma-store",
                           describe="a raw TMA store in a loop that also writes shared memory"),
               name="no-restaged-tma-store", describe="no raw TMA store in a loop that also writes shared memory"),
        name="tma-store-wait-or-no-restaging",
        describe="a TMA store wait, or no loop that both writes shared memory and issues the store"),
    name="tma-store-waited", describe="a `cp.async.bulk.wait_group.read` (`tma_store_wait<N>()`) before a loop "
    "writes the staging tile again")

SKELETON = Skeleton(
    id="tma-store-epilogue",
    title="TMA store epilogue (registers -> shared -> bulk tensor store)",
    summary="Stage the GEMM output tile in shared memory and write it with one asynchronous TMA store.",
    category=Category.MEMORY,
    doc=__doc__,
    ruled_out_by=(r"\bTMA store", r"tma_store", r"bulk (tensor )?store"),
    present=TMA_STORE,
    preconditions=[KERNEL, MMA, SHARED_TILES, DIRECT_STORE, ~SCATTERED_STORE],
    subject=KERNEL,
    languages=("cuda",),
    env=Env(backends=("cuda",), min_cc=90),
    helps=("memory",),
    refine=[FENCED, WAITED],
)
