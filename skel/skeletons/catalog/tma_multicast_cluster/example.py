"""tma-multicast-cluster: a TMA-fed WGMMA GEMM whose CTAs each load their own copy of B → 2-CTA
clusters along M that load half of B each and multicast it into both CTAs' shared memory.

A template only, not runnable here: there is no harness (no inputs, reference or launcher
that `skel verify` could run). Running it needs an sm_90a GPU, host-built `CUtensorMap`s
(`cuTensorMapEncodeTiled` with 128-byte swizzle: box {64, 64} for A, {64, 16} for B before
and {64, 8} after) and a cluster launch — more set-up than a quick before/after pair.

Both sides compile on their own: `nvcc -arch=sm_90a -c` on a `.cu` file holding either
string (checked with CUDA 13.0). The WGMMA instructions sit under
`#ifdef __CUDA_ARCH_FEAT_SM90_ALL` because `-arch=sm_90a` also embeds generic compute_90 PTX,
which may not contain them; ptxas prints an advisory for `.multicast::cluster` in that
generic PTX, which is expected.
"""

before_cuda = r"""
#include <cuda.h>
#include <cuda_bf16.h>
#include <cstdint>

constexpr int BLOCK_M = 64, BLOCK_N = 16, BLOCK_K = 64;  // one 128-byte swizzle atom of bf16 along K

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
    asm volatile("{\n.reg .pred p;\nWAIT_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                 "@!p bra WAIT_%=;\n}\n" :: "r"(smem_u32(bar)), "r"(parity) : "memory");
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

__device__ __forceinline__ void wgmma_fence() {
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#endif
}

__device__ __forceinline__ void wgmma_commit_and_wait() {
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#endif
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

// Every CTA loads its own A tile (its rows) and its own copy of the B tile.
__global__ void __launch_bounds__(128, 1)
gemm_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
            __nv_bfloat16* __restrict__ d, int n, int k) {
    __shared__ __align__(1024) __nv_bfloat16 smem_a[BLOCK_M * BLOCK_K];
    __shared__ __align__(1024) __nv_bfloat16 smem_b[BLOCK_N * BLOCK_K];
    __shared__ __align__(8) uint64_t full;
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_u32(&full)));
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    const int m0 = blockIdx.y * BLOCK_M, n0 = blockIdx.x * BLOCK_N;
    float acc[8] = {0.f};
    for (int kb = 0; kb < k / BLOCK_K; ++kb) {
        if (threadIdx.x == 0) {
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                         :: "r"(smem_u32(&full)), "r"((BLOCK_M + BLOCK_N) * BLOCK_K * 2) : "memory");
            asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                         " [%0], [%1, {%2, %3}], [%4];"
                         :: "r"(smem_u32(smem_a)), "l"(&map_a), "r"(kb * BLOCK_K), "r"(m0), "r"(smem_u32(&full))
                         : "memory");
            asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                         " [%0], [%1, {%2, %3}], [%4];"
                         :: "r"(smem_u32(smem_b)), "l"(&map_b), "r"(kb * BLOCK_K), "r"(n0), "r"(smem_u32(&full))
                         : "memory");
        }
        mbar_wait(&full, kb & 1);
        wgmma_fence();
        #pragma unroll
        for (int kk = 0; kk < BLOCK_K / 16; ++kk)  // 16 bf16 = 32 bytes = 2 descriptor units
            wgmma_m64n16k16(acc, sw128_desc(smem_a) + kk * 2, sw128_desc(smem_b) + kk * 2);
        wgmma_commit_and_wait();
        __syncthreads();  // all reads of the tiles are done before the next copy overwrites them
    }
    store_tile(d, acc, m0, n0, n);
}
"""

after_cuda = r"""
#include <cuda.h>
#include <cuda_bf16.h>
#include <cstdint>

constexpr int BLOCK_M = 64, BLOCK_N = 16, BLOCK_K = 64;  // one 128-byte swizzle atom of bf16 along K

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
    asm volatile("{\n.reg .pred p;\nWAIT_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                 "@!p bra WAIT_%=;\n}\n" :: "r"(smem_u32(bar)), "r"(parity) : "memory");
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

__device__ __forceinline__ void wgmma_fence() {
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#endif
}

__device__ __forceinline__ void wgmma_commit_and_wait() {
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#endif
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

__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n"
                 "barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// Clusters of 2 CTAs along M share the B tile: each CTA loads its own A tile and half of B,
// multicasting that half into the shared memory of both CTAs (map_b's box is BLOCK_N / 2 rows).
__global__ void __launch_bounds__(128, 1)
gemm_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
            __nv_bfloat16* __restrict__ d, int n, int k) {
    __shared__ __align__(1024) __nv_bfloat16 smem_a[BLOCK_M * BLOCK_K];
    __shared__ __align__(1024) __nv_bfloat16 smem_b[BLOCK_N * BLOCK_K];
    __shared__ __align__(8) uint64_t full;
    uint32_t cta_rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(cta_rank));
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_u32(&full)));
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    cluster_sync();  // the peer's copies signal this CTA's barrier: it must exist first

    const int m0 = blockIdx.y * BLOCK_M, n0 = blockIdx.x * BLOCK_N;
    constexpr int kHalfN = BLOCK_N / 2;
    constexpr uint16_t kCtaMask = 0b11;
    float acc[8] = {0.f};
    for (int kb = 0; kb < k / BLOCK_K; ++kb) {
        if (threadIdx.x == 0) {
            // this CTA receives its A tile plus both halves of B
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                         :: "r"(smem_u32(&full)), "r"((BLOCK_M + BLOCK_N) * BLOCK_K * 2) : "memory");
            asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                         " [%0], [%1, {%2, %3}], [%4];"
                         :: "r"(smem_u32(smem_a)), "l"(&map_a), "r"(kb * BLOCK_K), "r"(m0), "r"(smem_u32(&full))
                         : "memory");
            asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                         " [%0], [%1, {%2, %3}], [%4], %5;"
                         :: "r"(smem_u32(smem_b + cta_rank * kHalfN * BLOCK_K)), "l"(&map_b), "r"(kb * BLOCK_K),
                            "r"(n0 + static_cast<int>(cta_rank) * kHalfN), "r"(smem_u32(&full)), "h"(kCtaMask)
                         : "memory");
        }
        mbar_wait(&full, kb & 1);
        wgmma_fence();
        #pragma unroll
        for (int kk = 0; kk < BLOCK_K / 16; ++kk)  // 16 bf16 = 32 bytes = 2 descriptor units
            wgmma_m64n16k16(acc, sw128_desc(smem_a) + kk * 2, sw128_desc(smem_b) + kk * 2);
        wgmma_commit_and_wait();
        cluster_sync();  // the next multicast writes into the peer's B tile too: both must be done with it
    }
    store_tile(d, acc, m0, n0, n);
}

// The cluster is a launch attribute (or `__cluster_dims__(1, 2, 1)` on the kernel).
cudaError_t launch_gemm(const CUtensorMap& map_a, const CUtensorMap& map_b, __nv_bfloat16* d,
                        int m, int n, int k, cudaStream_t stream) {
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(n / BLOCK_N, m / BLOCK_M);  // m / BLOCK_M must be even
    config.blockDim = dim3(128);
    config.stream = stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = 1;
    attr[0].val.clusterDim.y = 2;
    attr[0].val.clusterDim.z = 1;
    config.attrs = attr;
    config.numAttrs = 1;
    return cudaLaunchKernelEx(&config, gemm_kernel, map_a, map_b, d, n, k);
}
"""
