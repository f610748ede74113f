"""cuda-fp32-partial-accumulation: a GEMV's half2 running sum over all of K → half2 blocks of 8 flushed into fp32.

Harness format: docs/harness.md. The CUDA sources ``before_cuda``/``after_cuda`` are the template
shown; ``before``/``after`` compile them (once, with ``torch.utils.cpp_extension.load_inline``)
and launch them. Importing this file compiles nothing.

y = W x for one decode token (W: N x K fp16 row-major, x: K fp16, y: N fp32) on CUDA cores, one
warp per row, each lane reading 16 bytes of W and of x per step (8 halves as four half2). The
before side keeps each lane's sum in one `half2` for the whole row: K / 64 steps of four
`__hfma2` (448 products per fp16 lane at K = 28,672), converted to float only for the warp
reduction. The after side sums each step's 8 products in a `half2` started from zero (one
`__hmul2`, three `__hfma2`) and adds the two lanes into a float, the form of exllamav2's
`dot22_8_f`. The inputs are non-negative activations (ReLU-family MLPs, softmax probabilities)
against weights with a small positive mean, so the products mostly share a sign and the partial
sums grow along K: at |acc| ~ 1 the fp16 spacing is 2^-10 and every later product is rounded to
it. It is an accuracy skeleton: simulated in numpy (fp16 rounding after each fused add, 256 rows),
the before's worst error against float64 is ~0.015 (K = 14,336) and ~0.03 (K = 28,672) on |y| up
to ~30, the after's ~1e-3 — 15-28x smaller; not run on a GPU where this was written (none there).
Both read the same 16 bytes per lane per step; the after adds a conversion and two FADDs per 8
products, hidden under the memory time of a GEMV that streams W from HBM (470 MB at "llama70b").
"""

import torch

from skel.skeletons.pairs.cuda import NEEDS, build

SHAPES = {
    "small": dict(N=37, K=1032),                # partial block of rows, K/8 not a multiple of 32: checked only
    "llama8b_down": dict(N=4096, K=14336),      # Llama-3-8B MLP down projection, one token
    "llama70b_down": dict(N=8192, K=28672),     # Llama-3-70B MLP down projection, one token: 470 MB of W
}
CPU_SHAPES = ()
CHECK_ONLY = ("small",)
FIXED = ("K",)  # rows are read as 16-byte vectors: K stays a multiple of 8
CPU_SKIP = f"{NEEDS} (CUDA C++ built with torch.utils.cpp_extension.load_inline)"
DTYPES = ("float16",)
# admits the before's fp16 running sum (~0.03 worst on |y| ~ 30) so both sides are timed
TOLERANCES = {"float16": (5e-2, 5e-3)}


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    K = shape["K"]
    w = (torch.randn(shape["N"], K, generator=g, device=device) + 0.2) / K ** 0.5
    x = torch.randn(K, generator=g, device=device).abs()
    return (w.to(dtype), x.to(dtype))


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["N"], dtype=torch.float32, device=device),)


def reference(w, x):
    t = torch.float64 if w.dtype == torch.float64 else torch.float32  # the verifier hands float64 copies
    return (w.to(t) @ x.to(t),)


def bytes_moved(shape, dtype):
    return 2 * shape["N"] * shape["K"] + 2 * shape["K"] + 4 * shape["N"]


def flops(shape, dtype):
    return 2 * shape["N"] * shape["K"]


before_cuda = r"""
#include <cuda_fp16.h>
#include <c10/cuda/CUDAStream.h>

constexpr int kWarps = 8;  // rows per block, one warp each

__global__ void gemv_rows(const half* __restrict__ w, const half* __restrict__ x, float* __restrict__ y, int K, int N) {
  const int row = blockIdx.x * kWarps + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= N) return;
  const uint4* w8 = reinterpret_cast<const uint4*>(w + (size_t)row * K);
  const uint4* x8 = reinterpret_cast<const uint4*>(x);
  half2 acc = __float2half2_rn(0.f);  // the lane's running sum, in fp16, for the whole row
  for (int k8 = lane; k8 < K / 8; k8 += 32) {
    const uint4 wv = w8[k8], xv = x8[k8];
    const half2* w2 = reinterpret_cast<const half2*>(&wv);
    const half2* x2 = reinterpret_cast<const half2*>(&xv);
#pragma unroll
    for (int i = 0; i < 4; ++i) acc = __hfma2(w2[i], x2[i], acc);
  }
  float s = __low2float(acc) + __high2float(acc);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) y[row] = s;
}

void gemv(torch::Tensor y, torch::Tensor w, torch::Tensor x) {
  TORCH_CHECK(w.is_contiguous() && x.is_contiguous() && y.is_contiguous(), "contiguous tensors only");
  const int N = w.size(0), K = w.size(1);
  TORCH_CHECK(K % 8 == 0, "K a multiple of 8 (16-byte rows)");
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  gemv_rows<<<(N + kWarps - 1) / kWarps, 32 * kWarps, 0, stream>>>(
      reinterpret_cast<const half*>(w.data_ptr()), reinterpret_cast<const half*>(x.data_ptr()), y.data_ptr<float>(),
      K, N);
}
"""

after_cuda = r"""
#include <cuda_fp16.h>
#include <c10/cuda/CUDAStream.h>

constexpr int kWarps = 8;  // rows per block, one warp each

__global__ void gemv_rows(const half* __restrict__ w, const half* __restrict__ x, float* __restrict__ y, int K, int N) {
  const int row = blockIdx.x * kWarps + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= N) return;
  const uint4* w8 = reinterpret_cast<const uint4*>(w + (size_t)row * K);
  const uint4* x8 = reinterpret_cast<const uint4*>(x);
  float acc = 0.f;  // the lane's running sum, in fp32
  for (int k8 = lane; k8 < K / 8; k8 += 32) {
    const uint4 wv = w8[k8], xv = x8[k8];
    const half2* w2 = reinterpret_cast<const half2*>(&wv);
    const half2* x2 = reinterpret_cast<const half2*>(&xv);
    half2 part = __hmul2(w2[0], x2[0]);  // 8 products in half2, from zero: small partials, few roundings
#pragma unroll
    for (int i = 1; i < 4; ++i) part = __hfma2(w2[i], x2[i], part);
    const float2 f = __half22float2(part);  // the flush: one conversion and two FADDs per 8 products
    acc += f.x + f.y;
  }
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (lane == 0) y[row] = acc;
}

void gemv(torch::Tensor y, torch::Tensor w, torch::Tensor x) {
  TORCH_CHECK(w.is_contiguous() && x.is_contiguous() && y.is_contiguous(), "contiguous tensors only");
  const int N = w.size(0), K = w.size(1);
  TORCH_CHECK(K % 8 == 0, "K a multiple of 8 (16-byte rows)");
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  gemv_rows<<<(N + kWarps - 1) / kWarps, 32 * kWarps, 0, stream>>>(
      reinterpret_cast<const half*>(w.data_ptr()), reinterpret_cast<const half*>(x.data_ptr()), y.data_ptr<float>(),
      K, N);
}
"""

SIGNATURE = "void gemv(torch::Tensor y, torch::Tensor w, torch::Tensor x)"


def _ext():
    return build("cuda_fp32_partial_accumulation", before_cuda, after_cuda, SIGNATURE)


def before(w, x, y):
    _ext().before(y, w, x)


def after(w, x, y):
    _ext().after(y, w, x)
