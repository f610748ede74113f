"""cuda-restrict-readonly-loads: an int8 → bf16 row dequantisation whose pointer parameters carry no
`__restrict__` (each thread's loads wait behind its previous store) → `const T* __restrict__` inputs and
a `__restrict__` output (the eight loads of a thread issue together).

Harness format: docs/harness.md. The CUDA sources ``before_cuda``/``after_cuda`` are the template
shown; ``before``/``after`` compile them (once, with ``torch.utils.cpp_extension.load_inline``)
and launch them. Importing this file compiles nothing.

out[row, col] = bf16(q[row, col] * scale[row]): one block covers 256 x 8 columns of one row,
each thread converts 8 of them, 256 apart (a warp's accesses stay coalesced), in a loop unrolled
by `#pragma unroll`. The two sides differ only in the qualifiers of the three pointer parameters.
Before: `out` may alias `q` and `scale`, so nvcc keeps every load of element j+1 (and the reload
of `scale[row]`) after the store of element j: each thread has one int8 load in flight at a time
and waits one memory latency per element. After: the loads of the elements are issued together,
before the first store. Checked with nvcc 13.0 for sm_90 (`cuobjdump -sass`; not run on a GPU
where it was written): the before kernel is eight rounds of `LDG.E.S8`, `LDG.E` (scale), `STG`;
the after kernel issues 14 `LDG.E.*.CONSTANT` (the read-only path) for 7 columns before its first
`STG`, and the 8th column's pair after them (past the guard's early exit). The int8 loads
move one byte per thread each: with one in flight per thread the before side cannot cover
HBM latency, which is where the timed shapes ("llama", "square") should show it. "tail" (a
partial column block, a width no multiple of anything) is checked only.
"""

import torch

from skel.skeletons.pairs.cuda import NEEDS, build

SHAPES = {
    "tail": dict(M=5, N=2311),            # a partial column block: checked, not timed
    "llama": dict(M=4096, N=14336),       # an int8 weight of a Llama-3-8B MLP (58.7 MB in, 117 MB out)
    "square": dict(M=8192, N=8192),
}
CPU_SHAPES = ()
CHECK_ONLY = ("tail",)
CPU_SKIP = f"{NEEDS} (CUDA C++ built with torch.utils.cpp_extension.load_inline)"
DTYPES = ("bfloat16",)
TOLERANCES = {"bfloat16": (1e-2, 8e-3)}  # one bf16 rounding of q * scale (relative 2**-9)


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    q = torch.randint(-127, 128, (shape["M"], shape["N"]), generator=g, device=device, dtype=torch.int8)
    scale = torch.rand(shape["M"], generator=g, device=device, dtype=torch.float32) / 64 + 1e-3
    return (q, scale)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=dtype, device=device),)


def reference(q, scale):
    return (q.to(scale.dtype) * scale[:, None],)


def bytes_moved(shape, dtype):
    return shape["M"] * shape["N"] * (1 + 2) + 4 * shape["M"]


def flops(shape, dtype):
    return shape["M"] * shape["N"]


before_cuda = r"""
#include <cstdint>
#include <cuda_bf16.h>
#include <c10/cuda/CUDAStream.h>

constexpr int kThreads = 256;
constexpr int kItems = 8;  // columns per thread, kThreads apart

// out[row, col] = q[row, col] * scale[row]. No __restrict__: a store through `out` may change
// what `q` and `scale` point at, so no load may move above an earlier store.
__global__ void dequant_rows(__nv_bfloat16* out, const int8_t* q, const float* scale, int cols,
                             int blocks_per_row) {
  const int64_t row = blockIdx.x / blocks_per_row;
  const int col0 = (blockIdx.x % blocks_per_row) * kThreads * kItems + threadIdx.x;
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const int col = col0 + j * kThreads;
    if (col < cols) out[row * cols + col] = __float2bfloat16(float(q[row * cols + col]) * scale[row]);
  }
}

void dequant(torch::Tensor out, torch::Tensor q, torch::Tensor scale) {
  TORCH_CHECK(q.is_contiguous() && out.is_contiguous() && scale.is_contiguous(), "contiguous tensors only");
  const int rows = q.size(0), cols = q.size(1);
  const int blocks_per_row = (cols + kThreads * kItems - 1) / (kThreads * kItems);
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  dequant_rows<<<rows * blocks_per_row, kThreads, 0, stream>>>(
      reinterpret_cast<__nv_bfloat16*>(out.data_ptr()), reinterpret_cast<const int8_t*>(q.data_ptr()),
      scale.data_ptr<float>(), cols, blocks_per_row);
}
"""

after_cuda = r"""
#include <cstdint>
#include <cuda_bf16.h>
#include <c10/cuda/CUDAStream.h>

constexpr int kThreads = 256;
constexpr int kItems = 8;  // columns per thread, kThreads apart

// out[row, col] = q[row, col] * scale[row]. __restrict__ promises that the three arrays do not
// overlap: nvcc issues all of a thread's loads (and `scale[row]` once) before its first store.
__global__ void dequant_rows(__nv_bfloat16* __restrict__ out, const int8_t* __restrict__ q,
                             const float* __restrict__ scale, int cols, int blocks_per_row) {
  const int64_t row = blockIdx.x / blocks_per_row;
  const int col0 = (blockIdx.x % blocks_per_row) * kThreads * kItems + threadIdx.x;
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const int col = col0 + j * kThreads;
    if (col < cols) out[row * cols + col] = __float2bfloat16(float(q[row * cols + col]) * scale[row]);
  }
}

void dequant(torch::Tensor out, torch::Tensor q, torch::Tensor scale) {
  TORCH_CHECK(q.is_contiguous() && out.is_contiguous() && scale.is_contiguous(), "contiguous tensors only");
  const int rows = q.size(0), cols = q.size(1);
  const int blocks_per_row = (cols + kThreads * kItems - 1) / (kThreads * kItems);
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  dequant_rows<<<rows * blocks_per_row, kThreads, 0, stream>>>(
      reinterpret_cast<__nv_bfloat16*>(out.data_ptr()), reinterpret_cast<const int8_t*>(q.data_ptr()),
      scale.data_ptr<float>(), cols, blocks_per_row);
}
"""

SIGNATURE = "void dequant(torch::Tensor out, torch::Tensor q, torch::Tensor scale)"


def _ext():
    return build("cuda_restrict_readonly_loads", before_cuda, after_cuda, SIGNATURE)


def before(q, scale, out):
    _ext().before(out, q, scale)


def after(q, scale, out):
    _ext().after(out, q, scale)
