"""vectorized-128bit-access: SiLU-and-mul (the gated MLP activation) with scalar loads → 16-byte loads.

Harness format: docs/harness.md. The CUDA sources ``before_cuda``/``after_cuda`` are the template
shown; ``before``/``after`` compile them (once, with ``torch.utils.cpp_extension.load_inline``)
and launch them. Importing this file compiles nothing.
"""

import torch

from skel.skeletons.pairs.cuda import NEEDS, build

SHAPES = {
    "odd": dict(M=7, D=1001),             # D not a multiple of 8: the after's scalar fallback
    "tail": dict(M=33, D=4104),           # D/8 not a multiple of the block: the vector loop's own tail
    "llama8b": dict(M=4096, D=14336),     # prefill of a Llama-3-8B MLP
    "decode": dict(M=256, D=14336),
    "narrow": dict(M=32768, D=2048),
    "huge": dict(M=16385, D=65536),       # input past 2**31 bytes (4.3 GB): 64-bit row offsets
}
CPU_SHAPES = ()
CHECK_ONLY = ("odd", "tail", "huge")
CPU_SKIP = f"{NEEDS} (CUDA C++ built with torch.utils.cpp_extension.load_inline)"
DTYPES = ("bfloat16", "float32")
TOLERANCES = {"bfloat16": (1e-2, 1.6e-2), "float32": (1e-5, 1e-5)}  # __expf and one output rounding


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(shape["M"], 2 * shape["D"], generator=g, device=device, dtype=torch.float32) * 3
    return (x.to(dtype),)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["D"], dtype=dtype, device=device),)


def reference(x):
    d = x.shape[-1] // 2
    return (torch.nn.functional.silu(x[..., :d]) * x[..., d:],)


def bytes_moved(shape, dtype):
    return 3 * shape["M"] * shape["D"] * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 5 * shape["M"] * shape["D"]


before_cuda = r"""
#include <cuda_bf16.h>
#include <c10/cuda/CUDAStream.h>

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ void from_float(float& out, float v) { out = v; }
__device__ __forceinline__ void from_float(__nv_bfloat16& out, float v) { out = __float2bfloat16(v); }

// out[row, i] = silu(input[row, i]) * input[row, d + i]; one block per row
template <typename T>
__global__ void silu_and_mul_kernel(T* __restrict__ out, const T* __restrict__ input, int d) {
  const int64_t row = blockIdx.x;
  const T* x = input + row * 2 * d;
  const T* gate = x + d;
  T* o = out + row * d;
  for (int i = threadIdx.x; i < d; i += blockDim.x) {
    const float a = to_float(x[i]);
    from_float(o[i], a / (1.f + __expf(-a)) * to_float(gate[i]));
  }
}

void silu_and_mul(torch::Tensor out, torch::Tensor input) {
  const int d = input.size(-1) / 2;
  const dim3 grid(input.numel() / input.size(-1));
  const dim3 block(std::min(d, 1024));
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  if (input.scalar_type() == at::kBFloat16) {
    silu_and_mul_kernel<<<grid, block, 0, stream>>>(reinterpret_cast<__nv_bfloat16*>(out.data_ptr()),
        reinterpret_cast<const __nv_bfloat16*>(input.data_ptr()), d);
  } else {
    silu_and_mul_kernel<<<grid, block, 0, stream>>>(out.data_ptr<float>(), input.data_ptr<float>(), d);
  }
}
"""

after_cuda = r"""
#include <cuda_bf16.h>
#include <c10/cuda/CUDAStream.h>

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ void from_float(float& out, float v) { out = v; }
__device__ __forceinline__ void from_float(__nv_bfloat16& out, float v) { out = __float2bfloat16(v); }

// out[row, i] = silu(input[row, i]) * input[row, d + i]; one block per row
template <typename T>
__global__ void silu_and_mul_kernel(T* __restrict__ out, const T* __restrict__ input, int d) {
  constexpr int VEC = 16 / sizeof(T);  // elements per 128-bit access: 8 bf16, 4 fp32
  const int64_t row = blockIdx.x;
  const T* x = input + row * 2 * d;
  const T* gate = x + d;
  T* o = out + row * d;
  // uint4 loads need 16-byte aligned addresses: every row (and the gate half) starts on
  // one only when d is a multiple of VEC and the tensors themselves are aligned
  const bool aligned = d % VEC == 0 && (reinterpret_cast<uintptr_t>(input) % 16) == 0 &&
                       (reinterpret_cast<uintptr_t>(out) % 16) == 0;
  const int nvec = aligned ? d / VEC : 0;
  for (int v = threadIdx.x; v < nvec; v += blockDim.x) {
    const uint4 xv = reinterpret_cast<const uint4*>(x)[v];
    const uint4 gv = reinterpret_cast<const uint4*>(gate)[v];
    const T* xs = reinterpret_cast<const T*>(&xv);
    const T* gs = reinterpret_cast<const T*>(&gv);
    uint4 ov;
    T* os = reinterpret_cast<T*>(&ov);
#pragma unroll
    for (int j = 0; j < VEC; ++j) {
      const float a = to_float(xs[j]);
      from_float(os[j], a / (1.f + __expf(-a)) * to_float(gs[j]));
    }
    reinterpret_cast<uint4*>(o)[v] = ov;
  }
  for (int i = nvec * VEC + threadIdx.x; i < d; i += blockDim.x) {  // unaligned rows: scalar
    const float a = to_float(x[i]);
    from_float(o[i], a / (1.f + __expf(-a)) * to_float(gate[i]));
  }
}

void silu_and_mul(torch::Tensor out, torch::Tensor input) {
  const int d = input.size(-1) / 2;
  const int vec = 16 / input.element_size();
  const dim3 grid(input.numel() / input.size(-1));
  const dim3 block(std::min(d % vec == 0 ? (d / vec + 31) / 32 * 32 : d, 1024));
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  if (input.scalar_type() == at::kBFloat16) {
    silu_and_mul_kernel<<<grid, block, 0, stream>>>(reinterpret_cast<__nv_bfloat16*>(out.data_ptr()),
        reinterpret_cast<const __nv_bfloat16*>(input.data_ptr()), d);
  } else {
    silu_and_mul_kernel<<<grid, block, 0, stream>>>(out.data_ptr<float>(), input.data_ptr<float>(), d);
  }
}
"""

SIGNATURE = "void silu_and_mul(torch::Tensor out, torch::Tensor input)"


def _ext():
    return build("vectorized_128bit_access", before_cuda, after_cuda, SIGNATURE)


def before(x, out):
    _ext().before(out, x)


def after(x, out):
    _ext().after(out, x)
