"""cuda-syncwarp-warp-private: per-warp 32 x 32 tile transposes staged in shared memory with a
`__syncthreads()` per phase → `__syncwarp()`.

Harness format: docs/harness.md. The CUDA sources ``before_cuda``/``after_cuda`` are the template
shown; ``before``/``after`` compile them (once, with ``torch.utils.cpp_extension.load_inline``)
and launch them. Importing this file compiles nothing.

y[t] = x[t].T for a batch of T fp32 32 x 32 tiles (the shape of a per-warp re-layout in MoE and
quantisation kernels). A block of 8 warps walks the batch in a grid-stride loop; each warp loads
one tile into its own slice `tile[warp]` (padded to 33 columns: no bank conflicts on the column
reads), waits, writes the transposed tile, waits again before the next tile overwrites the slice.
The before side waits with `__syncthreads()`, so its loop must be uniform over the block (a
barrier under a per-warp trip count is undefined behaviour) and all 8 warps advance together,
each trip as slow as the block's slowest load. The after side waits with `__syncwarp()`: each
warp has its own trip count and runs ahead of the others, overlapping its loads with their stores.
Both write the same bits (a copy). Expected, not measured where it was written (no GPU there): the
after side closer to copy bandwidth on "batch64k" (512 MB moved) and "batch16k"; "small" (fewer
tiles than warps in the last trip) is checked only.
"""

import torch

from skel.skeletons.pairs.cuda import NEEDS, build

SHAPES = {
    "small": dict(T=37),
    "batch16k": dict(T=16384),
    "batch64k": dict(T=65536),
}
CPU_SHAPES = ()
CHECK_ONLY = ("small",)
CPU_SKIP = f"{NEEDS} (CUDA C++ built with torch.utils.cpp_extension.load_inline)"
DTYPES = ("float32",)
TOLERANCES = {"float32": (0.0, 0.0)}  # a copy: exact


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    return (torch.randn(shape["T"], 32, 32, generator=g, device=device, dtype=torch.float32).to(dtype),)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["T"], 32, 32, dtype=dtype, device=device),)


def reference(x):
    return (x.transpose(1, 2).contiguous(),)


def bytes_moved(shape, dtype):
    return 2 * shape["T"] * 32 * 32 * 4


def flops(shape, dtype):
    return 0


before_cuda = r"""
#include <c10/cuda/CUDAStream.h>

constexpr int kWarps = 8;  // warps per block: 256 threads

// y[t] = x[t]^T for T tiles of 32 x 32 floats; warp w of a block handles tile base + w.
__global__ void __launch_bounds__(256) tile_transpose(const float* __restrict__ x, float* __restrict__ y,
                                                             int tiles) {
  __shared__ float tile[8][32][33];  // kWarps slices
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  // the loop is uniform over the block: every warp must reach both barriers on every trip
  for (int base = blockIdx.x * kWarps; base < tiles; base += gridDim.x * kWarps) {
    const int t = base + warp;
    if (t < tiles) {
      const float* src = x + (int64_t)t * 1024;
#pragma unroll 8
      for (int r = 0; r < 32; ++r) tile[warp][r][lane] = src[r * 32 + lane];
    }
    __syncthreads();
    if (t < tiles) {
      float* dst = y + (int64_t)t * 1024;
#pragma unroll 8
      for (int r = 0; r < 32; ++r) dst[r * 32 + lane] = tile[warp][lane][r];
    }
    __syncthreads();
  }
}

void transpose(torch::Tensor y, torch::Tensor x) {
  TORCH_CHECK(x.is_contiguous() && y.is_contiguous(), "contiguous tensors only");
  const int tiles = x.size(0);
  int dev = 0, sms = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  const int blocks = std::max(1, std::min((tiles + kWarps - 1) / kWarps, sms * 4));
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  tile_transpose<<<blocks, kWarps * 32, 0, stream>>>(x.data_ptr<float>(), y.data_ptr<float>(), tiles);
}
"""

after_cuda = r"""
#include <c10/cuda/CUDAStream.h>

constexpr int kWarps = 8;  // warps per block: 256 threads

// y[t] = x[t]^T for T tiles of 32 x 32 floats; warp w of a block handles tile base + w.
// Only the warp itself touches tile[warp]: a warp barrier orders it, and each warp keeps its own
// trip count.
__global__ void __launch_bounds__(256) tile_transpose(const float* __restrict__ x, float* __restrict__ y,
                                                             int tiles) {
  __shared__ float tile[8][32][33];  // kWarps slices
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  for (int t = blockIdx.x * kWarps + warp; t < tiles; t += gridDim.x * kWarps) {
    const float* src = x + (int64_t)t * 1024;
#pragma unroll 8
    for (int r = 0; r < 32; ++r) tile[warp][r][lane] = src[r * 32 + lane];
    __syncwarp();
    float* dst = y + (int64_t)t * 1024;
#pragma unroll 8
    for (int r = 0; r < 32; ++r) dst[r * 32 + lane] = tile[warp][lane][r];
    __syncwarp();
  }
}

void transpose(torch::Tensor y, torch::Tensor x) {
  TORCH_CHECK(x.is_contiguous() && y.is_contiguous(), "contiguous tensors only");
  const int tiles = x.size(0);
  int dev = 0, sms = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  const int blocks = std::max(1, std::min((tiles + kWarps - 1) / kWarps, sms * 4));
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  tile_transpose<<<blocks, kWarps * 32, 0, stream>>>(x.data_ptr<float>(), y.data_ptr<float>(), tiles);
}
"""

SIGNATURE = "void transpose(torch::Tensor y, torch::Tensor x)"


def _ext():
    return build("cuda_syncwarp_warp_private", before_cuda, after_cuda, SIGNATURE)


def before(x, y):
    _ext().before(y, x)


def after(x, y):
    _ext().after(y, x)
