"""fused-add-rmsnorm: residual add kernel, then RMSNorm kernel → one kernel writing both outputs.

Harness format: docs/harness.md. The before/after launchers are the template shown.
A pre-norm block's `residual = x + residual; y = rmsnorm(residual) * w` over `[M, N]` rows.
The before launches an add kernel (reads x and residual, writes the sum) and then an RMSNorm
kernel (reads the sum back, writes y): 5 values moved per element, two launches. The after
loads x and residual, adds them in registers, writes the sum and y: 4 values, one launch.
On a GPU the after should take about 4/5 of the before's time at the large shapes, and
about half at "decode", where both sides are a few microseconds of launch each.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(M=37, N=100),                 # neither size a power of two
    "decode": dict(M=64, N=4096),              # a decode step: launch-bound
    "tokens16k_h4096": dict(M=16384, N=4096),  # a 7-8B model's hidden size, 16K tokens: 128 MB a tensor in bf16
    "tokens8k_h8192": dict(M=8192, N=8192),    # a 70B model's hidden size
}
CPU_SHAPES = ("tiny",)
DTYPES = ("bfloat16", "float32")
TOLERANCES = {"bfloat16": (3e-2, 2e-2), "float32": (1e-5, 1e-5)}  # bf16: the sum's own rounding
EPS = 1e-6


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(shape["M"], shape["N"], generator=g).to(dtype).to(device)
    residual = (2 * torch.randn(shape["M"], shape["N"], generator=g)).to(dtype).to(device)
    w = (1 + 0.1 * torch.randn(shape["N"], generator=g)).to(dtype).to(device)
    return x, residual, w, EPS


def make_outputs(shape, dtype, device):
    y = torch.empty(shape["M"], shape["N"], dtype=dtype, device=device)
    residual_out = torch.empty(shape["M"], shape["N"], dtype=dtype, device=device)
    return y, residual_out


def reference(x, residual, w, eps):
    h = x + residual
    y = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps) * w
    return y, h


def bytes_moved(shape, dtype):
    # the least traffic: x and residual read once, the sum and y written once, w read once
    return (4 * shape["M"] + 1) * shape["N"] * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 5 * shape["M"] * shape["N"]


@triton.jit
def before_add_kernel(x_ptr, residual_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    a = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(residual_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, (a + b).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def before_rmsnorm_kernel(h_ptr, w_ptr, y_ptr, stride_h, stride_y, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    # the sum comes back from HBM
    h = tl.load(h_ptr + row * stride_h + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(h * h, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride_y + cols, (h * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def before(x, residual, w, eps, y, residual_out):
    M, N = x.shape
    n = x.numel()
    before_add_kernel[(triton.cdiv(n, 1024),)](x, residual, residual_out, n, BLOCK=1024)
    BLOCK = triton.next_power_of_2(N)
    num_warps = 4 if BLOCK <= 1024 else (8 if BLOCK <= 4096 else 16)
    before_rmsnorm_kernel[(M,)](residual_out, w, y, residual_out.stride(0), y.stride(0), N, eps,
                                BLOCK=BLOCK, num_warps=num_warps)


@triton.jit
def after_kernel(x_ptr, residual_ptr, w_ptr, y_ptr, residual_out_ptr, stride_x, stride_r, stride_y, n_cols, eps,
                 BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(residual_ptr + row * stride_r + cols, mask=mask, other=0.0).to(tl.float32)
    # the residual add in registers; the sum is rounded as the unfused add rounds it
    h = (x + r).to(residual_out_ptr.dtype.element_ty)
    tl.store(residual_out_ptr + row * stride_r + cols, h, mask=mask)
    h = h.to(tl.float32)
    rstd = tl.rsqrt(tl.sum(h * h, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride_y + cols, (h * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def after(x, residual, w, eps, y, residual_out):
    M, N = x.shape
    BLOCK = triton.next_power_of_2(N)
    num_warps = 4 if BLOCK <= 1024 else (8 if BLOCK <= 4096 else 16)
    after_kernel[(M,)](x, residual, w, y, residual_out, x.stride(0), residual.stride(0), y.stride(0), N, eps,
                       BLOCK=BLOCK, num_warps=num_warps)
