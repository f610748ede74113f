"""cuda-half2-packed-math: a small-batch fp16 GEMV with one `__hfma` per product → `__hfma2` on column pairs.

Harness format: docs/harness.md. The CUDA sources ``before_cuda``/``after_cuda`` are the template
shown; ``before``/``after`` compile them (once, with ``torch.utils.cpp_extension.load_inline``)
and launch them. Importing this file compiles nothing.

c = a @ w for a batch of 32 decode tokens (a: 32 x K fp16, w: K x N fp16 row-major, c: 32 x N
fp32), on CUDA cores, the shape of exllamav2's and llm-awq's GEMV kernels: a block stages a
256-long slice of the 32 activation rows in shared memory (transposed, so one k's 32 values are
four 16-byte loads), then every thread walks k, reads its weight and folds it into 32 half
accumulators; every 256 k the halves are added into float registers, and the K split (1,024 per
block) is summed with float atomics. Each weight is read once and used 32 times: the kernel is
bound by the 32 HFMAs per weight, not by HBM. The before side owns one column per thread and
issues one scalar `__hfma` per product; the after side owns two adjacent columns, loads them as
one `half2`, broadcasts each activation with `__half2half2` and issues one `__hfma2` per two
products — half the math instructions for the same bytes. Both round identically (each lane of
`HFMA2` is the same fp16 FMA as `HFMA`), so they agree up to the order of the float atomics.
Expected on an H100/H200 (not measured where this was written: no GPU there): the before near
half of HBM bandwidth, the after close to it.
"""

import torch

from skel.skeletons.pairs.cuda import NEEDS, build

SHAPES = {
    "small": dict(B=32, K=1000, N=1030),        # a partial K slice and a partial column block: checked only
    "llama8b_gate_up": dict(B=32, K=4096, N=28672),   # fused gate+up projection of Llama-3-8B: 235 MB of weights
    "llama70b_down": dict(B=32, K=28672, N=8192),     # down projection of Llama-3-70B: 470 MB
}
CPU_SHAPES = ()
CHECK_ONLY = ("small",)
FIXED = ("B", "N")  # a batch of 32 rows; column pairs need an even N (an odd one: a scalar kernel)
CPU_SKIP = f"{NEEDS} (CUDA C++ built with torch.utils.cpp_extension.load_inline)"
DTYPES = ("float16",)
# fp16 sums of 256 products (|partial| ~ 0.1-0.3) added into fp32: ~1e-3 of |c| ~ 1 against float64
TOLERANCES = {"float16": (2e-2, 2e-2)}


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn(shape["B"], shape["K"], generator=g, device=device, dtype=torch.float32)
    w = torch.randn(shape["K"], shape["N"], generator=g, device=device, dtype=torch.float32) / shape["K"] ** 0.5
    return (a.to(dtype), w.to(dtype))


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["B"], shape["N"], dtype=torch.float32, device=device),)


def reference(a, w):
    t = torch.float64 if a.dtype == torch.float64 else torch.float32  # the verifier hands float64 copies
    return (a.to(t) @ w.to(t),)


def bytes_moved(shape, dtype):
    return 2 * shape["K"] * shape["N"] + 2 * shape["B"] * shape["K"] + 4 * shape["B"] * shape["N"]


def flops(shape, dtype):
    return 2 * shape["B"] * shape["N"] * shape["K"]


before_cuda = r"""
#include <cuda_fp16.h>
#include <c10/cuda/CUDAStream.h>

constexpr int kBatch = 32;     // activation rows (decode tokens)
constexpr int kThreads = 128;  // one column per thread
constexpr int kChunk = 256;    // k staged in shared memory and summed in half per step
constexpr int kSplit = 1024;   // k per block (the split is summed with float atomics)

__global__ void gemv_batch(const half* __restrict__ a, const half* __restrict__ w, float* __restrict__ c, int K,
                           int N) {
  __shared__ __align__(16) half a_s[kChunk][kBatch];  // transposed: one k's activations are contiguous
  const int n = blockIdx.x * kThreads + threadIdx.x;
  const int k_begin = blockIdx.y * kSplit;
  const int k_end = min(K, k_begin + kSplit);
  float out[kBatch] = {};
  for (int k0 = k_begin; k0 < k_end; k0 += kChunk) {
    const int len = min(kChunk, k_end - k0);
    for (int i = threadIdx.x; i < kBatch * kChunk; i += kThreads) {
      const int b = i / kChunk, kk = i % kChunk;
      a_s[kk][b] = kk < len ? a[(size_t)b * K + k0 + kk] : __float2half(0.f);
    }
    __syncthreads();
    if (n < N) {
      half acc[kBatch];
#pragma unroll
      for (int b = 0; b < kBatch; ++b) acc[b] = __float2half(0.f);
#pragma unroll 4
      for (int kk = 0; kk < len; ++kk) {
        const half wv = w[(size_t)(k0 + kk) * N + n];
        uint4 av4[kBatch / 8];
#pragma unroll
        for (int j = 0; j < kBatch / 8; ++j) av4[j] = reinterpret_cast<const uint4*>(a_s[kk])[j];
        const half* av = reinterpret_cast<const half*>(av4);
#pragma unroll
        for (int b = 0; b < kBatch; ++b) acc[b] = __hfma(av[b], wv, acc[b]);  // one lane per instruction
      }
#pragma unroll
      for (int b = 0; b < kBatch; ++b) out[b] += __half2float(acc[b]);
    }
    __syncthreads();
  }
  if (n < N) {
#pragma unroll
    for (int b = 0; b < kBatch; ++b) atomicAdd(&c[(size_t)b * N + n], out[b]);
  }
}

void gemv(torch::Tensor c, torch::Tensor a, torch::Tensor w) {
  TORCH_CHECK(a.is_contiguous() && w.is_contiguous() && c.is_contiguous(), "contiguous tensors only");
  TORCH_CHECK(a.size(0) == kBatch, "a batch of 32 rows");
  const int K = a.size(1), N = w.size(1);
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  cudaMemsetAsync(c.data_ptr(), 0, sizeof(float) * kBatch * N, stream);
  const dim3 grid((N + kThreads - 1) / kThreads, (K + kSplit - 1) / kSplit);
  gemv_batch<<<grid, kThreads, 0, stream>>>(reinterpret_cast<const half*>(a.data_ptr()),
                                            reinterpret_cast<const half*>(w.data_ptr()), c.data_ptr<float>(), K, N);
}
"""

after_cuda = r"""
#include <cuda_fp16.h>
#include <c10/cuda/CUDAStream.h>

constexpr int kBatch = 32;     // activation rows (decode tokens)
constexpr int kThreads = 128;  // two adjacent columns per thread
constexpr int kChunk = 256;    // k staged in shared memory and summed in half per step
constexpr int kSplit = 1024;   // k per block (the split is summed with float atomics)

__global__ void gemv_batch(const half* __restrict__ a, const half* __restrict__ w, float* __restrict__ c, int K,
                           int N) {
  __shared__ __align__(16) half a_s[kChunk][kBatch];  // transposed: one k's activations are contiguous
  const int n2 = blockIdx.x * kThreads + threadIdx.x;  // column pair: columns 2 * n2 and 2 * n2 + 1
  const int N2 = N / 2;
  const half2* w2 = reinterpret_cast<const half2*>(w);
  const int k_begin = blockIdx.y * kSplit;
  const int k_end = min(K, k_begin + kSplit);
  float out[kBatch][2] = {};
  for (int k0 = k_begin; k0 < k_end; k0 += kChunk) {
    const int len = min(kChunk, k_end - k0);
    for (int i = threadIdx.x; i < kBatch * kChunk; i += kThreads) {
      const int b = i / kChunk, kk = i % kChunk;
      a_s[kk][b] = kk < len ? a[(size_t)b * K + k0 + kk] : __float2half(0.f);
    }
    __syncthreads();
    if (n2 < N2) {
      half2 acc[kBatch];
#pragma unroll
      for (int b = 0; b < kBatch; ++b) acc[b] = __float2half2_rn(0.f);
#pragma unroll 4
      for (int kk = 0; kk < len; ++kk) {
        const half2 wv = w2[(size_t)(k0 + kk) * N2 + n2];  // both columns in one 4-byte load
        uint4 av4[kBatch / 8];
#pragma unroll
        for (int j = 0; j < kBatch / 8; ++j) av4[j] = reinterpret_cast<const uint4*>(a_s[kk])[j];
        const half* av = reinterpret_cast<const half*>(av4);
#pragma unroll
        for (int b = 0; b < kBatch; ++b) acc[b] = __hfma2(__half2half2(av[b]), wv, acc[b]);  // two lanes
      }
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const float2 f = __half22float2(acc[b]);
        out[b][0] += f.x;
        out[b][1] += f.y;
      }
    }
    __syncthreads();
  }
  if (n2 < N2) {
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      atomicAdd(&c[(size_t)b * N + 2 * n2], out[b][0]);
      atomicAdd(&c[(size_t)b * N + 2 * n2 + 1], out[b][1]);
    }
  }
}

void gemv(torch::Tensor c, torch::Tensor a, torch::Tensor w) {
  TORCH_CHECK(a.is_contiguous() && w.is_contiguous() && c.is_contiguous(), "contiguous tensors only");
  TORCH_CHECK(a.size(0) == kBatch, "a batch of 32 rows");
  const int K = a.size(1), N = w.size(1);
  TORCH_CHECK(N % 2 == 0, "an even column count (column pairs)");  // odd N: a scalar tail column
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  cudaMemsetAsync(c.data_ptr(), 0, sizeof(float) * kBatch * N, stream);
  const dim3 grid((N / 2 + kThreads - 1) / kThreads, (K + kSplit - 1) / kSplit);
  gemv_batch<<<grid, kThreads, 0, stream>>>(reinterpret_cast<const half*>(a.data_ptr()),
                                            reinterpret_cast<const half*>(w.data_ptr()), c.data_ptr<float>(), K, N);
}
"""

SIGNATURE = "void gemv(torch::Tensor c, torch::Tensor a, torch::Tensor w)"


def _ext():
    return build("cuda_half2_packed_math", before_cuda, after_cuda, SIGNATURE)


def before(a, w, c):
    _ext().before(c, a, w)


def after(a, w, c):
    _ext().after(c, a, w)
