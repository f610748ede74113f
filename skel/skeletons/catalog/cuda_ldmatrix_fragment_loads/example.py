"""cuda-ldmatrix-fragment-loads: an fp16 `mma.sync` GEMM whose operand fragments are read from
shared memory with four 32-bit loads per thread per 16x16 tile → one `ldmatrix.x4` per tile.

Harness format: docs/harness.md. The CUDA sources ``before_cuda``/``after_cuda`` are the template
shown; ``before``/``after`` compile them (once, with ``torch.utils.cpp_extension.load_inline``)
and launch them. Importing this file compiles nothing.

C = A @ B^T in fp16 with fp32 accumulation (A: M x K, B: N x K, both K-contiguous: the `row.col`
operands of `mma.sync.aligned.m16n8k16`). A block of 4 warps computes a 128 x 128 tile, each warp
64 x 64 (4 x 8 MMA tiles), over K in steps of 32 staged in shared memory (rows padded by 8
halves: 80 bytes, so both the 32-bit loads and `ldmatrix`'s 16-byte row reads are free of bank
conflicts — the pair differs only in how the fragments are loaded). Per warp and k16 step the
before side issues 16 loads for A (4 tiles x 4 registers, each a `uint32_t` at row lane/4,
column 2 (lane % 4)) and 16 for B (8 tiles x 2); the after side issues 4 `ldmatrix.x4` for A
and 4 for B (two n8 tiles each): 8 shared-load instructions instead of 32 for the same 32
MMAs, and one address per lane instead of four. The global → shared copies are plain 16-byte
loads, single-buffered, the same on both sides. Not measured here (no GPU on the machine that
wrote it); "small" is checked only.
"""

import torch

from skel.skeletons.pairs.cuda import NEEDS, build

SHAPES = {
    "small": dict(M=128, N=256, K=64),        # one block row: checked, not timed
    "square": dict(M=4096, N=4096, K=4096),
    "llama8b_up": dict(M=4096, N=14336, K=4096),  # a prefill of 4,096 tokens through the MLP up projection
}
CPU_SHAPES = ()
CHECK_ONLY = ("small",)
CPU_SKIP = f"{NEEDS} (CUDA C++ built with torch.utils.cpp_extension.load_inline)"
DTYPES = ("float16",)
TOLERANCES = {"float16": (1e-2, 1e-2)}  # fp32 accumulation over K, one fp16 rounding; |C| ~ 1


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn(shape["M"], shape["K"], generator=g, device=device, dtype=torch.float32)
    b = torch.randn(shape["N"], shape["K"], generator=g, device=device, dtype=torch.float32) / shape["K"] ** 0.5
    return (a.to(torch.float16), b.to(torch.float16))


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=torch.float16, device=device),)


def reference(a, b):
    return (a @ b.T,)


def bytes_moved(shape, dtype):
    return 2 * (shape["M"] * shape["K"] + shape["N"] * shape["K"] + shape["M"] * shape["N"])


def flops(shape, dtype):
    return 2 * shape["M"] * shape["N"] * shape["K"]


before_cuda = r"""
#include <cuda_fp16.h>
#include <c10/cuda/CUDAStream.h>

constexpr int BM = 128, BN = 128, BK = 32, PAD = 8, THREADS = 128;

__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
               "{%8, %9}, {%10, %11, %12, %13};\n"
               : "=f"(c[0]), "=f"(c[1]), "=f"(c[2]), "=f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
                 "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}

// C[M][N] = A[M][K] @ B[N][K]^T: 4 warps, each 64 x 64 of a 128 x 128 tile
__global__ void __launch_bounds__(THREADS) gemm_f16(const half* __restrict__ A, const half* __restrict__ B,
                                                    half* __restrict__ C, int M, int N, int K) {
  __shared__ __align__(16) half sA[BM][BK + PAD];
  __shared__ __align__(16) half sB[BN][BK + PAD];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = (warp / 2) * 64, wn = (warp % 2) * 64;
  const int g = lane / 4, t = lane % 4;  // the mma fragment layout: row g, column pair 2t
  const int64_t bm = (int64_t)blockIdx.y * BM, bn = (int64_t)blockIdx.x * BN;
  float acc[4][8][4] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {  // 128 rows x 4 chunks of 8 halves, for A and B
      const int idx = tid + i * THREADS, r = idx / 4, ch = (idx % 4) * 8;
      *reinterpret_cast<uint4*>(&sA[r][ch]) = *reinterpret_cast<const uint4*>(A + (bm + r) * K + k0 + ch);
      *reinterpret_cast<uint4*>(&sB[r][ch]) = *reinterpret_cast<const uint4*>(B + (bn + r) * K + k0 + ch);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      uint32_t a[4][4], b[8][2];
      // each register: two halves at (row g, column 2t) of an 8x8 block, one 32-bit load apiece
#pragma unroll
      for (int mi = 0; mi < 4; ++mi) {
        const int r = wm + mi * 16 + g;
        a[mi][0] = *reinterpret_cast<const uint32_t*>(&sA[r][kk + 2 * t]);
        a[mi][1] = *reinterpret_cast<const uint32_t*>(&sA[r + 8][kk + 2 * t]);
        a[mi][2] = *reinterpret_cast<const uint32_t*>(&sA[r][kk + 2 * t + 8]);
        a[mi][3] = *reinterpret_cast<const uint32_t*>(&sA[r + 8][kk + 2 * t + 8]);
      }
#pragma unroll
      for (int ni = 0; ni < 8; ++ni) {
        const int n = wn + ni * 8 + g;
        b[ni][0] = *reinterpret_cast<const uint32_t*>(&sB[n][kk + 2 * t]);
        b[ni][1] = *reinterpret_cast<const uint32_t*>(&sB[n][kk + 2 * t + 8]);
      }
#pragma unroll
      for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int ni = 0; ni < 8; ++ni) mma_16816(acc[mi][ni], a[mi], b[ni]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int mi = 0; mi < 4; ++mi)
#pragma unroll
    for (int ni = 0; ni < 8; ++ni) {
      const int64_t r = bm + wm + mi * 16 + g, col = bn + wn + ni * 8 + 2 * t;
      *reinterpret_cast<half2*>(C + r * N + col) = __floats2half2_rn(acc[mi][ni][0], acc[mi][ni][1]);
      *reinterpret_cast<half2*>(C + (r + 8) * N + col) = __floats2half2_rn(acc[mi][ni][2], acc[mi][ni][3]);
    }
}

void gemm(torch::Tensor c, torch::Tensor a, torch::Tensor b) {
  TORCH_CHECK(a.is_contiguous() && b.is_contiguous() && c.is_contiguous(), "contiguous tensors only");
  const int M = a.size(0), K = a.size(1), N = b.size(0);
  TORCH_CHECK(M % BM == 0 && N % BN == 0 && K % BK == 0, "M, N multiples of 128 and K of 32");
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  gemm_f16<<<dim3(N / BN, M / BM), THREADS, 0, stream>>>(reinterpret_cast<const half*>(a.data_ptr()),
      reinterpret_cast<const half*>(b.data_ptr()), reinterpret_cast<half*>(c.data_ptr()), M, N, K);
}
"""

after_cuda = r"""
#include <cuda_fp16.h>
#include <c10/cuda/CUDAStream.h>

constexpr int BM = 128, BN = 128, BK = 32, PAD = 8, THREADS = 128;

__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
               "{%8, %9}, {%10, %11, %12, %13};\n"
               : "=f"(c[0]), "=f"(c[1]), "=f"(c[2]), "=f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
                 "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}

// four 8x8 b16 matrices from shared memory, one per register, in the mma fragment layout
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const half* smem_row) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem_row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}

// C[M][N] = A[M][K] @ B[N][K]^T: 4 warps, each 64 x 64 of a 128 x 128 tile
__global__ void __launch_bounds__(THREADS) gemm_f16(const half* __restrict__ A, const half* __restrict__ B,
                                                    half* __restrict__ C, int M, int N, int K) {
  __shared__ __align__(16) half sA[BM][BK + PAD];
  __shared__ __align__(16) half sB[BN][BK + PAD];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = (warp / 2) * 64, wn = (warp % 2) * 64;
  const int g = lane / 4, t = lane % 4;  // the mma fragment layout: row g, column pair 2t
  const int64_t bm = (int64_t)blockIdx.y * BM, bn = (int64_t)blockIdx.x * BN;
  float acc[4][8][4] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {  // 128 rows x 4 chunks of 8 halves, for A and B
      const int idx = tid + i * THREADS, r = idx / 4, ch = (idx % 4) * 8;
      *reinterpret_cast<uint4*>(&sA[r][ch]) = *reinterpret_cast<const uint4*>(A + (bm + r) * K + k0 + ch);
      *reinterpret_cast<uint4*>(&sB[r][ch]) = *reinterpret_cast<const uint4*>(B + (bn + r) * K + k0 + ch);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      uint32_t a[4][4], b[8][2];
      // one ldmatrix.x4 per 16x16 block: lane l gives the address of row l % 8 of matrix l / 8
#pragma unroll
      for (int mi = 0; mi < 4; ++mi) ldmatrix_x4(a[mi], &sA[wm + mi * 16 + lane % 16][kk + (lane / 16) * 8]);
#pragma unroll
      for (int np = 0; np < 4; ++np) {  // two n8 tiles: (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, ...)
        uint32_t r[4];
        ldmatrix_x4(r, &sB[wn + np * 16 + (lane / 16) * 8 + lane % 8][kk + ((lane / 8) % 2) * 8]);
        b[2 * np][0] = r[0];
        b[2 * np][1] = r[1];
        b[2 * np + 1][0] = r[2];
        b[2 * np + 1][1] = r[3];
      }
#pragma unroll
      for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int ni = 0; ni < 8; ++ni) mma_16816(acc[mi][ni], a[mi], b[ni]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int mi = 0; mi < 4; ++mi)
#pragma unroll
    for (int ni = 0; ni < 8; ++ni) {
      const int64_t r = bm + wm + mi * 16 + g, col = bn + wn + ni * 8 + 2 * t;
      *reinterpret_cast<half2*>(C + r * N + col) = __floats2half2_rn(acc[mi][ni][0], acc[mi][ni][1]);
      *reinterpret_cast<half2*>(C + (r + 8) * N + col) = __floats2half2_rn(acc[mi][ni][2], acc[mi][ni][3]);
    }
}

void gemm(torch::Tensor c, torch::Tensor a, torch::Tensor b) {
  TORCH_CHECK(a.is_contiguous() && b.is_contiguous() && c.is_contiguous(), "contiguous tensors only");
  const int M = a.size(0), K = a.size(1), N = b.size(0);
  TORCH_CHECK(M % BM == 0 && N % BN == 0 && K % BK == 0, "M, N multiples of 128 and K of 32");
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  gemm_f16<<<dim3(N / BN, M / BM), THREADS, 0, stream>>>(reinterpret_cast<const half*>(a.data_ptr()),
      reinterpret_cast<const half*>(b.data_ptr()), reinterpret_cast<half*>(c.data_ptr()), M, N, K);
}
"""

SIGNATURE = "void gemm(torch::Tensor c, torch::Tensor a, torch::Tensor b)"


def _ext():
    return build("cuda_ldmatrix_fragment_loads", before_cuda, after_cuda, SIGNATURE)


def before(a, b, c):
    _ext().before(c, a, b)


def after(a, b, c):
    _ext().after(c, a, b)
