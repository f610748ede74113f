"""cuda-smem-padding-bank-conflicts: a tiled fp32 matrix transpose through `__shared__ float tile[32][32]`
(the column read is a 32-way bank conflict) → `tile[32][33]` (one pass per warp access).

Harness format: docs/harness.md. The CUDA sources ``before_cuda``/``after_cuda`` are the template
shown; ``before``/``after`` compile them (once, with ``torch.utils.cpp_extension.load_inline``)
and launch them. Importing this file compiles nothing.

out = x.T for x of [M, N] fp32. Each 32 x 8 block moves one 32 x 32 tile: it reads rows of `x`
into rows of the tile (coalesced, conflict-free), then writes rows of `out` from columns of the
tile, `tile[threadIdx.x][threadIdx.y + j]`: lane l reads row l. With rows of 32 floats every
lane of the warp hits bank `(threadIdx.y + j) % 32`, the same one: each of those shared loads is
replayed 32 times. The after side differs in one character, rows of 33 floats: lane l hits bank
`(l + threadIdx.y + j) % 32`, all different. Both sides move the same HBM bytes; the timed
shapes (256 MB each way) are where the replays show. "tail" (neither side a multiple of 32) is
checked only.
"""

import torch

from skel.skeletons.pairs.cuda import NEEDS, build

SHAPES = {
    "tail": dict(M=1000, N=777),          # partial tiles on both edges: checked, not timed
    "square": dict(M=8192, N=8192),
    "wide": dict(M=4096, N=16384),
}
CPU_SHAPES = ()
CHECK_ONLY = ("tail",)
CPU_SKIP = f"{NEEDS} (CUDA C++ built with torch.utils.cpp_extension.load_inline)"
DTYPES = ("float32",)
TOLERANCES = {"float32": (0.0, 0.0)}  # a copy: bit-exact


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    return (torch.randn(shape["M"], shape["N"], generator=g, device=device, dtype=torch.float32).to(dtype),)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["N"], shape["M"], dtype=dtype, device=device),)


def reference(x):
    return (x.t().contiguous(),)


def bytes_moved(shape, dtype):
    return 2 * 4 * shape["M"] * shape["N"]


def flops(shape, dtype):
    return 0


before_cuda = r"""
#include <c10/cuda/CUDAStream.h>

constexpr int kTile = 32;
constexpr int kRows = 8;  // block is kTile x kRows threads; each thread moves kTile / kRows elements

// out[N, M] = x[M, N]^T through a kTile x kTile shared tile, rows of kTile floats.
__global__ void transpose_tiled(float* __restrict__ out, const float* __restrict__ x, int M, int N) {
  __shared__ float tile[kTile][kTile];
  const int col = blockIdx.x * kTile + threadIdx.x;  // column of x
  const int row0 = blockIdx.y * kTile;
#pragma unroll
  for (int j = 0; j < kTile; j += kRows) {
    const int row = row0 + threadIdx.y + j;
    if (row < M && col < N) tile[threadIdx.y + j][threadIdx.x] = x[(long long)row * N + col];
  }
  __syncthreads();
  const int out_col = row0 + threadIdx.x;  // column of out = row of x
#pragma unroll
  for (int j = 0; j < kTile; j += kRows) {
    const int out_row = blockIdx.x * kTile + threadIdx.y + j;
    // lane l reads row l of one column: all 32 lanes on one bank
    if (out_row < N && out_col < M) out[(long long)out_row * M + out_col] = tile[threadIdx.x][threadIdx.y + j];
  }
}

void transpose(torch::Tensor out, torch::Tensor x) {
  TORCH_CHECK(x.is_contiguous() && out.is_contiguous(), "contiguous tensors only");
  const int M = x.size(0), N = x.size(1);
  const dim3 grid((N + kTile - 1) / kTile, (M + kTile - 1) / kTile), block(kTile, kRows);
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  transpose_tiled<<<grid, block, 0, stream>>>(out.data_ptr<float>(), x.data_ptr<float>(), M, N);
}
"""

after_cuda = r"""
#include <c10/cuda/CUDAStream.h>

constexpr int kTile = 32;
constexpr int kRows = 8;  // block is kTile x kRows threads; each thread moves kTile / kRows elements

// out[N, M] = x[M, N]^T through a kTile x kTile shared tile, rows padded to kTile + 1 floats.
__global__ void transpose_tiled(float* __restrict__ out, const float* __restrict__ x, int M, int N) {
  __shared__ float tile[kTile][kTile + 1];  // the pad shifts each row by one bank
  const int col = blockIdx.x * kTile + threadIdx.x;  // column of x
  const int row0 = blockIdx.y * kTile;
#pragma unroll
  for (int j = 0; j < kTile; j += kRows) {
    const int row = row0 + threadIdx.y + j;
    if (row < M && col < N) tile[threadIdx.y + j][threadIdx.x] = x[(long long)row * N + col];
  }
  __syncthreads();
  const int out_col = row0 + threadIdx.x;  // column of out = row of x
#pragma unroll
  for (int j = 0; j < kTile; j += kRows) {
    const int out_row = blockIdx.x * kTile + threadIdx.y + j;
    // lane l reads row l of one column: bank (l + threadIdx.y + j) % 32, all different
    if (out_row < N && out_col < M) out[(long long)out_row * M + out_col] = tile[threadIdx.x][threadIdx.y + j];
  }
}

void transpose(torch::Tensor out, torch::Tensor x) {
  TORCH_CHECK(x.is_contiguous() && out.is_contiguous(), "contiguous tensors only");
  const int M = x.size(0), N = x.size(1);
  const dim3 grid((N + kTile - 1) / kTile, (M + kTile - 1) / kTile), block(kTile, kRows);
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  transpose_tiled<<<grid, block, 0, stream>>>(out.data_ptr<float>(), x.data_ptr<float>(), M, N);
}
"""

SIGNATURE = "void transpose(torch::Tensor out, torch::Tensor x)"


def _ext():
    return build("cuda_smem_padding_bank_conflicts", before_cuda, after_cuda, SIGNATURE)


def before(x, out):
    _ext().before(out, x)


def after(x, out):
    _ext().after(out, x)
