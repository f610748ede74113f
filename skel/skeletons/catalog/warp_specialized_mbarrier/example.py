"""warp-specialized-mbarrier: a TMA ring in which every thread waits and computes (thread 0 also
issues the copies) → a producer warpgroup that only issues TMA copies and a consumer warpgroup
that only runs WGMMAs, handing stages back and forth through full/empty mbarriers, with
`setmaxnreg` moving registers from the producer to the consumer.

A template only, not runnable here: there is no harness (no inputs, reference or launcher
that `skel verify` could run). Running it needs an sm_90a GPU and host-built `CUtensorMap`s
(`cuTensorMapEncodeTiled`, 128-byte swizzle, boxes {64, 64} for A and {64, 16} for B) —
more set-up than a quick before/after pair. The tile is deliberately small (one 64x16
WGMMA tile per CTA, one consumer warpgroup) so that the change of structure is what shows.

Both sides compile on their own: `nvcc -arch=sm_90a -c` on a `.cu` file holding either
string (checked with CUDA 13.0). WGMMA and `setmaxnreg` sit under
`#ifdef __CUDA_ARCH_FEAT_SM90_ALL` because `-arch=sm_90a` also embeds generic compute_90 PTX,
which may not contain them.
"""

before_cuda = r"""
#include <cuda.h>
#include <cuda_bf16.h>
#include <cstdint>

constexpr int BLOCK_M = 64, BLOCK_N = 16, BLOCK_K = 64, kStages = 4;
constexpr uint32_t kStageBytes = (BLOCK_M + BLOCK_N) * BLOCK_K * 2;

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_u32(bar)), "r"(count));
}

__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem_u32(bar)), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem_u32(bar)) : "memory");
}

__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
    asm volatile("{\n.reg .pred p;\nWAIT_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                 "@!p bra WAIT_%=;\n}\n" :: "r"(smem_u32(bar)), "r"(parity) : "memory");
}

__device__ __forceinline__ void tma_load_2d(const CUtensorMap* map, uint64_t* bar, void* dst, int x, int y) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(smem_u32(dst)), "l"(map), "r"(x), "r"(y), "r"(smem_u32(bar)) : "memory");
}

// K-major operand, 128-byte swizzle, 8-row atoms 1024 bytes apart
__device__ __forceinline__ uint64_t sw128_desc(const void* p) {
    return ((smem_u32(p) & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

// WGMMA and setmaxnreg exist only in the arch-specific sm_90a target; `-arch=sm_90a` also
// embeds generic compute_90 PTX, where they must not appear (CUTLASS guards them the same way)
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

// this warpgroup's 64x16 accumulator tile (threads 0-127 of the warpgroup)
__device__ __forceinline__ void store_tile(__nv_bfloat16* d, const float (&acc)[8], int m0, int n0, int n) {
    const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
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

// A kStages-deep TMA ring in which every thread waits for the data and computes; thread 0
// also issues the copies, kStages - 1 K blocks ahead.
__global__ void __launch_bounds__(128, 1)
gemm_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
            __nv_bfloat16* __restrict__ d, int n, int k) {
    __shared__ __align__(1024) __nv_bfloat16 smem_a[kStages][BLOCK_M * BLOCK_K];
    __shared__ __align__(1024) __nv_bfloat16 smem_b[kStages][BLOCK_N * BLOCK_K];
    __shared__ __align__(8) uint64_t full[kStages];
    const int m0 = blockIdx.y * BLOCK_M, n0 = blockIdx.x * BLOCK_N, num_k_blocks = k / BLOCK_K;
    if (threadIdx.x == 0) {
        for (int s = 0; s < kStages; ++s)
            mbar_init(&full[s], 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        for (int kb = 0; kb < kStages - 1 && kb < num_k_blocks; ++kb) {
            mbar_expect_tx(&full[kb], kStageBytes);
            tma_load_2d(&map_a, &full[kb], smem_a[kb], kb * BLOCK_K, m0);
            tma_load_2d(&map_b, &full[kb], smem_b[kb], kb * BLOCK_K, n0);
        }
    }
    __syncthreads();

    float acc[8] = {0.f};
    for (int kb = 0; kb < num_k_blocks; ++kb) {
        const int s = kb % kStages, ahead = kb + kStages - 1;
        if (threadIdx.x == 0 && ahead < num_k_blocks) {  // refill the slot freed last iteration
            mbar_expect_tx(&full[ahead % kStages], kStageBytes);
            tma_load_2d(&map_a, &full[ahead % kStages], smem_a[ahead % kStages], ahead * BLOCK_K, m0);
            tma_load_2d(&map_b, &full[ahead % kStages], smem_b[ahead % kStages], ahead * BLOCK_K, n0);
        }
        mbar_wait(&full[s], (kb / kStages) & 1);
        wgmma_fence();
        #pragma unroll
        for (int kk = 0; kk < BLOCK_K / 16; ++kk)
            wgmma_m64n16k16(acc, sw128_desc(smem_a[s]) + kk * 2, sw128_desc(smem_b[s]) + kk * 2);
        wgmma_commit_and_wait();
        __syncthreads();  // slot s is free for the copy issued next iteration
    }
    store_tile(d, acc, m0, n0, n);
}
"""

after_cuda = r"""
#include <cuda.h>
#include <cuda_bf16.h>
#include <cstdint>

constexpr int BLOCK_M = 64, BLOCK_N = 16, BLOCK_K = 64, kStages = 4;
constexpr uint32_t kStageBytes = (BLOCK_M + BLOCK_N) * BLOCK_K * 2;

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_u32(bar)), "r"(count));
}

__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem_u32(bar)), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem_u32(bar)) : "memory");
}

__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
    asm volatile("{\n.reg .pred p;\nWAIT_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                 "@!p bra WAIT_%=;\n}\n" :: "r"(smem_u32(bar)), "r"(parity) : "memory");
}

__device__ __forceinline__ void tma_load_2d(const CUtensorMap* map, uint64_t* bar, void* dst, int x, int y) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(smem_u32(dst)), "l"(map), "r"(x), "r"(y), "r"(smem_u32(bar)) : "memory");
}

// K-major operand, 128-byte swizzle, 8-row atoms 1024 bytes apart
__device__ __forceinline__ uint64_t sw128_desc(const void* p) {
    return ((smem_u32(p) & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

// WGMMA and setmaxnreg exist only in the arch-specific sm_90a target; `-arch=sm_90a` also
// embeds generic compute_90 PTX, where they must not appear (CUTLASS guards them the same way)
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

// this warpgroup's 64x16 accumulator tile (threads 0-127 of the warpgroup)
__device__ __forceinline__ void store_tile(__nv_bfloat16* d, const float (&acc)[8], int m0, int n0, int n) {
    const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
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

__device__ __forceinline__ void setmaxnreg_dec_40() {
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
#endif
}

__device__ __forceinline__ void setmaxnreg_inc_232() {
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
#endif
}

// Warpgroup 1 produces (one thread issues every TMA copy as soon as a slot is empty),
// warpgroup 0 consumes (waits for a full slot, runs the WGMMAs, hands the slot back).
__global__ void __launch_bounds__(256, 1)
gemm_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
            __nv_bfloat16* __restrict__ d, int n, int k) {
    __shared__ __align__(1024) __nv_bfloat16 smem_a[kStages][BLOCK_M * BLOCK_K];
    __shared__ __align__(1024) __nv_bfloat16 smem_b[kStages][BLOCK_N * BLOCK_K];
    __shared__ __align__(8) uint64_t full[kStages], empty[kStages];
    const int m0 = blockIdx.y * BLOCK_M, n0 = blockIdx.x * BLOCK_N, num_k_blocks = k / BLOCK_K;
    const int warpgroup_idx = threadIdx.x / 128;
    if (threadIdx.x == 0) {
        for (int s = 0; s < kStages; ++s) {
            mbar_init(&full[s], 1);      // the producer's expect_tx arrival (+ the TMA bytes)
            mbar_init(&empty[s], 128);   // every consumer thread
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    if (warpgroup_idx == 1) {
        setmaxnreg_dec_40();  // the producer needs few registers: give them to the consumers
        if (threadIdx.x == 128) {
            for (int kb = 0; kb < num_k_blocks; ++kb) {
                const int s = kb % kStages;
                mbar_wait(&empty[s], ((kb / kStages) & 1) ^ 1);  // the first round passes at once
                mbar_expect_tx(&full[s], kStageBytes);
                tma_load_2d(&map_a, &full[s], smem_a[s], kb * BLOCK_K, m0);
                tma_load_2d(&map_b, &full[s], smem_b[s], kb * BLOCK_K, n0);
            }
        }
    } else {
        setmaxnreg_inc_232();
        float acc[8] = {0.f};
        for (int kb = 0; kb < num_k_blocks; ++kb) {
            const int s = kb % kStages;
            mbar_wait(&full[s], (kb / kStages) & 1);
            wgmma_fence();
            #pragma unroll
            for (int kk = 0; kk < BLOCK_K / 16; ++kk)
                wgmma_m64n16k16(acc, sw128_desc(smem_a[s]) + kk * 2, sw128_desc(smem_b[s]) + kk * 2);
            wgmma_commit_and_wait();
            mbar_arrive(&empty[s]);  // slot s may be refilled
        }
        store_tile(d, acc, m0, n0, n);
    }
}
"""
