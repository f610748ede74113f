"""persistent-tile-scheduler: a tiled SGEMM launched one CTA per tile → a persistent grid (as many
CTAs as fit on the GPU at once) whose CTAs walk the tiles with a grid stride, in a grouped
(L2-friendly) order.

Harness format: docs/harness.md. The CUDA sources ``before_cuda``/``after_cuda`` are the template
shown; ``before``/``after`` compile them (once, with ``torch.utils.cpp_extension.load_inline``)
and launch them. Importing this file compiles nothing.

C = A @ B in fp32 (A: M x K, B: K x N, row-major), 32 x 32 output tiles, one output per thread
(1,024 threads), any M, N, K (edges are masked). Both sides run the same tile body; the after
side launches SMs x (CTAs per SM from the occupancy calculator) CTAs and walks GROUP_M = 8 tile
rows column by column. Where persistence could pay: "short-k" (16,384 tiles of two K steps
each: a CTA launch and prologue per tile is a large share) and "square" (4,096 tiles, A and B
panels reused from L2 in the grouped order); "one-wave" (100 tiles, fewer than the SMs) is where
it cannot: the grid is the same 100 CTAs either way.
"""

import torch

from skel.skeletons.pairs.cuda import NEEDS, build

SHAPES = {
    "edge": dict(M=100, N=70, K=33),           # partial tiles on every side: checked, not timed
    "short-k": dict(M=4096, N=4096, K=64),
    "square": dict(M=2048, N=2048, K=2048),
    "one-wave": dict(M=320, N=320, K=4096),    # 10 x 10 tiles, one wave: nothing to schedule
}
CPU_SHAPES = ()
CHECK_ONLY = ("edge",)
CPU_SKIP = f"{NEEDS} (CUDA C++ built with torch.utils.cpp_extension.load_inline)"
DTYPES = ("float32",)
TOLERANCES = {"float32": (2e-5, 1e-4)}  # fp32 FMA sums in another order than the reference's; |C| ~ 1


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn(shape["M"], shape["K"], generator=g, device=device, dtype=torch.float32)
    b = torch.randn(shape["K"], shape["N"], generator=g, device=device, dtype=torch.float32) / shape["K"] ** 0.5
    return (a.to(dtype), b.to(dtype))


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=dtype, device=device),)


def reference(a, b):
    return (a @ b,)


def bytes_moved(shape, dtype):
    return 4 * (shape["M"] * shape["K"] + shape["K"] * shape["N"] + shape["M"] * shape["N"])


def flops(shape, dtype):
    return 2 * shape["M"] * shape["N"] * shape["K"]


before_cuda = r"""
#include <c10/cuda/CUDAStream.h>

constexpr int TILE = 32;

__global__ void sgemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                      int M, int N, int K) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  const int tm = blockIdx.y, tn = blockIdx.x;  // one CTA per output tile
  const int row = tm * TILE + threadIdx.y, col = tn * TILE + threadIdx.x;
  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    As[threadIdx.y][threadIdx.x] = (row < M && k0 + threadIdx.x < K) ? A[(int64_t)row * K + k0 + threadIdx.x] : 0.f;
    Bs[threadIdx.y][threadIdx.x] = (col < N && k0 + threadIdx.y < K) ? B[(int64_t)(k0 + threadIdx.y) * N + col] : 0.f;
    __syncthreads();
    for (int kk = 0; kk < TILE; ++kk) acc += As[threadIdx.y][kk] * Bs[kk][threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) C[(int64_t)row * N + col] = acc;
}

void matmul(torch::Tensor C, torch::Tensor A, torch::Tensor B) {
  const int M = A.size(0), K = A.size(1), N = B.size(1);
  const dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  sgemm<<<grid, dim3(TILE, TILE), 0, stream>>>(A.data_ptr<float>(), B.data_ptr<float>(), C.data_ptr<float>(),
                                               M, N, K);
}
"""

after_cuda = r"""
#include <c10/cuda/CUDAStream.h>

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
      As[threadIdx.y][threadIdx.x] = (row < M && k0 + threadIdx.x < K) ? A[(int64_t)row * K + k0 + threadIdx.x] : 0.f;
      Bs[threadIdx.y][threadIdx.x] = (col < N && k0 + threadIdx.y < K) ? B[(int64_t)(k0 + threadIdx.y) * N + col] : 0.f;
      __syncthreads();
      for (int kk = 0; kk < TILE; ++kk) acc += As[threadIdx.y][kk] * Bs[kk][threadIdx.x];
      __syncthreads();  // (also: every thread is done with the tiles before the next tile's loads)
    }
    if (row < M && col < N) C[(int64_t)row * N + col] = acc;
  }
}

void matmul(torch::Tensor C, torch::Tensor A, torch::Tensor B) {
  const int M = A.size(0), K = A.size(1), N = B.size(1);
  int device = 0, num_sms = 0, per_sm = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, device);
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, sgemm, TILE * TILE, 0);
  const int num_tiles = ((M + TILE - 1) / TILE) * ((N + TILE - 1) / TILE);
  const int grid = std::min(num_tiles, std::max(num_sms, 1) * std::max(per_sm, 1));  // every CTA resident at once
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  sgemm<<<grid, dim3(TILE, TILE), 0, stream>>>(A.data_ptr<float>(), B.data_ptr<float>(), C.data_ptr<float>(),
                                               M, N, K);
}
"""

SIGNATURE = "void matmul(torch::Tensor C, torch::Tensor A, torch::Tensor B)"


def _ext():
    return build("persistent_tile_scheduler", before_cuda, after_cuda, SIGNATURE)


def before(a, b, c):
    _ext().before(c, a, b)


def after(a, b, c):
    _ext().after(c, a, b)
