"""block-pointers: a GEMM K loop with hand-built offset grids and bounds masks → tl.make_block_ptr,
tl.advance and boundary_check (tiles, strides and bounds in one object; 64-bit offsets for free).

Harness format: docs/harness.md. The before/after launchers are the template shown.
Triton 3.7 warns that tl.make_block_ptr is deprecated (removed in 3.9); the pair targets Triton < 3.9.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(M=37, N=72, K=88),              # no size a multiple of a block (K, N multiples of 8 for TMA)
    "square": dict(M=8192, N=8192, K=8192),      # compute-bound GEMM
    "long_k": dict(M=2048, N=2048, K=32768),     # few output tiles, a long K loop (a weight-gradient GEMM)
    "short_k": dict(M=16384, N=16384, K=128),    # a short loop (two K blocks): the masks are built twice either way
    "huge": dict(M=266240, N=256, K=8192),       # A past 2**31 elements: row * stride_am must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
DTYPES = ("float16",)                            # the interpreter's bf16 tl.dot is wrong; fp16 runs on both
TOLERANCES = {"float16": (2e-3, 2e-3)}           # fp32 accumulation, one fp16 rounding of the output
BM, BN, BK, WARPS, STAGES = 128, 256, 64, 8, 3   # a good Hopper fp16 tile (Triton's matmul tutorials)


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    M, N, K = shape["M"], shape["N"], shape["K"]
    scale = K ** -0.25  # outputs of order one
    a = (torch.randn(M, K, generator=g, device=device) * scale).to(dtype)
    b = (torch.randn(K, N, generator=g, device=device) * scale).to(dtype)
    return a, b


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=dtype, device=device),)


def reference(a, b):
    return (a @ b,)


def bytes_moved(shape, dtype):
    M, N, K = shape["M"], shape["N"], shape["K"]
    return (M * K + K * N + M * N) * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 2 * shape["M"] * shape["N"] * shape["K"]


def _grid(M, N):
    return (triton.cdiv(M, BM), triton.cdiv(N, BN))


@triton.jit
def before_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = (tl.program_id(0) * BM + tl.arange(0, BM)).to(tl.int64)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k0 + rk)[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k0 + rk)[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def before(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    before_kernel[_grid(M, N)](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                               c.stride(0), c.stride(1), BM=BM, BN=BN, BK=BK, num_warps=WARPS, num_stages=STAGES)


@triton.jit
def after_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                 BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    # shape, strides and bounds travel with the pointer; the offsets are 64-bit inside it
    a_blk = tl.make_block_ptr(a_ptr, shape=(M, K), strides=(stride_am, stride_ak), offsets=(pid_m * BM, 0),
                              block_shape=(BM, BK), order=(1, 0))
    b_blk = tl.make_block_ptr(b_ptr, shape=(K, N), strides=(stride_bk, stride_bn), offsets=(0, pid_n * BN),
                              block_shape=(BK, BN), order=(1, 0))
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, K, BK):
        a = tl.load(a_blk, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_blk, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(a, b, acc)
        a_blk = tl.advance(a_blk, (0, BK))
        b_blk = tl.advance(b_blk, (BK, 0))
    c_blk = tl.make_block_ptr(c_ptr, shape=(M, N), strides=(stride_cm, stride_cn), offsets=(pid_m * BM, pid_n * BN),
                              block_shape=(BM, BN), order=(1, 0))
    tl.store(c_blk, acc.to(c_ptr.dtype.element_ty), boundary_check=(0, 1))


def after(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    after_kernel[_grid(M, N)](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                              c.stride(0), c.stride(1), BM=BM, BN=BN, BK=BK, num_warps=WARPS, num_stages=STAGES)
