"""tma-store-epilogue: an mma.sync GEMM tile whose lanes store their accumulators straight to
global memory → the tile staged in shared memory and written with one TMA bulk tensor store.

A template only: the CUDA sources below are what `skel skeletons show` / `skel suggest` print
(`before_cuda` → `after_cuda`); there is no harness, so this pair is not run or timed here.
Both sides compile with `nvcc -arch=sm_90a -c`. The after side takes a `CUtensorMap` for C
(bf16, row-major, box 16 x 8) that the host encodes with `cuTensorMapEncodeTiled`.
"""

before_cuda = r"""
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// One warp computes a 16x8 tile of C = A (M x K, row-major) * B^T (B: N x K, row-major).
__global__ void gemm_tile(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
                          __nv_bfloat16* __restrict__ C, int N, int K) {
  __shared__ alignas(16) __nv_bfloat16 a_s[16][16];
  __shared__ alignas(16) __nv_bfloat16 b_s[8][16];
  const int lane = threadIdx.x, g = lane / 4, t = lane % 4;
  const int row0 = blockIdx.y * 16, col0 = blockIdx.x * 8;
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  for (int k0 = 0; k0 < K; k0 += 16) {
    for (int e = lane; e < 256; e += 32) a_s[e / 16][e % 16] = A[(row0 + e / 16) * K + k0 + e % 16];
    for (int e = lane; e < 128; e += 32) b_s[e / 16][e % 16] = B[(col0 + e / 16) * K + k0 + e % 16];
    __syncwarp();
    const uint32_t a[4] = {*reinterpret_cast<const uint32_t*>(&a_s[g][2 * t]),
                           *reinterpret_cast<const uint32_t*>(&a_s[g + 8][2 * t]),
                           *reinterpret_cast<const uint32_t*>(&a_s[g][2 * t + 8]),
                           *reinterpret_cast<const uint32_t*>(&a_s[g + 8][2 * t + 8])};
    const uint32_t b[2] = {*reinterpret_cast<const uint32_t*>(&b_s[g][2 * t]),
                           *reinterpret_cast<const uint32_t*>(&b_s[g][2 * t + 8])};
    mma_16816(acc, a, b);
    __syncwarp();
  }
  // epilogue: each lane writes its four values straight to global memory
  C[(row0 + g) * N + col0 + 2 * t] = __float2bfloat16(acc[0]);
  C[(row0 + g) * N + col0 + 2 * t + 1] = __float2bfloat16(acc[1]);
  C[(row0 + g + 8) * N + col0 + 2 * t] = __float2bfloat16(acc[2]);
  C[(row0 + g + 8) * N + col0 + 2 * t + 1] = __float2bfloat16(acc[3]);
}

void launch_gemm_tile(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N, int K,
                      cudaStream_t stream) {
  gemm_tile<<<dim3(N / 8, M / 16), 32, 0, stream>>>(A, B, C, N, K);
}
"""

after_cuda = r"""
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// One warp computes a 16x8 tile of C = A (M x K, row-major) * B^T (B: N x K, row-major).
__global__ void gemm_tile(const __grid_constant__ CUtensorMap c_map, const __nv_bfloat16* __restrict__ A,
                          const __nv_bfloat16* __restrict__ B, int K) {
  __shared__ alignas(16) __nv_bfloat16 a_s[16][16];
  __shared__ alignas(16) __nv_bfloat16 b_s[8][16];
  __shared__ alignas(128) __nv_bfloat16 c_s[16][8];  // the output tile, staged for the TMA
  const int lane = threadIdx.x, g = lane / 4, t = lane % 4;
  const int row0 = blockIdx.y * 16, col0 = blockIdx.x * 8;
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  for (int k0 = 0; k0 < K; k0 += 16) {
    for (int e = lane; e < 256; e += 32) a_s[e / 16][e % 16] = A[(row0 + e / 16) * K + k0 + e % 16];
    for (int e = lane; e < 128; e += 32) b_s[e / 16][e % 16] = B[(col0 + e / 16) * K + k0 + e % 16];
    __syncwarp();
    const uint32_t a[4] = {*reinterpret_cast<const uint32_t*>(&a_s[g][2 * t]),
                           *reinterpret_cast<const uint32_t*>(&a_s[g + 8][2 * t]),
                           *reinterpret_cast<const uint32_t*>(&a_s[g][2 * t + 8]),
                           *reinterpret_cast<const uint32_t*>(&a_s[g + 8][2 * t + 8])};
    const uint32_t b[2] = {*reinterpret_cast<const uint32_t*>(&b_s[g][2 * t]),
                           *reinterpret_cast<const uint32_t*>(&b_s[g][2 * t + 8])};
    mma_16816(acc, a, b);
    __syncwarp();
  }
  // epilogue: registers -> shared memory ...
  c_s[g][2 * t] = __float2bfloat16(acc[0]);
  c_s[g][2 * t + 1] = __float2bfloat16(acc[1]);
  c_s[g + 8][2 * t] = __float2bfloat16(acc[2]);
  c_s[g + 8][2 * t + 1] = __float2bfloat16(acc[3]);
  // ... made visible to the async proxy the TMA reads with ...
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncwarp();
  if (lane == 0) {
    // ... and one bulk tensor store of the whole 16x8 box (x = column, y = row)
    const uint32_t src = static_cast<uint32_t>(__cvta_generic_to_shared(&c_s[0][0]));
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                 :: "l"(&c_map), "r"(col0), "r"(row0), "r"(src) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");  // c_s must outlive the read
  }
}

void launch_gemm_tile(const CUtensorMap& c_map, const __nv_bfloat16* A, const __nv_bfloat16* B, int M, int N,
                      int K, cudaStream_t stream) {
  gemm_tile<<<dim3(N / 8, M / 16), 32, 0, stream>>>(c_map, A, B, K);
}
"""
