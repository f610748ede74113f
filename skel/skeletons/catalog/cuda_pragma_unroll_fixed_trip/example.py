"""cuda-pragma-unroll-fixed-trip: a per-thread `float acc[8]` indexed by a loop over a runtime column
count (local memory) → the count as a template parameter and the loops `#pragma unroll` (registers).

Harness format: docs/harness.md. The CUDA sources ``before_cuda``/``after_cuda`` are the template
shown; ``before``/``after`` compile them (once, with ``torch.utils.cpp_extension.load_inline``)
and launch them. Importing this file compiles nothing.

y = x @ w in fp32 (x: M x K, w: K x N, both row-major) on CUDA cores: one block covers 256 x 8
columns of one row, each thread accumulates 8 of them (256 apart, so a warp's loads of `w` are
coalesced) over the whole K loop. The before side takes the column count as a runtime argument
(`cols_per_thread`, always 8 at its launch) and loops to it: `acc[j]` is never a compile-time
index, so `acc` is placed in local memory and every multiply-add is a local load, the FMA and a
local store. The after side makes the count a template parameter and unrolls both loops over it:
`acc` is 8 registers. Expected from `-Xptxas -v` (not run here: no nvcc on the machine that wrote
it): a 32-byte stack frame for the before kernel, none for the after one. "small" (tail columns,
K not a multiple of anything) is checked only; "tall" (4,096 blocks, `w` fits in L2) and "wide"
(1,024 blocks, long K loop) are where the local traffic should show.
"""

import torch

from skel.skeletons.pairs.cuda import NEEDS, build

SHAPES = {
    "small": dict(M=3, N=700, K=37),       # a few blocks, a partial column block: checked, not timed
    "tall": dict(M=2048, N=4096, K=512),
    "wide": dict(M=64, N=32768, K=2048),
}
CPU_SHAPES = ()
CHECK_ONLY = ("small",)
CPU_SKIP = f"{NEEDS} (CUDA C++ built with torch.utils.cpp_extension.load_inline)"
DTYPES = ("float32",)
TOLERANCES = {"float32": (2e-5, 1e-4)}  # fp32 sums over K in order, against a float64 reference; |y| ~ 1


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(shape["M"], shape["K"], generator=g, device=device, dtype=torch.float32)
    w = torch.randn(shape["K"], shape["N"], generator=g, device=device, dtype=torch.float32) / shape["K"] ** 0.5
    return (x.to(dtype), w.to(dtype))


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=dtype, device=device),)


def reference(x, w):
    return (x @ w,)


def bytes_moved(shape, dtype):
    return 4 * (shape["M"] * shape["K"] + shape["K"] * shape["N"] + shape["M"] * shape["N"])


def flops(shape, dtype):
    return 2 * shape["M"] * shape["N"] * shape["K"]


before_cuda = r"""
#include <c10/cuda/CUDAStream.h>

constexpr int kThreads = 256;
constexpr int kCols = 8;  // columns per thread at the launch below

// y = x @ w. Each thread accumulates up to 8 columns of one row, kThreads apart.
__global__ void linear_cols(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                            int K, int N, int blocks_per_row, int cols_per_thread) {
  const int row = blockIdx.x / blocks_per_row;
  const int col0 = (blockIdx.x % blocks_per_row) * kThreads * cols_per_thread + threadIdx.x;
  float acc[8] = {};
  for (int k = 0; k < K; ++k) {
    const float xv = x[row * K + k];
    for (int j = 0; j < cols_per_thread; ++j) {  // a runtime trip count: acc[j] is no constant index
      const int col = col0 + j * kThreads;
      if (col < N) acc[j] += xv * w[k * N + col];
    }
  }
  for (int j = 0; j < cols_per_thread; ++j) {
    const int col = col0 + j * kThreads;
    if (col < N) y[row * N + col] = acc[j];
  }
}

void linear(torch::Tensor y, torch::Tensor x, torch::Tensor w) {
  TORCH_CHECK(x.is_contiguous() && w.is_contiguous() && y.is_contiguous(), "contiguous tensors only");
  const int M = x.size(0), K = x.size(1), N = w.size(1);
  const int blocks_per_row = (N + kThreads * kCols - 1) / (kThreads * kCols);
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  linear_cols<<<M * blocks_per_row, kThreads, 0, stream>>>(x.data_ptr<float>(), w.data_ptr<float>(),
                                                          y.data_ptr<float>(), K, N, blocks_per_row, kCols);
}
"""

after_cuda = r"""
#include <c10/cuda/CUDAStream.h>

constexpr int kThreads = 256;
constexpr int kCols = 8;  // columns per thread at the launch below

// y = x @ w. Each thread accumulates kColsPerThread columns of one row, kThreads apart: the trip
// count is a template parameter and the loops over it are unrolled, so acc is kColsPerThread registers.
template <int kColsPerThread>
__global__ void linear_cols(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                            int K, int N, int blocks_per_row) {
  const int row = blockIdx.x / blocks_per_row;
  const int col0 = (blockIdx.x % blocks_per_row) * kThreads * kColsPerThread + threadIdx.x;
  float acc[kColsPerThread] = {};
  for (int k = 0; k < K; ++k) {
    const float xv = x[row * K + k];
#pragma unroll
    for (int j = 0; j < kColsPerThread; ++j) {
      const int col = col0 + j * kThreads;
      if (col < N) acc[j] += xv * w[k * N + col];
    }
  }
#pragma unroll
  for (int j = 0; j < kColsPerThread; ++j) {
    const int col = col0 + j * kThreads;
    if (col < N) y[row * N + col] = acc[j];
  }
}

void linear(torch::Tensor y, torch::Tensor x, torch::Tensor w) {
  TORCH_CHECK(x.is_contiguous() && w.is_contiguous() && y.is_contiguous(), "contiguous tensors only");
  const int M = x.size(0), K = x.size(1), N = w.size(1);
  const int blocks_per_row = (N + kThreads * kCols - 1) / (kThreads * kCols);
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  linear_cols<kCols><<<M * blocks_per_row, kThreads, 0, stream>>>(x.data_ptr<float>(), w.data_ptr<float>(),
                                                                 y.data_ptr<float>(), K, N, blocks_per_row);
}
"""

SIGNATURE = "void linear(torch::Tensor y, torch::Tensor x, torch::Tensor w)"


def _ext():
    return build("cuda_pragma_unroll_fixed_trip", before_cuda, after_cuda, SIGNATURE)


def before(x, w, y):
    _ext().before(y, x, w)


def after(x, w, y):
    _ext().after(y, x, w)
