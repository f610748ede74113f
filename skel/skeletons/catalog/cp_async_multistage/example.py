"""cp-async-multistage: a decode-time Linear (few tokens × streamed weights) staging each k-tile
into shared memory with plain loads, then ``__syncthreads()``, then computing → ``cp.async`` into a
ring of 4 shared-memory stages with commit/wait groups, so 3 tiles are in flight while one is used.

Harness format: docs/harness.md. The CUDA sources ``before_cuda``/``after_cuda`` are the template
shown; ``before``/``after`` compile them (once, with ``torch.utils.cpp_extension.load_inline``)
and launch them. Importing this file compiles nothing.
"""

import torch

from skel.skeletons.pairs.cuda import NEEDS, build

SHAPES = {
    "tail": dict(M=3, N=1000, K=1003),       # K % 4 != 0 (4-byte copies), partial k-tile and n-tile
    "decode8": dict(M=8, N=4096, K=4096),    # q/o projection of a 4096-wide model at batch 8
    "mlp-up": dict(M=4, N=14336, K=4096),
    "mlp-down": dict(M=8, N=4096, K=14336),
    "huge": dict(M=2, N=70001, K=8196),      # weights past 2**31 bytes (2.3 GB): 64-bit row offsets
}
CPU_SHAPES = ()
CHECK_ONLY = ("tail", "huge")
CPU_SKIP = f"{NEEDS} (CUDA C++ built with torch.utils.cpp_extension.load_inline)"
DTYPES = ("float32",)
TOLERANCES = {"float32": (2e-5, 1e-4)}  # fp32 FMA sums in another order than the reference's


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(shape["M"], shape["K"], generator=g, device=device, dtype=torch.float32)
    w = torch.randn(shape["N"], shape["K"], generator=g, device=device, dtype=torch.float32) / shape["K"] ** 0.5
    return (x.to(dtype), w.to(dtype))


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=dtype, device=device),)


def reference(x, w):
    return (x @ w.T,)


def bytes_moved(shape, dtype):
    return 4 * (shape["N"] * shape["K"] + shape["M"] * shape["K"] + shape["M"] * shape["N"])


def flops(shape, dtype):
    return 2 * shape["M"] * shape["N"] * shape["K"]


before_cuda = r"""
#include <c10/cuda/CUDAStream.h>
#include <type_traits>

constexpr int TN = 32;         // rows of w (output features) per block
constexpr int TK = 64;         // k per tile
constexpr int MMAX = 8;        // tokens at most
constexpr int THREADS = 256;   // 8 warps, each owning TN / 8 rows of w
constexpr int RPW = TN / (THREADS / 32);

// tile [k0, k0 + TK) of w's rows n0.. and of x into shared memory, zeros past the edges
template <int VEC>
__device__ __forceinline__ void load_tile(float (*sw)[TK], float (*sx)[TK], const float* w, const float* x,
                                          int64_t n0, int k0, int M, int N, int K) {
  using Vec = std::conditional_t<VEC == 4, float4, float>;
  for (int c = threadIdx.x; c < TN * TK / VEC; c += THREADS) {
    const int r = c / (TK / VEC), kk = c % (TK / VEC) * VEC;
    const bool ok = n0 + r < N && k0 + kk < K;  // K % VEC == 0: the whole vector is in range
    *reinterpret_cast<Vec*>(&sw[r][kk]) = ok ? *reinterpret_cast<const Vec*>(w + (n0 + r) * K + k0 + kk) : Vec{};
  }
  for (int c = threadIdx.x; c < MMAX * TK / VEC; c += THREADS) {
    const int m = c / (TK / VEC), kk = c % (TK / VEC) * VEC;
    const bool ok = m < M && k0 + kk < K;
    *reinterpret_cast<Vec*>(&sx[m][kk]) = ok ? *reinterpret_cast<const Vec*>(x + (int64_t)m * K + k0 + kk) : Vec{};
  }
}

// y[m, n] = sum_k x[m, k] * w[n, k]: few tokens, every weight read once
template <int VEC>
__global__ void __launch_bounds__(THREADS) skinny_gemm_kernel(float* __restrict__ y, const float* __restrict__ x,
                                                              const float* __restrict__ w, int M, int N, int K) {
  __shared__ __align__(16) float sw[TN][TK];
  __shared__ __align__(16) float sx[MMAX][TK];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t n0 = (int64_t)blockIdx.x * TN;
  float acc[MMAX][RPW] = {};

  for (int k0 = 0; k0 < K; k0 += TK) {
    load_tile<VEC>(sw, sx, w, x, n0, k0, M, N, K);
    __syncthreads();
#pragma unroll
    for (int kk = lane; kk < TK; kk += 32) {
      float xv[MMAX];
#pragma unroll
      for (int m = 0; m < MMAX; ++m) xv[m] = sx[m][kk];
#pragma unroll
      for (int r = 0; r < RPW; ++r) {
        const float wv = sw[warp * RPW + r][kk];
#pragma unroll
        for (int m = 0; m < MMAX; ++m) acc[m][r] += xv[m] * wv;
      }
    }
    __syncthreads();  // the tile is read by all before the next one overwrites it
  }

#pragma unroll
  for (int m = 0; m < MMAX; ++m) {
#pragma unroll
    for (int r = 0; r < RPW; ++r) {
      float v = acc[m][r];
      for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
      const int64_t n = n0 + warp * RPW + r;
      if (lane == 0 && m < M && n < N) y[m * (int64_t)N + n] = v;
    }
  }
}

void skinny_gemm(torch::Tensor y, torch::Tensor x, torch::Tensor w) {
  const int M = x.size(0), N = w.size(0), K = x.size(1);
  TORCH_CHECK(M <= MMAX, "at most ", MMAX, " tokens");
  const dim3 grid((N + TN - 1) / TN);
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  if (K % 4 == 0)  // 16-byte rows: float4 copies (the tensors are 16-byte aligned from torch's allocator)
    skinny_gemm_kernel<4><<<grid, THREADS, 0, stream>>>(y.data_ptr<float>(), x.data_ptr<float>(),
                                                        w.data_ptr<float>(), M, N, K);
  else
    skinny_gemm_kernel<1><<<grid, THREADS, 0, stream>>>(y.data_ptr<float>(), x.data_ptr<float>(),
                                                        w.data_ptr<float>(), M, N, K);
}
"""

after_cuda = r"""
#include <c10/cuda/CUDAStream.h>
#include <type_traits>

constexpr int TN = 32;         // rows of w (output features) per block
constexpr int TK = 64;         // k per tile
constexpr int MMAX = 8;        // tokens at most
constexpr int THREADS = 256;   // 8 warps, each owning TN / 8 rows of w
constexpr int RPW = TN / (THREADS / 32);
constexpr int STAGES = 4;      // tiles in shared memory: one being computed on, up to 3 in flight

// global -> shared without passing through registers; src_bytes 0 reads nothing and zero-fills
template <int BYTES>
__device__ __forceinline__ void cp_async(void* smem, const void* gmem, bool ok) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  if constexpr (BYTES == 16)  // .cg: L2 only, the tile is read once
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(ok ? 16 : 0));
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(gmem), "n"(BYTES),
                 "r"(ok ? BYTES : 0));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int PENDING>  // wait until at most PENDING of this thread's committed groups are in flight
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING)); }

// tile [k0, k0 + TK) of w's rows n0.. and of x into shared memory, zeros past the edges
template <int VEC>
__device__ __forceinline__ void load_tile(float (*sw)[TK], float (*sx)[TK], const float* w, const float* x,
                                          int64_t n0, int k0, int M, int N, int K) {
  for (int c = threadIdx.x; c < TN * TK / VEC; c += THREADS) {
    const int r = c / (TK / VEC), kk = c % (TK / VEC) * VEC;
    const bool ok = n0 + r < N && k0 + kk < K;  // K % VEC == 0: the whole vector is in range
    cp_async<VEC * 4>(&sw[r][kk], ok ? w + (n0 + r) * K + k0 + kk : w, ok);
  }
  for (int c = threadIdx.x; c < MMAX * TK / VEC; c += THREADS) {
    const int m = c / (TK / VEC), kk = c % (TK / VEC) * VEC;
    const bool ok = m < M && k0 + kk < K;
    cp_async<VEC * 4>(&sx[m][kk], ok ? x + (int64_t)m * K + k0 + kk : x, ok);
  }
}

// y[m, n] = sum_k x[m, k] * w[n, k]: few tokens, every weight read once
template <int VEC>
__global__ void __launch_bounds__(THREADS) skinny_gemm_kernel(float* __restrict__ y, const float* __restrict__ x,
                                                              const float* __restrict__ w, int M, int N, int K) {
  __shared__ __align__(16) float sw[STAGES][TN][TK];
  __shared__ __align__(16) float sx[STAGES][MMAX][TK];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t n0 = (int64_t)blockIdx.x * TN;
  float acc[MMAX][RPW] = {};
  const int tiles = (K + TK - 1) / TK;

  for (int s = 0; s < STAGES - 1; ++s) {  // prologue: the first STAGES - 1 tiles in flight
    if (s < tiles) load_tile<VEC>(sw[s], sx[s], w, x, n0, s * TK, M, N, K);
    cp_async_commit();  // (an empty group past the end keeps the count the wait relies on)
  }
  for (int t = 0; t < tiles; ++t) {
    cp_async_wait<STAGES - 2>();  // this thread's copies of tile t have landed ...
    __syncthreads();              // ... and everyone's; and all are done with tile t - 1
    const int next = t + STAGES - 1;  // refill the stage tile t - 1 used
    if (next < tiles) load_tile<VEC>(sw[next % STAGES], sx[next % STAGES], w, x, n0, next * TK, M, N, K);
    cp_async_commit();
    const int s = t % STAGES;
#pragma unroll
    for (int kk = lane; kk < TK; kk += 32) {
      float xv[MMAX];
#pragma unroll
      for (int m = 0; m < MMAX; ++m) xv[m] = sx[s][m][kk];
#pragma unroll
      for (int r = 0; r < RPW; ++r) {
        const float wv = sw[s][warp * RPW + r][kk];
#pragma unroll
        for (int m = 0; m < MMAX; ++m) acc[m][r] += xv[m] * wv;
      }
    }
  }
  cp_async_wait<0>();  // no copy may still target shared memory when the block exits

#pragma unroll
  for (int m = 0; m < MMAX; ++m) {
#pragma unroll
    for (int r = 0; r < RPW; ++r) {
      float v = acc[m][r];
      for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
      const int64_t n = n0 + warp * RPW + r;
      if (lane == 0 && m < M && n < N) y[m * (int64_t)N + n] = v;
    }
  }
}

void skinny_gemm(torch::Tensor y, torch::Tensor x, torch::Tensor w) {
  const int M = x.size(0), N = w.size(0), K = x.size(1);
  TORCH_CHECK(M <= MMAX, "at most ", MMAX, " tokens");
  const dim3 grid((N + TN - 1) / TN);
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  if (K % 4 == 0)  // 16-byte rows: 16-byte copies (the tensors are 16-byte aligned from torch's allocator)
    skinny_gemm_kernel<4><<<grid, THREADS, 0, stream>>>(y.data_ptr<float>(), x.data_ptr<float>(),
                                                        w.data_ptr<float>(), M, N, K);
  else
    skinny_gemm_kernel<1><<<grid, THREADS, 0, stream>>>(y.data_ptr<float>(), x.data_ptr<float>(),
                                                        w.data_ptr<float>(), M, N, K);
}
"""

SIGNATURE = "void skinny_gemm(torch::Tensor y, torch::Tensor x, torch::Tensor w)"


def _ext():
    return build("cp_async_multistage", before_cuda, after_cuda, SIGNATURE)


def before(x, w, y):
    _ext().before(y, x, w)


def after(x, w, y):
    _ext().after(y, x, w)
