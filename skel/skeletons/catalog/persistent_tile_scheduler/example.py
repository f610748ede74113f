"""persistent-tile-scheduler: a tiled SGEMM launched one CTA per tile → a persistent grid over
SMs that walks the tiles in a grouped (L2-friendly) order.

A template only: the CUDA sources below are what `skel skeletons show` / `skel suggest` print
(`before_cuda` → `after_cuda`); there is no harness, so this pair is not run or timed here.
Both sides compile with `nvcc -arch=sm_90a -c`.
"""

before_cuda = r"""
#include <cuda_runtime.h>

constexpr int TILE = 32;

__global__ void sgemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                      int M, int N, int K) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  const int tm = blockIdx.y, tn = blockIdx.x;  // one CTA per output tile
  const int row = tm * TILE + threadIdx.y, col = tn * TILE + threadIdx.x;
  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    As[threadIdx.y][threadIdx.x] = (row < M && k0 + threadIdx.x < K) ? A[row * K + k0 + threadIdx.x] : 0.f;
    Bs[threadIdx.y][threadIdx.x] = (col < N && k0 + threadIdx.y < K) ? B[(k0 + threadIdx.y) * N + col] : 0.f;
    __syncthreads();
    for (int kk = 0; kk < TILE; ++kk) acc += As[threadIdx.y][kk] * Bs[kk][threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}

void launch_sgemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
  dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
  sgemm<<<grid, dim3(TILE, TILE), 0, stream>>>(A, B, C, M, N, K);
}
"""

after_cuda = r"""
#include <cuda_runtime.h>

constexpr int TILE = 32;
constexpr int GROUP_M = 8;  // tile rows walked together: their A and B panels stay in L2

__global__ void sgemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                      int M, int N, int K) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  const int tiles_m = (M + TILE - 1) / TILE, tiles_n = (N + TILE - 1) / TILE;
  const int num_tiles = tiles_m * tiles_n;
  for (int tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {  // persistent: a tile loop per CTA
    const int tiles_in_group = GROUP_M * tiles_n;
    const int first_m = (tile / tiles_in_group) * GROUP_M;
    const int group_rows = min(tiles_m - first_m, GROUP_M);
    const int tm = first_m + (tile % tiles_in_group) % group_rows;
    const int tn = (tile % tiles_in_group) / group_rows;
    const int row = tm * TILE + threadIdx.y, col = tn * TILE + threadIdx.x;
    float acc = 0.f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
      As[threadIdx.y][threadIdx.x] = (row < M && k0 + threadIdx.x < K) ? A[row * K + k0 + threadIdx.x] : 0.f;
      Bs[threadIdx.y][threadIdx.x] = (col < N && k0 + threadIdx.y < K) ? B[(k0 + threadIdx.y) * N + col] : 0.f;
      __syncthreads();
      for (int kk = 0; kk < TILE; ++kk) acc += As[threadIdx.y][kk] * Bs[kk][threadIdx.x];
      __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
  }
}

void launch_sgemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
  int device = 0, num_sms = 0, per_sm = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, device);
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, sgemm, TILE * TILE, 0);
  const int num_tiles = ((M + TILE - 1) / TILE) * ((N + TILE - 1) / TILE);
  const int grid = min(num_tiles, num_sms * (per_sm > 0 ? per_sm : 1));  // every CTA resident at once
  sgemm<<<grid, dim3(TILE, TILE), 0, stream>>>(A, B, C, M, N, K);
}
"""
