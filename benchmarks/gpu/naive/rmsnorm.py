"""Naive RMSNorm: one program per row, the whole row in one block, fp32 math, y = x / rms(x) * w."""
import torch
import triton
import triton.language as tl

KERNEL = "rmsnorm_kernel"
SIZES = {"rows": 32768, "cols": 4096}
SHAPES = ["rows=32768", "cols=4096", "n_cols=4096"]
CPU_SIZES = {"rows": 7, "cols": 300}
DTYPE = torch.float16
EPS = 1e-6


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, n_cols, stride_x, stride_y, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    ms = tl.sum(x * x, axis=0) / n_cols
    y = x / tl.sqrt(ms + eps) * w
    tl.store(y_ptr + row * stride_y + cols, y.to(tl.float16), mask=mask)


def launch(x, w):
    rows, cols = x.shape
    y = torch.empty_like(x)
    rmsnorm_kernel[(rows,)](x, w, y, cols, x.stride(0), y.stride(0), EPS, BLOCK=triton.next_power_of_2(cols))
    return y


def make_inputs(device, sizes=None):
    s = sizes or SIZES
    x = torch.randn((s["rows"], s["cols"]), device=device, dtype=DTYPE)
    w = torch.rand((s["cols"],), device=device, dtype=DTYPE) + 0.5
    return x, w


def reference(x, w):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * w.float()).to(x.dtype)
