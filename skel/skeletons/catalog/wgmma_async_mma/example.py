"""wgmma-async-mma: a GEMM whose warps run `mma.sync.m16n8k16` on fragments loaded with `ldmatrix` →
one warpgroup-wide `wgmma.mma_async.m64n16k16` per K step, reading both operands from shared
memory through matrix descriptors, with the fence / commit_group / wait_group protocol.

A template only, not runnable here: there is no harness (no inputs, reference or launcher
that `skel verify` could run), and the after side needs an sm_90a GPU. Both sides stage the
tiles into the same 128-byte-swizzled shared-memory layout (the one WGMMA descriptors
describe, and the one `ldmatrix` reads without bank conflicts), so the diff is the MMA only.

Both sides compile on their own: `nvcc -arch=sm_90a -c` on a `.cu` file holding either
string (checked with CUDA 13.0). The WGMMA instructions sit under
`#ifdef __CUDA_ARCH_FEAT_SM90_ALL` because `-arch=sm_90a` also embeds generic compute_90 PTX,
which may not contain them.
"""

before_cuda = r"""
#include <cuda_bf16.h>
#include <cstdint>

constexpr int BLOCK_M = 64, BLOCK_N = 16, BLOCK_K = 64;  // one 128-byte swizzle atom of bf16 along K

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// element (row, col) of a K-major tile with 128-byte rows, 16-byte chunks XOR-swizzled by row % 8
__device__ __forceinline__ int sw128(int row, int col) {
    return row * 64 + ((((col / 8) ^ (row % 8)) * 8) | (col % 8));
}

// each thread copies 16-byte chunks of the A (64 x 64) and B (16 x 64) tiles into shared memory
__device__ __forceinline__ void load_tiles(__nv_bfloat16* smem_a, __nv_bfloat16* smem_b, const __nv_bfloat16* a,
                                           const __nv_bfloat16* b, int lda, int ldb) {
    for (int i = threadIdx.x; i < (BLOCK_M + BLOCK_N) * BLOCK_K / 8; i += 128) {
        const bool is_a = i < BLOCK_M * BLOCK_K / 8;
        const int j = is_a ? i : i - BLOCK_M * BLOCK_K / 8, row = j / 8, col = (j % 8) * 8;
        const uint4 v = *reinterpret_cast<const uint4*>(is_a ? a + row * lda + col : b + row * ldb + col);
        *reinterpret_cast<uint4*>((is_a ? smem_a : smem_b) + sw128(row, col)) = v;
    }
}

__device__ __forceinline__ void store_tile(__nv_bfloat16* d, const float (&acc)[8], int m0, int n0, int n) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row = m0 + warp * 16 + lane / 4;
    #pragma unroll
    for (int j = 0; j < BLOCK_N / 8; ++j) {
        const int col = n0 + j * 8 + (lane % 4) * 2;
        d[row * n + col] = __float2bfloat16(acc[4 * j + 0]);
        d[row * n + col + 1] = __float2bfloat16(acc[4 * j + 1]);
        d[(row + 8) * n + col] = __float2bfloat16(acc[4 * j + 2]);
        d[(row + 8) * n + col + 1] = __float2bfloat16(acc[4 * j + 3]);
    }
}

__device__ __forceinline__ void mma_m16n8k16(float* c, const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Each warp computes 16 rows x 16 columns with mma.sync, moving its fragments from shared
// memory into registers with ldmatrix first.
__global__ void __launch_bounds__(128)
gemm_kernel(const __nv_bfloat16* __restrict__ a, const __nv_bfloat16* __restrict__ b, __nv_bfloat16* __restrict__ d,
            int n, int k) {
    __shared__ __align__(1024) __nv_bfloat16 smem_a[BLOCK_M * BLOCK_K];
    __shared__ __align__(1024) __nv_bfloat16 smem_b[BLOCK_N * BLOCK_K];
    const int m0 = blockIdx.y * BLOCK_M, n0 = blockIdx.x * BLOCK_N;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    float acc[8] = {0.f};
    for (int k0 = 0; k0 < k; k0 += BLOCK_K) {
        load_tiles(smem_a, smem_b, a + m0 * k + k0, b + n0 * k + k0, k, k);
        __syncthreads();
        #pragma unroll
        for (int kk = 0; kk < BLOCK_K; kk += 16) {
            uint32_t af[4], bf[2];
            asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                         : "=r"(af[0]), "=r"(af[1]), "=r"(af[2]), "=r"(af[3])
                         : "r"(smem_u32(smem_a + sw128(warp * 16 + lane % 16, kk + (lane / 16) * 8))));
            #pragma unroll
            for (int j = 0; j < BLOCK_N / 8; ++j) {
                asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
                             : "=r"(bf[0]), "=r"(bf[1])
                             : "r"(smem_u32(smem_b + sw128(j * 8 + lane % 8, kk + (lane / 8 % 2) * 8))));
                mma_m16n8k16(acc + 4 * j, af, bf);
            }
        }
        __syncthreads();
    }
    store_tile(d, acc, m0, n0, n);
}
"""

after_cuda = r"""
#include <cuda_bf16.h>
#include <cstdint>

constexpr int BLOCK_M = 64, BLOCK_N = 16, BLOCK_K = 64;  // one 128-byte swizzle atom of bf16 along K

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// element (row, col) of a K-major tile with 128-byte rows, 16-byte chunks XOR-swizzled by row % 8
__device__ __forceinline__ int sw128(int row, int col) {
    return row * 64 + ((((col / 8) ^ (row % 8)) * 8) | (col % 8));
}

// each thread copies 16-byte chunks of the A (64 x 64) and B (16 x 64) tiles into shared memory
__device__ __forceinline__ void load_tiles(__nv_bfloat16* smem_a, __nv_bfloat16* smem_b, const __nv_bfloat16* a,
                                           const __nv_bfloat16* b, int lda, int ldb) {
    for (int i = threadIdx.x; i < (BLOCK_M + BLOCK_N) * BLOCK_K / 8; i += 128) {
        const bool is_a = i < BLOCK_M * BLOCK_K / 8;
        const int j = is_a ? i : i - BLOCK_M * BLOCK_K / 8, row = j / 8, col = (j % 8) * 8;
        const uint4 v = *reinterpret_cast<const uint4*>(is_a ? a + row * lda + col : b + row * ldb + col);
        *reinterpret_cast<uint4*>((is_a ? smem_a : smem_b) + sw128(row, col)) = v;
    }
}

__device__ __forceinline__ void store_tile(__nv_bfloat16* d, const float (&acc)[8], int m0, int n0, int n) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row = m0 + warp * 16 + lane / 4;
    #pragma unroll
    for (int j = 0; j < BLOCK_N / 8; ++j) {
        const int col = n0 + j * 8 + (lane % 4) * 2;
        d[row * n + col] = __float2bfloat16(acc[4 * j + 0]);
        d[row * n + col + 1] = __float2bfloat16(acc[4 * j + 1]);
        d[(row + 8) * n + col] = __float2bfloat16(acc[4 * j + 2]);
        d[(row + 8) * n + col + 1] = __float2bfloat16(acc[4 * j + 3]);
    }
}

// K-major operand, 128-byte swizzle, 8-row atoms 1024 bytes apart
__device__ __forceinline__ uint64_t sw128_desc(const void* p) {
    return ((smem_u32(p) & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

// WGMMA exists only in the arch-specific sm_90a target; `-arch=sm_90a` also embeds generic
// compute_90 PTX, where it must not appear (CUTLASS guards it the same way)
__device__ __forceinline__ void wgmma_m64n16k16(float (&d)[8], uint64_t da, uint64_t db) {
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
    asm volatile("wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, 1, 1, 1, 0, 0;\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
                 : "l"(da), "l"(db));
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

// The four warps issue one 64x16x16 WGMMA per K step together, reading both operands from
// shared memory through descriptors: no ldmatrix, no fragments in registers.
__global__ void __launch_bounds__(128)
gemm_kernel(const __nv_bfloat16* __restrict__ a, const __nv_bfloat16* __restrict__ b, __nv_bfloat16* __restrict__ d,
            int n, int k) {
    __shared__ __align__(1024) __nv_bfloat16 smem_a[BLOCK_M * BLOCK_K];
    __shared__ __align__(1024) __nv_bfloat16 smem_b[BLOCK_N * BLOCK_K];
    const int m0 = blockIdx.y * BLOCK_M, n0 = blockIdx.x * BLOCK_N;
    float acc[8] = {0.f};
    for (int k0 = 0; k0 < k; k0 += BLOCK_K) {
        load_tiles(smem_a, smem_b, a + m0 * k + k0, b + n0 * k + k0, k, k);
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // make the stores visible to WGMMA
        __syncthreads();
        warpgroup_arrive();
        #pragma unroll
        for (int kk = 0; kk < BLOCK_K / 16; ++kk)  // 16 bf16 = 32 bytes = 2 descriptor units
            wgmma_m64n16k16(acc, sw128_desc(smem_a) + kk * 2, sw128_desc(smem_b) + kk * 2);
        warpgroup_commit_and_wait();
        __syncthreads();
    }
    store_tile(d, acc, m0, n0, n);
}
"""
