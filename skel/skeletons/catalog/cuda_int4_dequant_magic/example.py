"""cuda-int4-dequant-magic: a W4A16 GEMV unpacking each int4 weight with a shift, a mask and
`__int2half_rn` → the nibbles ORed into fp16 1024.0 (`0x64006400`, one `lop3`) and one packed
`__hsub2`/`__hfma2` per pair.

Harness format: docs/harness.md. The CUDA sources ``before_cuda``/``after_cuda`` are the template
shown; ``before``/``after`` compile them (once, with ``torch.utils.cpp_extension.load_inline``)
and launch them. Importing this file compiles nothing.

y = W x for one token (decode): x is K fp16 activations, W is N x K int4 weights packed eight to
an int32 along K (weight k = 8 * word + j in bits 4j..4j+3, unsigned), with an fp16 scale and an
fp16 zero point per 128 weights of a row: w = (q - z) * s. One warp per output row; each lane
takes 32 weights (one 16-byte load of `qweight`) and their 64 bytes of activations per trip, sums
each word's 8 products in fp16 and accumulates those in fp32. The before side dequantises one
weight at a time: shift, mask, `__int2half_rn` (an I2F), `__hsub`, `__hmul`, then a scalar `__hfma`.
The after side converts two weights per `lop3.b32` and one `__hsub2` (low nibbles) or `__hfma2`
(high nibbles, ×16, with 1/16 and -(64 + z)), scales them with one `__hmul2`, and pairs the
activations to match the (k, k + 4) lanes with `__byte_perm`. The dequantised weights are the
same bits on both sides ((q - z) is exact in fp16 either way, then one rounding by the scale);
the fp16 partial sums are ordered differently (8 in a row → two lanes of 4). The weights are
28-40 MiB packed: the stream an H100 would deliver at ~29 weights per SM-clock, above the 16
I2Fs an SM issues per clock, so the before side is expected to be conversion-bound. Not
measured here (no GPU on the machine that wrote it); "small" is checked only.
"""

import torch

from skel.skeletons.pairs.cuda import NEEDS, build

GROUP = 128

SHAPES = {
    "small": dict(N=37, K=256),              # a partial block of warps: checked, not timed
    "llama8b_down": dict(N=4096, K=14336),   # Llama-3-8B MLP down projection, 28 MiB packed
    "square": dict(N=8192, K=8192),          # 32 MiB packed
    "llama70b_qkv": dict(N=10240, K=8192),   # Llama-3-70B fused QKV, 40 MiB packed
}
CPU_SHAPES = ()
CHECK_ONLY = ("small",)
CPU_SKIP = f"{NEEDS} (CUDA C++ built with torch.utils.cpp_extension.load_inline)"
DTYPES = ("float16",)
TOLERANCES = {"float16": (2e-2, 1e-2)}  # fp16 weights and partial sums of 8; |y| ~ 10


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    n, k = shape["N"], shape["K"]
    x = torch.randn(k, generator=g, device=device, dtype=torch.float32).to(torch.float16)
    qweight = torch.randint(-(2**31), 2**31, (n, k // 8), generator=g, device=device, dtype=torch.int64)
    qweight = qweight.to(torch.int32)
    scales = (torch.rand(n, k // GROUP, generator=g, device=device) * 0.02 + 0.005).to(torch.float16)
    zeros = torch.randint(0, 16, (n, k // GROUP), generator=g, device=device).to(torch.float16)
    return (x, qweight, scales, zeros)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["N"], dtype=torch.float16, device=device),)


def reference(x, qweight, scales, zeros):
    n = qweight.shape[0]
    shifts = torch.arange(0, 32, 4, device=qweight.device)
    q = (qweight.to(torch.int64)[:, :, None] >> shifts) & 0xF          # [N, K/8, 8]: k = 8 * word + j
    q = q.reshape(n, -1).to(scales.dtype)
    w = (q - zeros.repeat_interleave(GROUP, dim=1)) * scales.repeat_interleave(GROUP, dim=1)
    return (w @ x.to(w.dtype),)


def bytes_moved(shape, dtype):
    n, k = shape["N"], shape["K"]
    return n * k // 2 + 2 * k + 2 * n + 2 * 2 * n * (k // GROUP)


def flops(shape, dtype):
    return 2 * shape["N"] * shape["K"]


before_cuda = r"""
#include <cuda_fp16.h>
#include <c10/cuda/CUDAStream.h>

constexpr int kGroup = 128;  // weights per scale / zero point
constexpr int kWarps = 4;    // output rows per block, one warp each

// y[n] = sum_k x[k] * (q[n][k] - z[n][k / 128]) * s[n][k / 128], one weight converted at a time
__global__ void w4a16_gemv(const half* __restrict__ x, const uint32_t* __restrict__ qweight,
                           const half* __restrict__ scales, const half* __restrict__ zeros,
                           half* __restrict__ y, int K, int N) {
  const int n = blockIdx.x * kWarps + threadIdx.y;
  if (n >= N) return;
  const int lane = threadIdx.x;
  const uint4* qrow = reinterpret_cast<const uint4*>(qweight + (int64_t)n * (K / 8));
  const uint4* x4 = reinterpret_cast<const uint4*>(x);
  const int groups = K / kGroup;
  float acc = 0.f;
  for (int c = lane; c < K / 32; c += 32) {  // chunk c: weights 32c .. 32c + 31, one group
    const uint4 qv = qrow[c];
    const half s = scales[(int64_t)n * groups + c * 32 / kGroup];
    const half z = zeros[(int64_t)n * groups + c * 32 / kGroup];
    const uint32_t qs[4] = {qv.x, qv.y, qv.z, qv.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint4 xv = x4[c * 4 + i];  // the 8 activations of word i
      const half* xh = reinterpret_cast<const half*>(&xv);
      half p = __float2half(0.f);
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const half w = __hmul(__hsub(__int2half_rn((qs[i] >> (4 * j)) & 0xF), z), s);
        p = __hfma(xh[j], w, p);
      }
      acc += __half2float(p);
    }
  }
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffff, acc, o);
  if (lane == 0) y[n] = __float2half(acc);
}

void gemv(torch::Tensor y, torch::Tensor x, torch::Tensor qweight, torch::Tensor scales, torch::Tensor zeros) {
  TORCH_CHECK(x.is_contiguous() && qweight.is_contiguous() && scales.is_contiguous() && zeros.is_contiguous(),
              "contiguous tensors only");
  const int K = x.size(0), N = y.size(0);
  TORCH_CHECK(K % kGroup == 0, "K must be a multiple of the group size");
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  w4a16_gemv<<<(N + kWarps - 1) / kWarps, dim3(32, kWarps), 0, stream>>>(
      reinterpret_cast<const half*>(x.data_ptr()), reinterpret_cast<const uint32_t*>(qweight.data_ptr()),
      reinterpret_cast<const half*>(scales.data_ptr()), reinterpret_cast<const half*>(zeros.data_ptr()),
      reinterpret_cast<half*>(y.data_ptr()), K, N);
}
"""

after_cuda = r"""
#include <cuda_fp16.h>
#include <c10/cuda/CUDAStream.h>

constexpr int kGroup = 128;  // weights per scale / zero point
constexpr int kWarps = 4;    // output rows per block, one warp each

// (a & b) | c in one instruction (nvcc may otherwise emit an AND and an OR)
__device__ __forceinline__ uint32_t and_or(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t r;
  asm("lop3.b32 %0, %1, %2, %3, 0xea;\n" : "=r"(r) : "r"(a), "r"(b), "r"(c));
  return r;
}

__device__ __forceinline__ half2 as_half2(uint32_t u) { return *reinterpret_cast<half2*>(&u); }

// the 8 nibbles of q as (q - z) * s in four half2 lanes: (k0, k4), (k1, k5), (k2, k6), (k3, k7).
// 0x6400 is fp16 1024.0 with an empty mantissa: 0x6400 | v is 1024 + v (the high nibble of a
// byte lands 4 bits up: 1024 + 16 v, undone by the fma with 1/16).
__device__ __forceinline__ void dequant8(uint32_t q, half2 z1024, half2 neg_z64, half2 s, half2 (&w)[4]) {
  const uint32_t kMagic = 0x64006400, kLo = 0x000f000f, kHi = 0x00f000f0;
  const half2 sixteenth = __float2half2_rn(0.0625f);
  const uint32_t top = q >> 8;
  w[0] = __hmul2(__hsub2(as_half2(and_or(q, kLo, kMagic)), z1024), s);
  w[1] = __hmul2(__hfma2(as_half2(and_or(q, kHi, kMagic)), sixteenth, neg_z64), s);
  w[2] = __hmul2(__hsub2(as_half2(and_or(top, kLo, kMagic)), z1024), s);
  w[3] = __hmul2(__hfma2(as_half2(and_or(top, kHi, kMagic)), sixteenth, neg_z64), s);
}

// y[n] = sum_k x[k] * (q[n][k] - z[n][k / 128]) * s[n][k / 128], two weights converted at a time
__global__ void w4a16_gemv(const half* __restrict__ x, const uint32_t* __restrict__ qweight,
                           const half* __restrict__ scales, const half* __restrict__ zeros,
                           half* __restrict__ y, int K, int N) {
  const int n = blockIdx.x * kWarps + threadIdx.y;
  if (n >= N) return;
  const int lane = threadIdx.x;
  const uint4* qrow = reinterpret_cast<const uint4*>(qweight + (int64_t)n * (K / 8));
  const uint4* x4 = reinterpret_cast<const uint4*>(x);
  const int groups = K / kGroup;
  float acc = 0.f;
  for (int c = lane; c < K / 32; c += 32) {  // chunk c: weights 32c .. 32c + 31, one group
    const uint4 qv = qrow[c];
    const half s = scales[(int64_t)n * groups + c * 32 / kGroup];
    const half z = zeros[(int64_t)n * groups + c * 32 / kGroup];
    const half2 s2 = __half2half2(s);
    const half2 z1024 = __half2half2(__hadd(z, __float2half(1024.f)));  // exact: z is a small integer
    const half2 neg_z64 = __half2half2(__hneg(__hadd(z, __float2half(64.f))));
    const uint32_t qs[4] = {qv.x, qv.y, qv.z, qv.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint4 xv = x4[c * 4 + i];  // the 8 activations of word i, paired as the weights are
      half2 w[4];
      dequant8(qs[i], z1024, neg_z64, s2, w);
      half2 p = __hmul2(as_half2(__byte_perm(xv.x, xv.z, 0x5410)), w[0]);      // (x0, x4)
      p = __hfma2(as_half2(__byte_perm(xv.x, xv.z, 0x7632)), w[1], p);          // (x1, x5)
      p = __hfma2(as_half2(__byte_perm(xv.y, xv.w, 0x5410)), w[2], p);          // (x2, x6)
      p = __hfma2(as_half2(__byte_perm(xv.y, xv.w, 0x7632)), w[3], p);          // (x3, x7)
      acc += __low2float(p) + __high2float(p);
    }
  }
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffff, acc, o);
  if (lane == 0) y[n] = __float2half(acc);
}

void gemv(torch::Tensor y, torch::Tensor x, torch::Tensor qweight, torch::Tensor scales, torch::Tensor zeros) {
  TORCH_CHECK(x.is_contiguous() && qweight.is_contiguous() && scales.is_contiguous() && zeros.is_contiguous(),
              "contiguous tensors only");
  const int K = x.size(0), N = y.size(0);
  TORCH_CHECK(K % kGroup == 0, "K must be a multiple of the group size");
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  w4a16_gemv<<<(N + kWarps - 1) / kWarps, dim3(32, kWarps), 0, stream>>>(
      reinterpret_cast<const half*>(x.data_ptr()), reinterpret_cast<const uint32_t*>(qweight.data_ptr()),
      reinterpret_cast<const half*>(scales.data_ptr()), reinterpret_cast<const half*>(zeros.data_ptr()),
      reinterpret_cast<half*>(y.data_ptr()), K, N);
}
"""

SIGNATURE = ("void gemv(torch::Tensor y, torch::Tensor x, torch::Tensor qweight, torch::Tensor scales, "
             "torch::Tensor zeros)")


def _ext():
    return build("cuda_int4_dequant_magic", before_cuda, after_cuda, SIGNATURE)


def before(x, qweight, scales, zeros, y):
    _ext().before(y, x, qweight, scales, zeros)


def after(x, qweight, scales, zeros, y):
    _ext().after(y, x, qweight, scales, zeros)
