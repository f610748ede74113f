"""tma-store-epilogue: an mma.sync bf16 GEMM whose lanes store their accumulators straight to
global memory → the 64 x 64 output tile staged in shared memory (128-byte swizzle) and written
with one TMA bulk tensor store.

Harness format: docs/harness.md. The CUDA sources ``before_cuda``/``after_cuda`` are the template
shown; ``before``/``after`` compile them (once, with ``torch.utils.cpp_extension.load_inline``)
and launch them. Importing this file compiles nothing.

C = A @ B^T in bf16 with fp32 accumulation (A: M x K, B: N x K, row-major, as a Linear's
weight), 64 x 64 CTA tiles, 4 warps of m16n8k16 MMAs; the main loop is the same on both sides,
only the epilogue differs. The before side writes 4-byte pairs per lane (a warp's store covers
8 rows x 16 bytes: half of each 32-byte sector); the after side writes the tile to shared
memory, `fence.proxy.async`, and one thread issues `cp.async.bulk.tensor.2d` (the TMA clips the
rows and columns past M and N). The output's `CUtensorMap` (bf16, box 64 x 64, 128-byte
swizzle) is encoded on the host with `cuTensorMapEncodeTiled`, fetched from the driver with
`cudaGetDriverEntryPointByVersion` (CUDA 12.5+), so the extension needs no `-lcuda`. N and K
must be multiples of 8 (16-byte rows for the copies and the tensor map), so they are FIXED.
Where it may pay: "wide-out" (K = 64: writing the 128 MiB output is most of the work); "deep-k"
(K = 4096) is where it cannot: the main loop dominates.
"""

import torch

from skel.skeletons.pairs.cuda import NEEDS, build

SHAPES = {
    "edge": dict(M=100, N=72, K=40),          # partial tiles in M, N and K: checked, not timed
    "wide-out": dict(M=8192, N=8192, K=64),   # epilogue-bound: 128 MiB of output, 2 MiB of input
    "mid": dict(M=4096, N=4096, K=512),
    "deep-k": dict(M=2048, N=2048, K=4096),   # main-loop-bound: the store is a small share
}
CPU_SHAPES = ()
CHECK_ONLY = ("edge",)
FIXED = ("N", "K")  # multiples of 8
CPU_SKIP = f"{NEEDS} (CUDA C++ built with torch.utils.cpp_extension.load_inline)"
DTYPES = ("bfloat16",)
TOLERANCES = {"bfloat16": (1e-3, 1e-2)}  # one bf16 rounding of an fp32 sum; |C| ~ 1


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn(shape["M"], shape["K"], generator=g, device=device, dtype=torch.float32)
    b = torch.randn(shape["N"], shape["K"], generator=g, device=device, dtype=torch.float32) / shape["K"] ** 0.5
    return (a.to(dtype), b.to(dtype))


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=dtype, device=device),)


def reference(a, b):
    return (a @ b.T,)


def bytes_moved(shape, dtype):
    return 2 * (shape["M"] * shape["K"] + shape["N"] * shape["K"] + shape["M"] * shape["N"])


def flops(shape, dtype):
    return 2 * shape["M"] * shape["N"] * shape["K"]


before_cuda = r"""
#include <c10/cuda/CUDAStream.h>
#include <cuda_bf16.h>
#include <stdint.h>

constexpr int BM = 64, BN = 64, BK = 32;  // CTA tile; 4 warps, each 16 rows x 64 columns
constexpr int kThreads = 128;
constexpr int LDS = BK + 8;               // padded shared row (80 bytes): conflict-free fragment loads

__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ uint32_t pair(const __nv_bfloat16* p) { return *reinterpret_cast<const uint32_t*>(p); }

// k-tile [k0, k0 + BK) of A's rows m0.. and B's rows n0.. into shared memory, zeros past the edges
__device__ __forceinline__ void load_tiles(__nv_bfloat16 (*a_s)[LDS], __nv_bfloat16 (*b_s)[LDS], const __nv_bfloat16* A,
                                           const __nv_bfloat16* B, int m0, int n0, int k0, int M, int N, int K) {
  for (int c = threadIdx.x; c < BM * BK / 8; c += kThreads) {  // 16-byte chunks (K % 8 == 0)
    const int r = c / (BK / 8), kk = c % (BK / 8) * 8;
    const bool ok_a = m0 + r < M && k0 + kk < K, ok_b = n0 + r < N && k0 + kk < K;
    *reinterpret_cast<uint4*>(&a_s[r][kk]) =
        ok_a ? *reinterpret_cast<const uint4*>(A + (int64_t)(m0 + r) * K + k0 + kk) : make_uint4(0, 0, 0, 0);
    *reinterpret_cast<uint4*>(&b_s[r][kk]) =
        ok_b ? *reinterpret_cast<const uint4*>(B + (int64_t)(n0 + r) * K + k0 + kk) : make_uint4(0, 0, 0, 0);
  }
}

// C[m0:m0+64, n0:n0+64] = A * B^T (A: M x K, B: N x K, both row-major)
__global__ void __launch_bounds__(kThreads) gemm_tile(const __nv_bfloat16* __restrict__ A,
                                                      const __nv_bfloat16* __restrict__ B,
                                                      __nv_bfloat16* __restrict__ C, int M, int N, int K) {
  __shared__ __align__(16) __nv_bfloat16 a_s[BM][LDS];
  __shared__ __align__(16) __nv_bfloat16 b_s[BN][LDS];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  float acc[BN / 8][4] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    load_tiles(a_s, b_s, A, B, m0, n0, k0, M, N, K);
    __syncthreads();
#pragma unroll
    for (int ks = 0; ks < BK; ks += 16) {
      const int r = warp * 16 + g;
      const uint32_t a[4] = {pair(&a_s[r][ks + 2 * t]), pair(&a_s[r + 8][ks + 2 * t]),
                             pair(&a_s[r][ks + 2 * t + 8]), pair(&a_s[r + 8][ks + 2 * t + 8])};
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) {
        const uint32_t b[2] = {pair(&b_s[j * 8 + g][ks + 2 * t]), pair(&b_s[j * 8 + g][ks + 2 * t + 8])};
        mma_16816(acc[j], a, b);
      }
    }
    __syncthreads();
  }
  // epilogue: each lane writes its values straight to global memory, two columns at a time
  const int row = m0 + warp * 16 + g;
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    const int col = n0 + j * 8 + 2 * t;  // N % 8 == 0: col < N means col + 1 < N too
    if (col < N && row < M)
      *reinterpret_cast<__nv_bfloat162*>(C + (int64_t)row * N + col) = __floats2bfloat162_rn(acc[j][0], acc[j][1]);
    if (col < N && row + 8 < M)
      *reinterpret_cast<__nv_bfloat162*>(C + (int64_t)(row + 8) * N + col) = __floats2bfloat162_rn(acc[j][2], acc[j][3]);
  }
}

void gemm(torch::Tensor C, torch::Tensor A, torch::Tensor B) {
  const int M = A.size(0), K = A.size(1), N = B.size(0);
  TORCH_CHECK(A.scalar_type() == at::kBFloat16 && B.scalar_type() == at::kBFloat16, "bf16 inputs");
  TORCH_CHECK(N % 8 == 0 && K % 8 == 0, "N and K must be multiples of 8");
  TORCH_CHECK(reinterpret_cast<uintptr_t>(A.data_ptr()) % 16 == 0 && reinterpret_cast<uintptr_t>(B.data_ptr()) % 16 == 0,
              "16-byte aligned inputs");
  const dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  gemm_tile<<<grid, kThreads, 0, stream>>>(reinterpret_cast<const __nv_bfloat16*>(A.data_ptr()),
                                           reinterpret_cast<const __nv_bfloat16*>(B.data_ptr()),
                                           reinterpret_cast<__nv_bfloat16*>(C.data_ptr()), M, N, K);
}
"""

after_cuda = r"""
#include <c10/cuda/CUDAStream.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <stdint.h>

constexpr int BM = 64, BN = 64, BK = 32;  // CTA tile; 4 warps, each 16 rows x 64 columns
constexpr int kThreads = 128;
constexpr int LDS = BK + 8;               // padded shared row (80 bytes): conflict-free fragment loads

__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ uint32_t pair(const __nv_bfloat16* p) { return *reinterpret_cast<const uint32_t*>(p); }

__device__ __forceinline__ uint32_t smem_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

// byte offset of (row, byte column) in a tile of 128-byte rows under the TMA's 128-byte swizzle:
// the 16-byte chunk index XOR row % 8 (the tile must start on a 1024-byte boundary)
__device__ __forceinline__ int sw128(int row, int byte_col) {
  return row * 128 + ((((byte_col >> 4) ^ (row & 7)) << 4) | (byte_col & 15));
}

// k-tile [k0, k0 + BK) of A's rows m0.. and B's rows n0.. into shared memory, zeros past the edges
__device__ __forceinline__ void load_tiles(__nv_bfloat16 (*a_s)[LDS], __nv_bfloat16 (*b_s)[LDS], const __nv_bfloat16* A,
                                           const __nv_bfloat16* B, int m0, int n0, int k0, int M, int N, int K) {
  for (int c = threadIdx.x; c < BM * BK / 8; c += kThreads) {  // 16-byte chunks (K % 8 == 0)
    const int r = c / (BK / 8), kk = c % (BK / 8) * 8;
    const bool ok_a = m0 + r < M && k0 + kk < K, ok_b = n0 + r < N && k0 + kk < K;
    *reinterpret_cast<uint4*>(&a_s[r][kk]) =
        ok_a ? *reinterpret_cast<const uint4*>(A + (int64_t)(m0 + r) * K + k0 + kk) : make_uint4(0, 0, 0, 0);
    *reinterpret_cast<uint4*>(&b_s[r][kk]) =
        ok_b ? *reinterpret_cast<const uint4*>(B + (int64_t)(n0 + r) * K + k0 + kk) : make_uint4(0, 0, 0, 0);
  }
}

// C[m0:m0+64, n0:n0+64] = A * B^T (A: M x K, B: N x K, both row-major); C is written through c_map
__global__ void __launch_bounds__(kThreads) gemm_tile(const __grid_constant__ CUtensorMap c_map,
                                                      const __nv_bfloat16* __restrict__ A,
                                                      const __nv_bfloat16* __restrict__ B, int M, int N, int K) {
  __shared__ __align__(16) __nv_bfloat16 a_s[BM][LDS];
  __shared__ __align__(16) __nv_bfloat16 b_s[BN][LDS];
  __shared__ __align__(128) uint8_t c_raw[BM * BN * 2 + 1024];  // the output tile, staged for the TMA
  uint8_t* c_s = c_raw + ((1024 - (smem_u32(c_raw) & 1023)) & 1023);  // on a 1024-byte boundary (the swizzle's)
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  float acc[BN / 8][4] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    load_tiles(a_s, b_s, A, B, m0, n0, k0, M, N, K);
    __syncthreads();
#pragma unroll
    for (int ks = 0; ks < BK; ks += 16) {
      const int r = warp * 16 + g;
      const uint32_t a[4] = {pair(&a_s[r][ks + 2 * t]), pair(&a_s[r + 8][ks + 2 * t]),
                             pair(&a_s[r][ks + 2 * t + 8]), pair(&a_s[r + 8][ks + 2 * t + 8])};
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) {
        const uint32_t b[2] = {pair(&b_s[j * 8 + g][ks + 2 * t]), pair(&b_s[j * 8 + g][ks + 2 * t + 8])};
        mma_16816(acc[j], a, b);
      }
    }
    __syncthreads();
  }
  // epilogue: registers -> shared memory (swizzled: the 8 rows of a store land in 8 different banks) ...
  const int row = warp * 16 + g;
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    const int byte_col = (j * 8 + 2 * t) * 2;
    *reinterpret_cast<__nv_bfloat162*>(c_s + sw128(row, byte_col)) = __floats2bfloat162_rn(acc[j][0], acc[j][1]);
    *reinterpret_cast<__nv_bfloat162*>(c_s + sw128(row + 8, byte_col)) = __floats2bfloat162_rn(acc[j][2], acc[j][3]);
  }
  // ... made visible to the async proxy the TMA reads with, by every writer, before the barrier ...
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (threadIdx.x == 0) {
    // ... and one bulk tensor store of the whole 64 x 64 box (x = column, y = row; clipped at N and M)
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                 :: "l"(&c_map), "r"(n0), "r"(m0), "r"(smem_u32(c_s)) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");  // c_s must outlive the read
  }
}

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// cuTensorMapEncodeTiled is a driver API function: fetched through the runtime, so no -lcuda
static EncodeTiled encode_tiled() {
  static EncodeTiled fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found;
    const cudaError_t err = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault,
                                                             &found);
    TORCH_CHECK(err == cudaSuccess && found == cudaDriverEntryPointSuccess && p != nullptr,
                "cuTensorMapEncodeTiled not found in the driver");
    return reinterpret_cast<EncodeTiled>(p);
  }();
  return fn;
}

void gemm(torch::Tensor C, torch::Tensor A, torch::Tensor B) {
  const int M = A.size(0), K = A.size(1), N = B.size(0);
  TORCH_CHECK(A.scalar_type() == at::kBFloat16 && B.scalar_type() == at::kBFloat16, "bf16 inputs");
  TORCH_CHECK(N % 8 == 0 && K % 8 == 0, "N and K must be multiples of 8");
  TORCH_CHECK(reinterpret_cast<uintptr_t>(A.data_ptr()) % 16 == 0 && reinterpret_cast<uintptr_t>(B.data_ptr()) % 16 == 0
              && reinterpret_cast<uintptr_t>(C.data_ptr()) % 16 == 0, "16-byte aligned tensors");
  CUtensorMap c_map;
  const cuuint64_t dims[2] = {(cuuint64_t)N, (cuuint64_t)M};              // innermost first: columns, rows
  const cuuint64_t strides[1] = {(cuuint64_t)N * sizeof(__nv_bfloat16)};  // bytes between rows
  const cuuint32_t box[2] = {BN, BM};                                     // 64 columns = 128 bytes: the swizzle span
  const cuuint32_t elem_strides[2] = {1, 1};
  const CUresult res = encode_tiled()(&c_map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, C.data_ptr(), dims, strides, box,
                                      elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                      CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  TORCH_CHECK(res == CUDA_SUCCESS, "cuTensorMapEncodeTiled failed: ", (int)res);
  const dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  gemm_tile<<<grid, kThreads, 0, stream>>>(c_map, reinterpret_cast<const __nv_bfloat16*>(A.data_ptr()),
                                           reinterpret_cast<const __nv_bfloat16*>(B.data_ptr()), M, N, K);
}
"""

SIGNATURE = "void gemm(torch::Tensor C, torch::Tensor A, torch::Tensor B)"


def _ext():
    return build("tma_store_epilogue", before_cuda, after_cuda, SIGNATURE)


def before(a, b, c):
    _ext().before(c, a, b)


def after(a, b, c):
    _ext().after(c, a, b)
