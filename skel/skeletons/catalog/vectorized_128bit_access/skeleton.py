"""Load and store 16 bytes per thread (float4 / uint4 / int4) instead of one scalar element.

## What it does
An elementwise or row kernel whose threads each read `x[i]` with `i` stepping by one per
thread (`for (int i = threadIdx.x; i < d; i += blockDim.x)`, or one element per thread at
`blockIdx.x * blockDim.x + threadIdx.x`) is rewritten to move 16 bytes per memory
instruction: the pointer is reinterpreted as `const uint4*` (8 bf16/fp16, 4 fp32, 16 int8
elements), the loop steps over vectors, the elements are unpacked from the register copy
(`reinterpret_cast<const T*>(&v)[j]`), the results are packed into another `uint4` and stored
with one 16-byte store. What does not fill a vector — the last `d % VEC` elements, or a row
that does not start on a 16-byte boundary — is handled by a scalar loop after the vector
loop (or the whole row falls back to it).

## Why it is faster
Global memory instructions move 1, 2, 4, 8 or 16 bytes per thread; a warp's request is cut
into 32-byte sectors either way, so a 2-byte scalar load of a coalesced bf16 row moves only
64 bytes per warp instruction and needs 8 times as many load instructions, address
computations and loop iterations as a 16-byte one for the same bytes. Memory-bound kernels
then run out of load/store issue slots and outstanding requests per SM before they run out
of DRAM bandwidth: on H100/H200 a scalar bf16 elementwise kernel typically reaches well
under its bandwidth roofline while the 128-bit version gets close to it. Fewer, wider
requests also mean fewer L1 tag lookups and fewer instructions for the rest of the work.

## Applies when
- the kernel indexes a global pointer parameter (or a pointer derived from one, such as a
  row pointer `input + row * d`; `x[i]`, `*(x + i)` or `__ldg(x + i)`) with an index that
  advances by one from one thread to the next (`threadIdx.x`, `blockIdx.x * blockDim.x + threadIdx.x`, a loop variable starting
  there), so each thread could take 16 contiguous bytes instead;
- it uses no vector types yet (`float2`, `__half2`, `__nv_bfloat162` already pack two
  elements; a kernel with those has chosen its width and is not flagged).

## Does not apply when
- rows or tensors are not 16-byte aligned and cannot be made so (odd `d` for bf16, sliced
  views): the vector path then needs a scalar fallback that is most of the work;
- the access is a gather (`x[idx[i]]`) or strided between threads (`x[i * stride]`, a
  column of a row-major matrix): neighbouring threads do not read neighbouring bytes, so
  there is nothing to pack;
- the kernel is compute-bound or latency-bound on something else (a long dependent chain per
  element, tiny tensors where launch overhead dominates): wider loads will not show;
- the kernel scatters: atomics, or stores at an index read from memory (a MoE
  token-alignment kernel: `e = topk_ids[i]; pos = atomicAdd(&cumsum[e], 1); ids[pos] = i`).
  Its coalesced 4-byte reads are not what it waits on, and an atomic's element is never
  a vector access;
- the kernel already moves 16 bytes through a helper: a `__device__` function of the file
  that casts to `uint4`/`float4` (its facts are folded into the kernel), or a helper named
  for it from another header (`load128`, `ld_global_128`, `st_128`, `store_vec`);
- the kernel is the scalar fallback of a vectorized sibling (`*_scalar_kernel`, named for
  unaligned or odd-sized inputs): the scalar path is the point of it;
- register pressure is already the limit: a `uint4` plus its unpacked elements costs
  registers and can lower occupancy.

Already vectorized, the skeleton is suggested as a refinement when only the loads are: the
kernel reads `uint4`s but writes each element with a scalar unit-stride store.

## References
- CUDA C++ Programming Guide, "Device Memory Accesses" (global memory: naturally aligned
  1/2/4/8/16-byte words, 32-byte transactions) and "Built-in Vector Types" (`float4`, `uint4`,
  `int4`: 16-byte alignment): https://docs.nvidia.com/cuda/cuda-c-programming-guide/
- sglang 0.5.23 (wheel) `sglang/kernels/kda_kernels/csrc/diffusion/ltx2_qknorm_split_rope.cuh`:
  `const uint4 xv0 = *reinterpret_cast<const uint4*>(xrow + idx0)` and the bf16 unpacking after it
- DeepEP `csrc/kernels/legacy/utils.cuh` (`ld_nc_global(const int4*)`: a 16-byte
  `ld.global.nc...v4.s32`; `st_na_relaxed(const int4*, int4)`) — at `dd758ca`, 2026-07-14
- the runnable pair: `skel/skeletons/catalog/vectorized_128bit_access/example.py` (SiLU-and-mul,
  scalar bf16 → `uint4`, with the unaligned fallback)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.patterns import absent, params_where
from skel.skeletons.predicates.cuda import code, line_of, pointer_names, thread_linear_names, unit_stride_accesses

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts, Param

#: 16-byte types: CUDA's built-in vectors of that size, and the vector wrappers real code uses
#: (flashinfer/sglang `vec_t`, PyTorch's `aligned_vector`, CUTLASS's `AlignedArray`)
WIDE_TYPES = re.compile(r"^(?:float4|int4|uint4|double2|longlong2|ulonglong2|long2|ulong2|"
                        r"(?:\w+::)*(?:vec_t|aligned_vector|AlignedArray|AlignedVector))$")
#: narrower vector types: the kernel already packs elements, at its own width
NARROW_TYPES = re.compile(r"^(?:float2|int2|uint2|short4|ushort4|char4|uchar4|char2|uchar2|short2|ushort2|"
                          r"__half2|half2|__nv_bfloat162|nv_bfloat162|__nv_fp8x[24]_\w+|__nv_fp8x[24]_storage_t)$")
#: inline PTX moving 16 bytes per thread: `ld.global.nc.v4.s32`, `st.global.v4.b32`, `.v2.u64`
WIDE_PTX = re.compile(r"^ptx:(?:ld|st)\.[\w:.]*\.(?:v4\.[bsuf]32|v2\.[bsuf]64|v8\.[bsuf]16)\b")
#: inline PTX with narrower vectors
NARROW_PTX = re.compile(r"^ptx:(?:ld|st)\.[\w:.]*\.(?:v2\.[bsuf]32|v4\.[bsuf]16|v2\.[bsuf]16)\b")


#: helpers named for a 16-byte access (`load128`, `ld_global_128`, `st_128`, `store_vec`,
#: `ld_v4`): defined in another header, only the name says the width
WIDE_HELPERS = re.compile(r"(?i)^(?:\w+::)*\w*(?:ld|st|load|store)\w*?(?:128|_v4|_vec\d*|16b?)$")


def _type_words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z_][\w:]*", text or "")


def _named(k: KernelFacts, pattern: re.Pattern[str]) -> list[int]:
    """Lines in the body naming a matching type or call: identifiers, declared variables' types."""
    lines = [ln for name, ln in k.names.items() if pattern.match(name)]
    lines += [k.names.get(v, 0) for v, t in (k.var_types or {}).items() if any(map(pattern.match, _type_words(t)))]
    return [ln for ln in lines if ln] + [c.line for c in k.calls if pattern.match(c.name)]


def _typed(p: Param, pattern: re.Pattern[str]) -> bool:
    """A parameter of a matching type (`const float4* x`): the signature says the width."""
    return any(map(pattern.match, _type_words(p.annotation)))


def _wide_typed(p: Param, k: KernelFacts) -> bool:
    return _typed(p, WIDE_TYPES)


def _narrow_typed(p: Param, k: KernelFacts) -> bool:
    return _typed(p, NARROW_TYPES)


def _wide(k: KernelFacts) -> list[int]:
    return _named(k, WIDE_TYPES) + _named(k, WIDE_PTX) + [c.line for c in k.calls if WIDE_HELPERS.match(c.name)]


def _narrow(k: KernelFacts) -> list[int]:
    return _named(k, NARROW_TYPES) + _named(k, NARROW_PTX)


def _scalar_unit_stride(k: KernelFacts) -> list[int]:
    return [s.line for s in unit_stride_accesses(k)]


def _data_indexed(k: KernelFacts) -> set[str]:
    """Names holding a value read from memory or returned by an atomic (`e = topk_ids[i]`,
    `pos = atomicAdd(&cumsum[e], 1)`): used as an index, they scatter."""
    names: set[str] = set()
    for _ in range(2):
        for a in k.assigns:
            if "[" in a.value or any(c.startswith("atomic") for c in a.calls) or set(a.names) & names:
                names.update(re.findall(r"[A-Za-z_]\w*", a.targets[0])[:1] if a.targets else [])
    return names


def _scatters(k: KernelFacts) -> list[int]:
    """Atomics and stores at an index read from memory (`atomicAdd(&cnt[expert], 1)`,
    `sorted_ids[pos] = i`): a histogram or scatter kernel (MoE token alignment), whose cost
    is the atomics and the scattered writes, not the coalesced reads feeding them."""
    data = _data_indexed(k)
    lines = [c.line for c in k.calls if c.name.startswith("atomic") and c.args
             and set(re.findall(r"[A-Za-z_]\w*", c.args[0])) & data]
    text = code(k)
    for m in re.finditer(r"\b([A-Za-z_]\w*)\s*\[([^\]]*)\]\s*=(?!=)", text):
        if set(re.findall(r"[A-Za-z_]\w*", m.group(2))) & data:
            lines.append(line_of(k, text, m.start()))
    return lines


#: a 16-byte store: a cast to a non-const 16-byte pointer written through, a store helper
#: named for 16 bytes, inline PTX `st...v4`, or a vector wrapper's `.store`
_WIDE_STORE = re.compile(r"reinterpret_cast\s*<\s*(?!const\b)[\w:]*\b(?:float4|int4|uint4|double2|longlong2|"
                         r"ulonglong2)\s*\*\s*>")


def _wide_stores(k: KernelFacts) -> bool:
    text = code(k)
    return bool(_WIDE_STORE.search(text)) or any(
        re.match(r"(?i)^(?:\w+::)*\w*(?:st|store)\w*?(?:128|_v4|_vec\d*|16b?)$", c.name)
        or re.match(r"^ptx:st\.[\w:.]*\.(?:v4\.[bsuf]32|v2\.[bsuf]64|v8\.[bsuf]16)\b", c.name)
        or c.name == ".store" for c in k.calls)


def _per_thread_names(k: KernelFacts) -> set[str]:
    """Names that differ from thread to thread, in any step (`v = blockIdx.x * blockDim.x +
    threadIdx.x`, `i = v * 8 + j`), not read from memory."""
    names = set(thread_linear_names(k))
    for _ in range(3):
        for a in k.assigns:
            if "[" not in a.value and ("threadIdx" in a.value or set(a.names) & names):
                names.update(re.findall(r"[A-Za-z_]\w*", a.targets[0])[:1] if a.targets else [])
    return names


def _scalar_element_stores(k: KernelFacts) -> list[int]:
    """Scalar element stores to a global pointer at a per-thread index (`y[v * 8 + j] = ...`,
    `out[i] = ...`), in a kernel with no 16-byte store: it reads 16 bytes at a time but
    still writes one element per store."""
    if _wide_stores(k):
        return []
    pointers, per_thread = pointer_names(k), _per_thread_names(k)
    text = code(k)
    lines = []
    for m in re.finditer(r"\b([A-Za-z_]\w*)\s*\[([^\]]*)\]\s*(?:[-+*/|&^]?=)(?!=)", text):
        if m.group(1) in pointers and set(re.findall(r"[A-Za-z_]\w*", m.group(2))) & per_thread:
            lines.append(line_of(k, text, m.start()))
    return lines


#: the authors' own scalar path: a kernel named as the fallback for unaligned or odd-sized
#: data, next to its vectorized sibling
_FALLBACK_NAME = re.compile(r"(?i)(?:^|_)(?:scalar|unaligned|misaligned|fallback|tail|naive)(?:_|$)")


def _named_fallback(k: KernelFacts) -> bool:
    return bool(_FALLBACK_NAME.search(k.name))


WIDE_ACCESS = custom("wide-access", "16-byte vector types, `.v4` loads/stores or 16-byte load/store helpers "
                     "(`uint4`, `float4`, `int4`, `load128`)", _wide) | \
    params_where(constexpr=False, where=_wide_typed, name="wide-params",
                 describe="16-byte vector pointer parameters (`const float4* x`)")
NARROW_VECTORS = custom("narrow-vectors", "2-element vector types (`float2`, `__half2`, `__nv_bfloat162`)", _narrow) | \
    params_where(constexpr=False, where=_narrow_typed, name="narrow-params",
                 describe="2-element vector pointer parameters (`const __half2* x`)")
#: a fact about the name with no line of its own (the hit carries none)
SCALAR_FALLBACK = custom("scalar-fallback", "a kernel named as the scalar fallback (`*_scalar_kernel`, `*_unaligned*`)",
                         _named_fallback, signature=True)
SCALAR_UNIT_STRIDE = custom(
    "scalar-unit-stride-access",
    "scalar loads/stores of a global pointer at an index moving by one per thread (`x[i]`, `i` from `threadIdx.x`)",
    _scalar_unit_stride)

#: a scatter or histogram kernel: atomics, or stores at an index read from memory
SCATTERS = custom("data-dependent-scatter",
                  "atomics or stores at an index read from memory (`atomicAdd(&cnt[expert], 1)`, `ids[pos] = i`): "
                  "a scatter kernel, bound by its atomics and scattered writes", _scatters)

#: Present and complete: the stores are as wide as the loads. A kernel reading `uint4` but
#: writing one element per thread still issues 8 (bf16) store instructions per vector.
WIDE_STORES_TOO = absent(
    custom("scalar-element-stores", "scalar element stores at a per-thread index (`y[v * 8 + j] = ...`) and no "
           "16-byte store", _scalar_element_stores),
    name="wide-stores-too",
    describe="16-byte stores as well as loads (the kernel reads 16 bytes per thread but still writes one "
    "element per thread: pack the results into a `uint4` and store it once)")

SKELETON = Skeleton(
    id="vectorized-128bit-access",
    title="128-bit vectorized global loads and stores",
    summary="Move 16 bytes per thread per memory instruction (uint4/float4 over bf16/fp32 rows) instead of one scalar.",
    category=Category.MEMORY,
    doc=__doc__,
    ruled_out_by=(r"\bvectori[sz]\w*", r"\b(128-?bit|16-?byte) (loads?|stores?|access\w*)", r"\b(float|u?int)4\b"),
    present=WIDE_ACCESS,
    preconditions=[SCALAR_UNIT_STRIDE, ~NARROW_VECTORS, ~SCALAR_FALLBACK, ~SCATTERS],
    subject=SCALAR_UNIT_STRIDE,
    env=Env(backends=("cuda",)),
    helps=("memory",),
    languages=("cuda",),
    refine=[WIDE_STORES_TOO],
)
