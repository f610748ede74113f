"""launch-bounds-occupancy: a register-tiled SGEMM always launched with 256 threads → the same
kernel with `__launch_bounds__(256, 4)`.

A template only: the CUDA sources below are what `skel skeletons show` / `skel suggest` print
(`before_cuda` → `after_cuda`); there is no harness, so this pair is not run or timed here.
Both sides compile with `nvcc -arch=sm_90a -c`. With nvcc 13.0 for sm_90a, `-Xptxas -v`
reports 76 registers for the before side (3 CTAs of 256 threads per SM) and 63 registers with
no spills for the after side (4 CTAs per SM). The same bound with minBlocks 1 or 2 gives 86
registers (a bound can also *raise* the count), and with 5 it gives 48 registers and 48 bytes
of spill stores: check the spills before keeping a bound.
"""

before_cuda = r"""
#include <cuda_runtime.h>

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

void launch_sgemm_reg_tile(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
  sgemm_reg_tile<<<dim3(N / BN, M / BM), kThreads, 0, stream>>>(A, B, C, M, N, K);
}
"""

after_cuda = r"""
#include <cuda_runtime.h>

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

void launch_sgemm_reg_tile(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
  sgemm_reg_tile<<<dim3(N / BN, M / BM), kThreads, 0, stream>>>(A, B, C, M, N, K);
}
"""
