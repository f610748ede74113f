"""warp-shuffle-reduction: row softmax whose block max/sum go through a shared-memory tree with a
``__syncthreads()`` per halving step → warp shuffles, one shared slot per warp, two barriers.

Harness format: docs/harness.md. The CUDA sources ``before_cuda``/``after_cuda`` are the template
shown; ``before``/``after`` compile them (once, with ``torch.utils.cpp_extension.load_inline``)
and launch them. Importing this file compiles nothing.
"""

import torch

from skel.skeletons.pairs.cuda import NEEDS, build

SHAPES = {
    "odd": dict(M=5, N=1001),             # a row shorter than the block, not a multiple of 32
    "short": dict(M=65536, N=1024),       # one element per thread: the reductions are the kernel
    "vocab-chunk": dict(M=16384, N=4096),
    "wide": dict(M=4096, N=32000),
    "huge": dict(M=65537, N=8192),        # past 2**31 bytes (fp32): 64-bit row offsets
}
CPU_SHAPES = ()
CHECK_ONLY = ("odd", "huge")
CPU_SKIP = f"{NEEDS} (CUDA C++ built with torch.utils.cpp_extension.load_inline)"
DTYPES = ("float32",)
TOLERANCES = {"float32": (1e-6, 2e-5)}  # __expf of arguments down to about -40
BLOCK = 1024  # threads per row; both reductions are over all of them


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    return ((torch.randn(shape["M"], shape["N"], generator=g, device=device, dtype=torch.float32) * 4).to(dtype),)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=dtype, device=device),)


def reference(x):
    return (torch.softmax(x, dim=-1),)


def bytes_moved(shape, dtype):
    return 2 * shape["M"] * shape["N"] * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 5 * shape["M"] * shape["N"]


before_cuda = r"""
#include <c10/cuda/CUDAStream.h>

constexpr int BLOCK = 1024;

// one block per row: max, then sum of exp, then normalise
__global__ void __launch_bounds__(BLOCK) softmax_kernel(float* __restrict__ out, const float* __restrict__ in, int n) {
  __shared__ float red[BLOCK];
  const int tid = threadIdx.x;
  const float* x = in + (int64_t)blockIdx.x * n;
  float* y = out + (int64_t)blockIdx.x * n;

  float m = -INFINITY;
  for (int i = tid; i < n; i += BLOCK) m = fmaxf(m, x[i]);
  red[tid] = m;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (tid < s) red[tid] = fmaxf(red[tid], red[tid + s]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();  // everyone has read red[0] before it is reused

  float l = 0.f;
  for (int i = tid; i < n; i += BLOCK) l += __expf(x[i] - m);
  red[tid] = l;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (tid < s) red[tid] += red[tid + s];
    __syncthreads();
  }
  const float inv = 1.f / red[0];

  for (int i = tid; i < n; i += BLOCK) y[i] = __expf(x[i] - m) * inv;
}

void softmax(torch::Tensor out, torch::Tensor in) {
  const int n = in.size(-1);
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  softmax_kernel<<<in.numel() / n, BLOCK, 0, stream>>>(out.data_ptr<float>(), in.data_ptr<float>(), n);
}
"""

after_cuda = r"""
#include <c10/cuda/CUDAStream.h>

constexpr int BLOCK = 1024;
constexpr int WARPS = BLOCK / 32;

// a tree over the 32 lanes of a warp in registers: no shared memory, no barrier
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, o));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
  return v;
}

// one block per row: max, then sum of exp, then normalise
__global__ void __launch_bounds__(BLOCK) softmax_kernel(float* __restrict__ out, const float* __restrict__ in, int n) {
  __shared__ float red[2][WARPS];  // one slot per warp; a second set so no barrier guards reuse
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const float* x = in + (int64_t)blockIdx.x * n;
  float* y = out + (int64_t)blockIdx.x * n;

  float m = -INFINITY;
  for (int i = tid; i < n; i += BLOCK) m = fmaxf(m, x[i]);
  m = warp_max(m);
  if (lane == 0) red[0][warp] = m;
  __syncthreads();
  m = warp_max(lane < WARPS ? red[0][lane] : -INFINITY);  // every warp reduces the 32 partials

  float l = 0.f;
  for (int i = tid; i < n; i += BLOCK) l += __expf(x[i] - m);
  l = warp_sum(l);
  if (lane == 0) red[1][warp] = l;
  __syncthreads();
  const float inv = 1.f / warp_sum(lane < WARPS ? red[1][lane] : 0.f);

  for (int i = tid; i < n; i += BLOCK) y[i] = __expf(x[i] - m) * inv;
}

void softmax(torch::Tensor out, torch::Tensor in) {
  const int n = in.size(-1);
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  softmax_kernel<<<in.numel() / n, BLOCK, 0, stream>>>(out.data_ptr<float>(), in.data_ptr<float>(), n);
}
"""

SIGNATURE = "void softmax(torch::Tensor out, torch::Tensor in)"


def _ext():
    return build("warp_shuffle_reduction", before_cuda, after_cuda, SIGNATURE)


def before(x, out):
    _ext().before(out, x)


def after(x, out):
    _ext().after(out, x)
