"""multi-row-per-program: RMSNorm, one row per program → BLOCK_ROW rows per program as 2-D tiles.

Harness format: docs/harness.md. The before/after launchers are the template shown.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(M=37, N=100),              # neither size a multiple of the blocks
    "qk_norm": dict(M=1048576, N=128),      # per-head q/k norm: 32768 tokens x 32 heads, head dim 128
    "head64": dict(M=2097152, N=64),        # 65536 tokens x 32 heads, head dim 64
    "hidden512": dict(M=262144, N=512),     # a small MLP/hidden size
    "wide": dict(M=32768, N=8192),          # does not apply: one row fills a program (BLOCK_ROW = 1)
    "huge": dict(M=16800000, N=128),        # past 2**31 elements: row * stride must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
DTYPES = ("bfloat16", "float32")
TOLERANCES = {"bfloat16": (1e-2, 1e-2), "float32": (1e-5, 1e-5)}  # bf16: the output's own rounding
EPS = 1e-6
TILE = 4096  # elements per program in the 2-D form: 32 fp32 values a thread at 4 warps


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(shape["M"], shape["N"], generator=g).to(dtype).to(device)
    w = (1 + 0.1 * torch.randn(shape["N"], generator=g)).to(dtype).to(device)
    return x, w, EPS


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=dtype, device=device),)


def reference(x, w, eps):
    return (x * torch.rsqrt(x.pow(2).mean(dim=1, keepdim=True) + eps) * w,)


def bytes_moved(shape, dtype):
    return (2 * shape["M"] + 1) * shape["N"] * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 4 * shape["M"] * shape["N"]


@triton.jit
def before_kernel(x_ptr, w_ptr, y_ptr, x_stride, y_stride, n_rows, n_cols, eps, BLOCK_D: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_D)
    m_c = cols < n_cols
    x = tl.load(x_ptr + row * x_stride + cols, mask=m_c, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=m_c, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    y = x * rstd * w
    tl.store(y_ptr + row * y_stride + cols, y.to(y_ptr.dtype.element_ty), mask=m_c)


def before(x, w, eps, y):
    M, N = x.shape
    before_kernel[(M,)](x, w, y, x.stride(0), y.stride(0), M, N, eps, BLOCK_D=triton.next_power_of_2(N))


@triton.jit
def after_kernel(x_ptr, w_ptr, y_ptr, x_stride, y_stride, n_rows, n_cols, eps,
                 BLOCK_ROW: tl.constexpr, BLOCK_D: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_ROW + tl.arange(0, BLOCK_ROW)
    cols = tl.arange(0, BLOCK_D)
    m_r = rows < n_rows
    m_c = cols < n_cols
    mask = m_r[:, None] & m_c[None, :]
    x = tl.load(x_ptr + rows[:, None] * x_stride + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=m_c, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=1) / n_cols + eps)
    y = x * rstd[:, None] * w[None, :]
    tl.store(y_ptr + rows[:, None] * y_stride + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


def after(x, w, eps, y):
    M, N = x.shape
    BLOCK_D = triton.next_power_of_2(N)
    BLOCK_ROW = max(1, min(64, TILE // BLOCK_D))
    after_kernel[(triton.cdiv(M, BLOCK_ROW),)](x, w, y, x.stride(0), y.stride(0), M, N, eps,
                                               BLOCK_ROW=BLOCK_ROW, BLOCK_D=BLOCK_D)
