"""Naive short-row kernel: per-head q-norm (RMSNorm over head_dim=128) on 1M rows (tokens x heads), one
program per 128-element row."""
import torch
import triton
import triton.language as tl

KERNEL = "qnorm_kernel"
SIZES = {"rows": 1048576, "cols": 128}
SHAPES = ["rows=1048576", "cols=128", "n_cols=128", "programs=1048576"]
CPU_SIZES = {"rows": 11, "cols": 128}
DTYPE = torch.float16
EPS = 1e-6


@triton.jit
def qnorm_kernel(x_ptr, w_ptr, y_ptr, n_cols, stride_x, stride_y, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(y_ptr + row * stride_y + cols, (x * rstd * w).to(tl.float16), mask=mask)


def launch(x, w):
    rows, cols = x.shape
    y = torch.empty_like(x)
    qnorm_kernel[(rows,)](x, w, y, cols, x.stride(0), y.stride(0), EPS, BLOCK=triton.next_power_of_2(cols))
    return y


def make_inputs(device, sizes=None):
    s = sizes or SIZES
    x = torch.randn((s["rows"], s["cols"]), device=device, dtype=DTYPE)
    w = torch.rand((s["cols"],), device=device, dtype=DTYPE) + 0.5
    return x, w


def reference(x, w):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * w.float()).to(x.dtype)
