"""launch-bounds-occupancy: a register-tiled SGEMM always launched with 256 threads → the same
kernel with `__launch_bounds__(256, 4)`.

Harness format: docs/harness.md. The CUDA sources ``before_cuda``/``after_cuda`` are the template
shown; ``before``/``after`` compile them (once, with ``torch.utils.cpp_extension.load_inline``)
and launch them. Importing this file compiles nothing.

C = A @ B in fp32 (A: M x K, B: K x N, both row-major), 128 x 64 block tiles, 8 x 4 outputs per
thread; M, N and K must be multiples of 128, 64 and 8 (the host function checks, so they are
FIXED: a perturbed size would be refused by both sides). The two kernels are the same code;
only the bound differs. With nvcc 13.0 for sm_90a, `-Xptxas -v` reports 76 registers for the
before side (3 CTAs of 256 threads per SM) and 63 registers with no spills for the after side
(4 CTAs per SM). The same bound with minBlocks 1 or 2 gives 86 registers (a bound can also
*raise* the count), and with 5 it gives 48 registers and 48 bytes of spill stores: check the
spills before keeping a bound. Where the extra CTA per SM can pay: "sq2048" (512 CTAs: 1.3
waves of 3 per SM on a 132-SM H100/H200, one wave of 4) and "tall" (2,048 CTAs); "one-wave"
(128 CTAs, fewer than the SMs) is where it cannot: every CTA has an SM to itself either way.
"""

import torch

from skel.skeletons.pairs.cuda import NEEDS, build

SHAPES = {
    "small": dict(M=256, N=192, K=72),         # a few CTAs: checked, not timed
    "one-wave": dict(M=1024, N=1024, K=1024),  # 128 CTAs <= SMs: occupancy cannot matter
    "sq2048": dict(M=2048, N=2048, K=2048),
    "tall": dict(M=4096, N=4096, K=1024),
}
CPU_SHAPES = ()
CHECK_ONLY = ("small",)
FIXED = ("M", "N", "K")  # multiples of the tile sizes (128, 64, 8)
CPU_SKIP = f"{NEEDS} (CUDA C++ built with torch.utils.cpp_extension.load_inline)"
DTYPES = ("float32",)
TOLERANCES = {"float32": (2e-5, 1e-4)}  # fp32 FMA sums in another order than the reference's; |C| ~ 1


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn(shape["M"], shape["K"], generator=g, device=device, dtype=torch.float32)
    b = torch.randn(shape["K"], shape["N"], generator=g, device=device, dtype=torch.float32) / shape["K"] ** 0.5
    return (a.to(dtype), b.to(dtype))


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=dtype, device=device),)


def reference(a, b):
    return (a @ b,)


def bytes_moved(shape, dtype):
    return 4 * (shape["M"] * shape["K"] + shape["K"] * shape["N"] + shape["M"] * shape["N"])


def flops(shape, dtype):
    return 2 * shape["M"] * shape["N"] * shape["K"]


before_cuda = r"""
#include <c10/cuda/CUDAStream.h>

constexpr int kThreads = 256;                         // 16 x 16 threads
constexpr int BM = 128, BN = 64, BK = 8, TM = 8, TN = 4;  // each thread owns an 8 x 4 register tile

__global__ void sgemm_reg_tile(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
  __shared__ float As[BK][BM];
  __shared__ float Bs[BK][BN];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[TM][TN] = {};
  float a[TM], b[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {  // M, N, K multiples of the tile sizes
    for (int e = threadIdx.x; e < BM * BK; e += kThreads) As[e % BK][e / BK] = A[(row0 + e / BK) * K + k0 + e % BK];
    for (int e = threadIdx.x; e < BK * BN; e += kThreads) Bs[e / BN][e % BN] = B[(k0 + e / BN) * N + col0 + e % BN];
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = As[kk][ty * TM + i];
#pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = Bs[kk][tx * TN + j];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) C[(row0 + ty * TM + i) * N + col0 + tx * TN + j] = acc[i][j];
}

void sgemm(torch::Tensor C, torch::Tensor A, torch::Tensor B) {
  const int M = A.size(0), K = A.size(1), N = B.size(1);
  TORCH_CHECK(M % BM == 0 && N % BN == 0 && K % BK == 0, "M, N, K must be multiples of ", BM, ", ", BN, ", ", BK);
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  sgemm_reg_tile<<<dim3(N / BN, M / BM), kThreads, 0, stream>>>(A.data_ptr<float>(), B.data_ptr<float>(),
                                                               C.data_ptr<float>(), M, N, K);
}
"""

after_cuda = r"""
#include <c10/cuda/CUDAStream.h>

constexpr int kThreads = 256;                         // 16 x 16 threads
constexpr int BM = 128, BN = 64, BK = 8, TM = 8, TN = 4;  // each thread owns an 8 x 4 register tile

// at most kThreads threads per block; registers budgeted so that 4 blocks fit on an SM
__global__ void __launch_bounds__(kThreads, 4)
sgemm_reg_tile(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
  __shared__ float As[BK][BM];
  __shared__ float Bs[BK][BN];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[TM][TN] = {};
  float a[TM], b[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {  // M, N, K multiples of the tile sizes
    for (int e = threadIdx.x; e < BM * BK; e += kThreads) As[e % BK][e / BK] = A[(row0 + e / BK) * K + k0 + e % BK];
    for (int e = threadIdx.x; e < BK * BN; e += kThreads) Bs[e / BN][e % BN] = B[(k0 + e / BN) * N + col0 + e % BN];
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = As[kk][ty * TM + i];
#pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = Bs[kk][tx * TN + j];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) C[(row0 + ty * TM + i) * N + col0 + tx * TN + j] = acc[i][j];
}

void sgemm(torch::Tensor C, torch::Tensor A, torch::Tensor B) {
  const int M = A.size(0), K = A.size(1), N = B.size(1);
  TORCH_CHECK(M % BM == 0 && N % BN == 0 && K % BK == 0, "M, N, K must be multiples of ", BM, ", ", BN, ", ", BK);
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  sgemm_reg_tile<<<dim3(N / BN, M / BM), kThreads, 0, stream>>>(A.data_ptr<float>(), B.data_ptr<float>(),
                                                               C.data_ptr<float>(), M, N, K);
}
"""

SIGNATURE = "void sgemm(torch::Tensor C, torch::Tensor A, torch::Tensor B)"


def _ext():
    return build("launch_bounds_occupancy", before_cuda, after_cuda, SIGNATURE)


def before(a, b, c):
    _ext().before(c, a, b)


def after(a, b, c):
    _ext().after(c, a, b)
