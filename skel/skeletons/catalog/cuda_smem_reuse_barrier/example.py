"""cuda-smem-reuse-barrier: a persistent top-p cut whose staged candidates are overwritten by the
next row while thread 0 still walks them → a `__syncthreads()` after the walk.

Harness format: docs/harness.md. The CUDA sources ``before_cuda``/``after_cuda`` are the template
shown; ``before``/``after`` compile them (once, with ``torch.utils.cpp_extension.load_inline``)
and launch them. Importing this file compiles nothing.

Each row holds 1,024 candidate weights in sampling order (a top-k's output) and a threshold; the
answer is how many leading candidates it takes for their sum to reach the threshold (the cut a
top-p sampler keeps), as lmdeploy's and flashinfer's sampling kernels compute it: the block stages
the row in `__shared__ float cand[1024]` (one candidate per thread), a barrier, then thread 0
walks the candidates in order. The grid is at most 128 blocks, each looping over rows.

The before side has no barrier after the walk: warps 1-31 go on to the next row, load it and
overwrite `cand` while thread 0 is still summing — its walk of 500 to 1,000 dependent steps takes
thousands of cycles, the other warps' next load one DRAM latency — so thread 0 adds the next row's
weights and returns a wrong cut for nearly every row a block handles after its first. The after
side puts `__syncthreads()` at the end of the trip. Weights are small integers and thresholds
integer sums, so both the fp32 walk and the reference are exact: "rows4k" and "rows32k" (FIXES,
checked only) show the before wrong and the after right; "one_pass" (128 rows, one per block: no
reuse) and "small" are right on both sides, "one_pass" timed to show what the barrier costs.
"""

import torch

from skel.skeletons.pairs.cuda import NEEDS, build

K = 1024  # candidates per row = threads per block
SHAPES = {
    "small": dict(R=37),
    "one_pass": dict(R=128),        # one row per block: nothing reused, both sides right (timed)
    "rows4k": dict(R=4096),         # 32 rows per block: the before's reuse races
    "rows32k": dict(R=32768),
}
CPU_SHAPES = ()
CHECK_ONLY = ("small", "rows4k", "rows32k")
FIXES = ("rows4k", "rows32k")       # where the before is wrong (write-after-read race on `cand`)
CPU_SKIP = f"{NEEDS} (CUDA C++ built with torch.utils.cpp_extension.load_inline)"
DTYPES = ("float32",)
TOLERANCES = {"float32": (0.0, 0.0)}  # integer counts from exact integer sums


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    w = torch.randint(1, 9, (shape["R"], K), generator=g, device=device).to(torch.float32)
    total = w.sum(dim=1)
    frac = torch.rand(shape["R"], generator=g, device=device) * 0.5 + 0.5  # cut in the second half
    t = torch.floor(total * frac).clamp(min=1.0)
    return (w.to(dtype), t.to(dtype))


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["R"], dtype=dtype, device=device),)


def reference(w, t):
    below = (torch.cumsum(w, dim=1) < t[:, None]).sum(dim=1)
    return ((below + 1).clamp(max=K).to(w.dtype),)


def bytes_moved(shape, dtype):
    return 4 * (shape["R"] * K + 2 * shape["R"])


def flops(shape, dtype):
    return shape["R"] * K


before_cuda = r"""
#include <c10/cuda/CUDAStream.h>

constexpr int kCand = 1024;  // candidates per row = threads per block

// cut[row] = the number of leading candidates whose sum reaches thresh[row] (kCand if none does)
__global__ void __launch_bounds__(1024) top_p_cut(const float* __restrict__ w, const float* __restrict__ thresh,
                                                  float* __restrict__ cut, int rows) {
  __shared__ float cand[1024];
  for (int row = blockIdx.x; row < rows; row += gridDim.x) {
    cand[threadIdx.x] = w[(int64_t)row * kCand + threadIdx.x];
    __syncthreads();
    if (threadIdx.x == 0) {
      const float t = thresh[row];
      float acc = 0.f;
      int n = kCand;
      for (int i = 0; i < kCand; ++i) {
        acc += cand[i];
        if (acc >= t) {
          n = i + 1;
          break;
        }
      }
      cut[row] = float(n);
    }
  }
}

void cut_rows(torch::Tensor cut, torch::Tensor w, torch::Tensor thresh) {
  TORCH_CHECK(w.is_contiguous() && w.size(1) == kCand, "rows of 1024 contiguous candidates");
  const int rows = w.size(0);
  const int blocks = std::min(rows, 128);
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  top_p_cut<<<blocks, kCand, 0, stream>>>(w.data_ptr<float>(), thresh.data_ptr<float>(), cut.data_ptr<float>(), rows);
}
"""

after_cuda = r"""
#include <c10/cuda/CUDAStream.h>

constexpr int kCand = 1024;  // candidates per row = threads per block

// cut[row] = the number of leading candidates whose sum reaches thresh[row] (kCand if none does)
__global__ void __launch_bounds__(1024) top_p_cut(const float* __restrict__ w, const float* __restrict__ thresh,
                                                  float* __restrict__ cut, int rows) {
  __shared__ float cand[1024];
  for (int row = blockIdx.x; row < rows; row += gridDim.x) {
    cand[threadIdx.x] = w[(int64_t)row * kCand + threadIdx.x];
    __syncthreads();
    if (threadIdx.x == 0) {
      const float t = thresh[row];
      float acc = 0.f;
      int n = kCand;
      for (int i = 0; i < kCand; ++i) {
        acc += cand[i];
        if (acc >= t) {
          n = i + 1;
          break;
        }
      }
      cut[row] = float(n);
    }
    __syncthreads();  // thread 0 has walked `cand`: the next row may overwrite it
  }
}

void cut_rows(torch::Tensor cut, torch::Tensor w, torch::Tensor thresh) {
  TORCH_CHECK(w.is_contiguous() && w.size(1) == kCand, "rows of 1024 contiguous candidates");
  const int rows = w.size(0);
  const int blocks = std::min(rows, 128);
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  top_p_cut<<<blocks, kCand, 0, stream>>>(w.data_ptr<float>(), thresh.data_ptr<float>(), cut.data_ptr<float>(), rows);
}
"""

SIGNATURE = "void cut_rows(torch::Tensor cut, torch::Tensor w, torch::Tensor thresh)"


def _ext():
    return build("cuda_smem_reuse_barrier", before_cuda, after_cuda, SIGNATURE)


def before(w, t, cut):
    _ext().before(cut, w, t)


def after(w, t, cut):
    _ext().after(cut, w, t)
