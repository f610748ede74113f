"""Naive LayerNorm: one program per row, the whole row in one block, fp32 mean and variance, affine."""
import torch
import triton
import triton.language as tl

KERNEL = "layernorm_kernel"
SIZES = {"rows": 32768, "cols": 4096}
SHAPES = ["rows=32768", "cols=4096", "n_cols=4096"]
CPU_SIZES = {"rows": 7, "cols": 300}
DTYPE = torch.float16
EPS = 1e-5


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, stride_x, stride_y, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    d = tl.where(mask, x - mean, 0.0)
    var = tl.sum(d * d, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = d * rstd * w + b
    tl.store(y_ptr + row * stride_y + cols, y.to(tl.float16), mask=mask)


def launch(x, w, b):
    rows, cols = x.shape
    y = torch.empty_like(x)
    layernorm_kernel[(rows,)](x, w, b, y, cols, x.stride(0), y.stride(0), EPS, BLOCK=triton.next_power_of_2(cols))
    return y


def make_inputs(device, sizes=None):
    s = sizes or SIZES
    x = torch.randn((s["rows"], s["cols"]), device=device, dtype=DTYPE)
    w = torch.rand((s["cols"],), device=device, dtype=DTYPE) + 0.5
    b = torch.randn((s["cols"],), device=device, dtype=DTYPE)
    return x, w, b


def reference(x, w, b):
    return torch.nn.functional.layer_norm(x.float(), (x.shape[-1],), w.float(), b.float(), EPS).to(x.dtype)
