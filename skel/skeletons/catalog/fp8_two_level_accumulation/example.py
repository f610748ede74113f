"""fp8-two-level-accumulation: an FP8 WGMMA GEMM that accumulates the whole K loop in the tensor
cores' accumulator → one that restarts the WGMMA accumulator every K block (128) and adds it
into an FP32 register accumulator on the CUDA cores (DeepGEMM's "promotion").

A template only, not runnable here: there is no harness (no inputs, reference or launcher
that `skel verify` could run), the kernels need an sm_90a GPU, and what the change buys is
accuracy at large K (the relative error against an FP32 reference), not time — measuring it
takes a K sweep on Hopper hardware. The tensor-wise scale `scale_ab` keeps the diff to the
promotion itself; block-wise scales multiply into the same FMA (see the after kernel's comment).

Both sides compile on their own: `nvcc -arch=sm_90a -c` on a `.cu` file holding either
string (checked with CUDA 13.0). The WGMMA instructions sit under
`#ifdef __CUDA_ARCH_FEAT_SM90_ALL` because `-arch=sm_90a` also embeds generic compute_90 PTX,
which may not contain them.
"""

before_cuda = r"""
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cstdint>

constexpr int BLOCK_M = 64, BLOCK_N = 16, BLOCK_K = 128;  // one 128-byte swizzle atom of fp8 along K

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// byte (row, col) of a K-major tile with 128-byte rows, 16-byte chunks XOR-swizzled by row % 8
__device__ __forceinline__ int sw128(int row, int col) {
    return row * 128 + ((((col / 16) ^ (row % 8)) * 16) | (col % 16));
}

__device__ __forceinline__ void load_tiles(__nv_fp8_e4m3* smem_a, __nv_fp8_e4m3* smem_b, const __nv_fp8_e4m3* a,
                                           const __nv_fp8_e4m3* b, int lda, int ldb) {
    for (int i = threadIdx.x; i < (BLOCK_M + BLOCK_N) * BLOCK_K / 16; i += 128) {
        const bool is_a = i < BLOCK_M * BLOCK_K / 16;
        const int j = is_a ? i : i - BLOCK_M * BLOCK_K / 16, row = j / 8, col = (j % 8) * 16;
        const uint4 v = *reinterpret_cast<const uint4*>(is_a ? a + row * lda + col : b + row * ldb + col);
        *reinterpret_cast<uint4*>((is_a ? smem_a : smem_b) + sw128(row, col)) = v;
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // generic-proxy stores -> WGMMA reads
}

// K-major operand, 128-byte swizzle, 8-row atoms 1024 bytes apart
__device__ __forceinline__ uint64_t sw128_desc(const void* p) {
    return ((smem_u32(p) & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

// D (64x16 fp32, 8 per thread) = A(64x32 e4m3) * B(32x16 e4m3) + (scale_d ? D : 0).
// WGMMA exists only in the arch-specific sm_90a target; `-arch=sm_90a` also embeds generic
// compute_90 PTX, where it must not appear (CUTLASS guards it the same way).
__device__ __forceinline__ void wgmma_m64n16k32_e4m3(float (&d)[8], uint64_t da, uint64_t db, bool scale_d) {
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e4m3 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
                 : "l"(da), "l"(db), "r"(static_cast<int>(scale_d)));
#endif
}

__device__ __forceinline__ void warpgroup_arrive() {
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#endif
}

__device__ __forceinline__ void warpgroup_commit_and_wait() {
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#endif
}

__device__ __forceinline__ void store_tile(__nv_bfloat16* d, const float (&acc)[8], float scale, int m0, int n0,
                                           int n) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row = m0 + warp * 16 + lane / 4;
    #pragma unroll
    for (int j = 0; j < BLOCK_N / 8; ++j) {
        const int col = n0 + j * 8 + (lane % 4) * 2;
        d[row * n + col] = __float2bfloat16(acc[4 * j + 0] * scale);
        d[row * n + col + 1] = __float2bfloat16(acc[4 * j + 1] * scale);
        d[(row + 8) * n + col] = __float2bfloat16(acc[4 * j + 2] * scale);
        d[(row + 8) * n + col + 1] = __float2bfloat16(acc[4 * j + 3] * scale);
    }
}

// The tensor cores sum the whole K loop into one accumulator: on Hopper their FP8
// accumulation keeps ~14 mantissa bits, so the error grows with K.
__global__ void __launch_bounds__(128)
fp8_gemm_kernel(const __nv_fp8_e4m3* __restrict__ a, const __nv_fp8_e4m3* __restrict__ b,
                __nv_bfloat16* __restrict__ d, float scale_ab, int n, int k) {
    __shared__ __align__(1024) __nv_fp8_e4m3 smem_a[BLOCK_M * BLOCK_K];
    __shared__ __align__(1024) __nv_fp8_e4m3 smem_b[BLOCK_N * BLOCK_K];
    const int m0 = blockIdx.y * BLOCK_M, n0 = blockIdx.x * BLOCK_N;
    float accum[8] = {0.f};
    for (int k0 = 0; k0 < k; k0 += BLOCK_K) {
        load_tiles(smem_a, smem_b, a + m0 * k + k0, b + n0 * k + k0, k, k);
        __syncthreads();
        warpgroup_arrive();
        #pragma unroll
        for (int kk = 0; kk < BLOCK_K / 32; ++kk)  // 32 fp8 = 32 bytes = 2 descriptor units
            wgmma_m64n16k32_e4m3(accum, sw128_desc(smem_a) + kk * 2, sw128_desc(smem_b) + kk * 2, true);
        warpgroup_commit_and_wait();
        __syncthreads();
    }
    store_tile(d, accum, scale_ab, m0, n0, n);
}
"""

after_cuda = r"""
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cstdint>

constexpr int BLOCK_M = 64, BLOCK_N = 16, BLOCK_K = 128;  // one 128-byte swizzle atom of fp8 along K

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// byte (row, col) of a K-major tile with 128-byte rows, 16-byte chunks XOR-swizzled by row % 8
__device__ __forceinline__ int sw128(int row, int col) {
    return row * 128 + ((((col / 16) ^ (row % 8)) * 16) | (col % 16));
}

__device__ __forceinline__ void load_tiles(__nv_fp8_e4m3* smem_a, __nv_fp8_e4m3* smem_b, const __nv_fp8_e4m3* a,
                                           const __nv_fp8_e4m3* b, int lda, int ldb) {
    for (int i = threadIdx.x; i < (BLOCK_M + BLOCK_N) * BLOCK_K / 16; i += 128) {
        const bool is_a = i < BLOCK_M * BLOCK_K / 16;
        const int j = is_a ? i : i - BLOCK_M * BLOCK_K / 16, row = j / 8, col = (j % 8) * 16;
        const uint4 v = *reinterpret_cast<const uint4*>(is_a ? a + row * lda + col : b + row * ldb + col);
        *reinterpret_cast<uint4*>((is_a ? smem_a : smem_b) + sw128(row, col)) = v;
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // generic-proxy stores -> WGMMA reads
}

// K-major operand, 128-byte swizzle, 8-row atoms 1024 bytes apart
__device__ __forceinline__ uint64_t sw128_desc(const void* p) {
    return ((smem_u32(p) & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

// D (64x16 fp32, 8 per thread) = A(64x32 e4m3) * B(32x16 e4m3) + (scale_d ? D : 0).
// WGMMA exists only in the arch-specific sm_90a target; `-arch=sm_90a` also embeds generic
// compute_90 PTX, where it must not appear (CUTLASS guards it the same way).
__device__ __forceinline__ void wgmma_m64n16k32_e4m3(float (&d)[8], uint64_t da, uint64_t db, bool scale_d) {
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e4m3 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
                 : "l"(da), "l"(db), "r"(static_cast<int>(scale_d)));
#endif
}

__device__ __forceinline__ void warpgroup_arrive() {
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#endif
}

__device__ __forceinline__ void warpgroup_commit_and_wait() {
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#endif
}

__device__ __forceinline__ void store_tile(__nv_bfloat16* d, const float (&acc)[8], float scale, int m0, int n0,
                                           int n) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row = m0 + warp * 16 + lane / 4;
    #pragma unroll
    for (int j = 0; j < BLOCK_N / 8; ++j) {
        const int col = n0 + j * 8 + (lane % 4) * 2;
        d[row * n + col] = __float2bfloat16(acc[4 * j + 0] * scale);
        d[row * n + col + 1] = __float2bfloat16(acc[4 * j + 1] * scale);
        d[(row + 8) * n + col] = __float2bfloat16(acc[4 * j + 2] * scale);
        d[(row + 8) * n + col + 1] = __float2bfloat16(acc[4 * j + 3] * scale);
    }
}

// The tensor cores sum one K block (128) at a time into `accum`; the CUDA cores add each
// block's result into the FP32 `final_accum` ("promotion"). With block-wise scales the
// per-block factor goes into the same FMA: final_accum[i] += scale_a[row][kb] * scale_b[kb] * accum[i].
__global__ void __launch_bounds__(128)
fp8_gemm_kernel(const __nv_fp8_e4m3* __restrict__ a, const __nv_fp8_e4m3* __restrict__ b,
                __nv_bfloat16* __restrict__ d, float scale_ab, int n, int k) {
    __shared__ __align__(1024) __nv_fp8_e4m3 smem_a[BLOCK_M * BLOCK_K];
    __shared__ __align__(1024) __nv_fp8_e4m3 smem_b[BLOCK_N * BLOCK_K];
    const int m0 = blockIdx.y * BLOCK_M, n0 = blockIdx.x * BLOCK_N;
    float accum[8], final_accum[8] = {0.f};
    for (int k0 = 0; k0 < k; k0 += BLOCK_K) {
        load_tiles(smem_a, smem_b, a + m0 * k + k0, b + n0 * k + k0, k, k);
        __syncthreads();
        warpgroup_arrive();
        #pragma unroll
        for (int kk = 0; kk < BLOCK_K / 32; ++kk)  // the first WGMMA of the block overwrites accum
            wgmma_m64n16k32_e4m3(accum, sw128_desc(smem_a) + kk * 2, sw128_desc(smem_b) + kk * 2, kk > 0);
        warpgroup_commit_and_wait();
        #pragma unroll
        for (int i = 0; i < 8; ++i)
            final_accum[i] += accum[i];
        __syncthreads();
    }
    store_tile(d, final_accum, scale_ab, m0, n0, n);
}
"""
