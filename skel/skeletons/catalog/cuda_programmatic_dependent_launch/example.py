"""cuda-programmatic-dependent-launch: a chain of small decode kernels (residual add + RMSNorm of
one row per CTA, L layers) launched plainly → launched with the PDL attribute, each kernel
loading its weights before it waits for its predecessor and reading the predecessor's output
only after the wait.

Harness format: docs/harness.md. The CUDA sources ``before_cuda``/``after_cuda`` are the template
shown; ``before``/``after`` compile them (once, with ``torch.utils.cpp_extension.load_inline``)
and launch them. Importing this file compiles nothing.

Layer l: r = h + r (the residual stream, written to ``res_out``), h = rmsnorm(r) * w[l]; the
hidden state h is ping-ponged between two scratch rows-by-hidden buffers, the last layer writes
``y``. Each kernel reads what the previous one wrote, so without PDL the GPU drains one grid,
then launches the next. MEASURE is "launch": per-call latency of the whole chain, captured in
a CUDA graph (as the Triton `launch-pdl` pair). The "prefill" shape is where it does not pay:
each kernel is long enough to hide the launch gap. hidden <= 4096 (1,024 threads x 4 values,
checked on the host), so D is FIXED. PDL needs sm_90+; without the attribute (or on older
GPUs) `cudaGridDependencySynchronize()` returns at once.
"""

import torch

from skel.skeletons.pairs.cuda import NEEDS, build

SHAPES = {
    "odd": dict(M=3, D=1000, L=3),             # hidden not a multiple of the block: checked, not timed
    "decode_b1": dict(M=1, D=4096, L=16),      # one token: one CTA per kernel, the launch gaps dominate
    "decode_b64": dict(M=64, D=4096, L=16),
    "prefill": dict(M=16384, D=4096, L=4),     # does not apply: long kernels hide the gap
}
CPU_SHAPES = ()
CHECK_ONLY = ("odd",)
FIXED = ("D",)  # hidden <= 4096: one row per CTA, 4 values per thread
MEASURE = "launch"
CPU_SKIP = f"{NEEDS} (CUDA C++ built with torch.utils.cpp_extension.load_inline)"
DTYPES = ("float32",)
TOLERANCES = {"float32": (2e-5, 2e-5)}  # rsqrtf and fp32 sums of squares over L layers
EPS = 1e-6  # the kernels' eps


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    M, D, L = shape["M"], shape["D"], shape["L"]
    x = torch.randn(M, D, generator=g, device=device, dtype=torch.float32)
    residual = torch.randn(M, D, generator=g, device=device, dtype=torch.float32)
    w = 1 + 0.1 * torch.randn(L, D, generator=g, device=device, dtype=torch.float32)
    return (x.to(dtype), residual.to(dtype), w.to(dtype))


def make_outputs(shape, dtype, device):
    M, D = shape["M"], shape["D"]
    return (torch.empty(M, D, dtype=dtype, device=device), torch.empty(M, D, dtype=dtype, device=device))


def reference(x, residual, w):
    h, r = x, residual
    for layer in range(w.shape[0]):
        r = h + r
        h = r * torch.rsqrt(r.pow(2).mean(dim=1, keepdim=True) + EPS) * w[layer]
    return (h, r)


def bytes_moved(shape, dtype):
    e = torch.tensor([], dtype=dtype).element_size()
    return shape["L"] * (4 * shape["M"] * shape["D"] + shape["D"]) * e


def flops(shape, dtype):
    return 5 * shape["L"] * shape["M"] * shape["D"]


before_cuda = r"""
#include <c10/cuda/CUDAStream.h>

constexpr int kThreads = 1024;
constexpr int VPT = 4;  // values per thread: hidden <= 4096

// r = x + res_in -> res_out; y = rmsnorm(r) * weight. One CTA per row. res_in may be res_out;
// x and res_in are another kernel's output, so not __restrict__ (no read-only-cache loads).
__global__ void add_rmsnorm(const float* x, const float* res_in, float* res_out,
                            const float* __restrict__ weight, float* __restrict__ y, int hidden, float eps) {
  __shared__ float warp_sums[32];
  __shared__ float inv_rms;
  const int64_t base = (int64_t)blockIdx.x * hidden;
  float w[VPT], v[VPT], ss = 0.f;
  for (int j = 0; j < VPT; ++j) {
    const int d = threadIdx.x + j * kThreads;
    w[j] = d < hidden ? weight[d] : 0.f;
    v[j] = d < hidden ? x[base + d] + res_in[base + d] : 0.f;  // x, res_in: the previous kernel's output
    ss += v[j] * v[j];
  }
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = ss;
  __syncthreads();
  if (threadIdx.x < 32) {
    ss = threadIdx.x < kThreads / 32 ? warp_sums[threadIdx.x] : 0.f;
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if (threadIdx.x == 0) inv_rms = rsqrtf(ss / hidden + eps);
  }
  __syncthreads();
  for (int j = 0; j < VPT; ++j) {
    const int d = threadIdx.x + j * kThreads;
    if (d < hidden) {
      res_out[base + d] = v[j];
      y[base + d] = v[j] * inv_rms * w[j];
    }
  }
}

// L layers; the hidden state ping-pongs between the two halves of tmp, the last layer writes y
void rmsnorm_chain(torch::Tensor y, torch::Tensor res_out, torch::Tensor x, torch::Tensor res_in,
                   torch::Tensor w, torch::Tensor tmp) {
  const int rows = x.size(0), hidden = x.size(1), layers = w.size(0);
  TORCH_CHECK(hidden <= VPT * kThreads, "hidden must be <= ", VPT * kThreads);
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  const float* h = x.data_ptr<float>();
  const float* r = res_in.data_ptr<float>();
  for (int l = 0; l < layers; ++l) {
    float* out = l == layers - 1 ? y.data_ptr<float>() : tmp.data_ptr<float>() + (int64_t)(l % 2) * rows * hidden;
    add_rmsnorm<<<rows, kThreads, 0, stream>>>(h, r, res_out.data_ptr<float>(),
                                               w.data_ptr<float>() + (int64_t)l * hidden, out, hidden, 1e-6f);
    h = out;
    r = res_out.data_ptr<float>();
  }
}
"""

after_cuda = r"""
#include <c10/cuda/CUDAStream.h>

constexpr int kThreads = 1024;
constexpr int VPT = 4;  // values per thread: hidden <= 4096

// r = x + res_in -> res_out; y = rmsnorm(r) * weight. One CTA per row. res_in may be res_out;
// x and res_in are another kernel's output, so not __restrict__ (no read-only-cache loads).
__global__ void add_rmsnorm(const float* x, const float* res_in, float* res_out,
                            const float* __restrict__ weight, float* __restrict__ y, int hidden, float eps) {
  __shared__ float warp_sums[32];
  __shared__ float inv_rms;
  const int64_t base = (int64_t)blockIdx.x * hidden;
  float w[VPT], v[VPT], ss = 0.f;
  for (int j = 0; j < VPT; ++j) {  // the weight is nobody's output: load it before waiting
    const int d = threadIdx.x + j * kThreads;
    w[j] = d < hidden ? weight[d] : 0.f;
  }
  cudaGridDependencySynchronize();  // griddepcontrol.wait: the previous kernel is complete, its writes visible
  for (int j = 0; j < VPT; ++j) {
    const int d = threadIdx.x + j * kThreads;
    v[j] = d < hidden ? x[base + d] + res_in[base + d] : 0.f;
    ss += v[j] * v[j];
  }
  cudaTriggerProgrammaticLaunchCompletion();  // griddepcontrol.launch_dependents: the next kernel may start
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = ss;
  __syncthreads();
  if (threadIdx.x < 32) {
    ss = threadIdx.x < kThreads / 32 ? warp_sums[threadIdx.x] : 0.f;
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if (threadIdx.x == 0) inv_rms = rsqrtf(ss / hidden + eps);
  }
  __syncthreads();
  for (int j = 0; j < VPT; ++j) {
    const int d = threadIdx.x + j * kThreads;
    if (d < hidden) {
      res_out[base + d] = v[j];
      y[base + d] = v[j] * inv_rms * w[j];
    }
  }
}

// L layers; the hidden state ping-pongs between the two halves of tmp, the last layer writes y
void rmsnorm_chain(torch::Tensor y, torch::Tensor res_out, torch::Tensor x, torch::Tensor res_in,
                   torch::Tensor w, torch::Tensor tmp) {
  const int rows = x.size(0), hidden = x.size(1), layers = w.size(0);
  TORCH_CHECK(hidden <= VPT * kThreads, "hidden must be <= ", VPT * kThreads);
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(rows);
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = 0;
  cfg.stream = c10::cuda::getCurrentCUDAStream();
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  const float* h = x.data_ptr<float>();
  const float* r = res_in.data_ptr<float>();
  for (int l = 0; l < layers; ++l) {
    float* out = l == layers - 1 ? y.data_ptr<float>() : tmp.data_ptr<float>() + (int64_t)(l % 2) * rows * hidden;
    const cudaError_t err = cudaLaunchKernelEx(&cfg, add_rmsnorm, h, r, res_out.data_ptr<float>(),
                                               (const float*)w.data_ptr<float>() + (int64_t)l * hidden, out, hidden,
                                               1e-6f);
    TORCH_CHECK(err == cudaSuccess, "cudaLaunchKernelEx: ", cudaGetErrorString(err));
    h = out;
    r = res_out.data_ptr<float>();
  }
}
"""

SIGNATURE = ("void rmsnorm_chain(torch::Tensor y, torch::Tensor res_out, torch::Tensor x, torch::Tensor res_in, "
             "torch::Tensor w, torch::Tensor tmp)")


def _ext():
    return build("cuda_programmatic_dependent_launch", before_cuda, after_cuda, SIGNATURE)


def _scratch(x):
    return torch.empty((2, *x.shape), dtype=x.dtype, device=x.device)  # the ping-pong hidden state


def before(x, residual, w, y, res_out):
    _ext().before(y, res_out, x, residual, w, _scratch(x))


def after(x, residual, w, y, res_out):
    _ext().after(y, res_out, x, residual, w, _scratch(x))
