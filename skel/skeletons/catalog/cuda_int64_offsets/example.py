"""cuda-int64-offsets: a KV-cache row gather whose `slot * row_bytes` is an `int` product → the slot (and the
token row) held in `int64_t`.

out[t, :] = pool[slots[t], :] for a pool of fp8/int8 cache rows (bytes) and a table of int32 slots,
16 bytes per thread per step. A correctness technique: at the timed shapes both sides are right
and the pair measures what the 64-bit offsets cost; at the CHECK_ONLY shape the pool holds more
than 2**31 bytes and every slot past 2**31 / row_bytes (2,097,152 rows of 1,024 bytes) makes the
before side's `slot * row_bytes` wrap: nvcc 13.0 for sm_90 computes it with a 32-bit `IMAD` and
sign-extends it (`SHF.R.S32.HI`), so the row is read from before the pool.

The pool of the CHECK_ONLY shape is a view that starts 2**31 bytes into a larger buffer (as a
slice of a packed cache allocation would): the before side's wrapped, negative offsets then land
in memory this process owns, filled with 7s, so the overflow shows as wrong values instead of an
illegal-address fault that would poison the CUDA context for the rest of the verification run.
Harness format: docs/harness.md. The CUDA sources ``before_cuda``/``after_cuda`` are the template
shown; ``before``/``after`` compile them (once, with ``torch.utils.cpp_extension.load_inline``)
and launch them. Importing this file compiles nothing.
"""

import torch

from skel.skeletons.pairs.cuda import NEEDS, build

SHAPES = {
    "tail": dict(T=37, S=1000, D=1000),            # rows no multiple of 16 bytes: the scalar path
    "decode": dict(T=65536, S=1 << 20, D=1024),    # 64 MB gathered from a 1 GiB pool
    "prefill": dict(T=262144, S=1 << 20, D=512),
    "huge": dict(T=65536, S=2_200_000, D=1024),    # a 2.25 GB pool: slots past 2,097,152 wrap in int32
}
CPU_SHAPES = ()
CHECK_ONLY = ("tail", "huge")
FIXES = ("huge",)                 # where the before is wrong (int32 offsets wrap): the evidence
CPU_SKIP = f"{NEEDS} (CUDA C++ built with torch.utils.cpp_extension.load_inline)"
DTYPES = ("uint8",)
TOLERANCES = {"uint8": (0.0, 0.0)}  # a copy: exact
_INT32_LIMIT = 1 << 31


def _pool(rows, cols, device):
    """A [rows, cols] uint8 pool; past 2**31 bytes, a view 2**31 bytes into a buffer whose head
    holds 7s (what a wrapped read finds: never a right answer here, the pool holds 0..6)."""
    pad = _INT32_LIMIT if rows * cols > _INT32_LIMIT else 0
    buf = torch.empty(pad + rows * cols, dtype=torch.uint8, device=device)
    buf[:pad].fill_(7)
    return buf[pad:].view(rows, cols)


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    T, S, D = shape["T"], shape["S"], shape["D"]
    pool = _pool(S, D, device)
    for s in range(0, S, 1 << 18):  # row chunks: no full-size int64 temporary
        n = min(1 << 18, S - s)
        pool[s:s + n] = torch.randint(0, 7, (n, D), generator=g, device=device, dtype=torch.uint8)
    slots = torch.randint(0, S, (T,), generator=g, device=device, dtype=torch.int32)
    return (pool, slots)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["T"], shape["D"], dtype=torch.uint8, device=device),)


def reference(pool, slots):
    return (pool[slots.long()],)


def bytes_moved(shape, dtype):
    return 2 * shape["T"] * shape["D"] + 4 * shape["T"]


def flops(shape, dtype):
    return 0


before_cuda = r"""
#include <cstdint>
#include <c10/cuda/CUDAStream.h>

constexpr int kThreads = 256;

// out[t, :] = pool[slots[t], :], 16 bytes per thread per step; one block per gathered row.
__global__ void gather_rows(uint8_t* __restrict__ out, const uint8_t* __restrict__ pool,
                            const int* __restrict__ slots, int row_bytes) {
  const int t = blockIdx.x;
  const int slot = slots[t];
  const int vec_bytes = row_bytes % 16 == 0 ? row_bytes : 0;  // rows start 16-byte aligned only then
  for (int c = threadIdx.x * 16; c < vec_bytes; c += kThreads * 16) {
    *reinterpret_cast<uint4*>(out + t * row_bytes + c) = *reinterpret_cast<const uint4*>(pool + slot * row_bytes + c);
  }
  for (int c = vec_bytes + threadIdx.x; c < row_bytes; c += kThreads) {
    out[t * row_bytes + c] = pool[slot * row_bytes + c];
  }
}

void gather(torch::Tensor out, torch::Tensor pool, torch::Tensor slots) {
  TORCH_CHECK(pool.is_contiguous() && out.is_contiguous() && slots.is_contiguous(), "contiguous tensors only");
  const int tokens = slots.numel(), row_bytes = pool.size(1);
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  gather_rows<<<tokens, kThreads, 0, stream>>>(reinterpret_cast<uint8_t*>(out.data_ptr()),
                                               reinterpret_cast<const uint8_t*>(pool.data_ptr()),
                                               reinterpret_cast<const int*>(slots.data_ptr()), row_bytes);
}
"""

after_cuda = r"""
#include <cstdint>
#include <c10/cuda/CUDAStream.h>

constexpr int kThreads = 256;

// out[t, :] = pool[slots[t], :], 16 bytes per thread per step; one block per gathered row.
// The row indices are 64-bit before they are multiplied: slot * row_bytes cannot wrap.
__global__ void gather_rows(uint8_t* __restrict__ out, const uint8_t* __restrict__ pool,
                            const int* __restrict__ slots, int row_bytes) {
  const int64_t t = blockIdx.x;
  const int64_t slot = slots[t];
  const uint8_t* src = pool + slot * row_bytes;  // 64-bit row bases, 32-bit in-row offsets
  uint8_t* dst = out + t * row_bytes;
  const int vec_bytes = row_bytes % 16 == 0 ? row_bytes : 0;  // rows start 16-byte aligned only then
  for (int c = threadIdx.x * 16; c < vec_bytes; c += kThreads * 16) {
    *reinterpret_cast<uint4*>(dst + c) = *reinterpret_cast<const uint4*>(src + c);
  }
  for (int c = vec_bytes + threadIdx.x; c < row_bytes; c += kThreads) {
    dst[c] = src[c];
  }
}

void gather(torch::Tensor out, torch::Tensor pool, torch::Tensor slots) {
  TORCH_CHECK(pool.is_contiguous() && out.is_contiguous() && slots.is_contiguous(), "contiguous tensors only");
  const int tokens = slots.numel(), row_bytes = pool.size(1);
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  gather_rows<<<tokens, kThreads, 0, stream>>>(reinterpret_cast<uint8_t*>(out.data_ptr()),
                                               reinterpret_cast<const uint8_t*>(pool.data_ptr()),
                                               reinterpret_cast<const int*>(slots.data_ptr()), row_bytes);
}
"""

SIGNATURE = "void gather(torch::Tensor out, torch::Tensor pool, torch::Tensor slots)"


def _ext():
    return build("cuda_int64_offsets", before_cuda, after_cuda, SIGNATURE)


def before(pool, slots, out):
    _ext().before(out, pool, slots)


def after(pool, slots, out):
    _ext().after(out, pool, slots)
