"""Naive row softmax for wide rows: one program per row, a max pass and an exp-sum pass over the row in
BLOCK-wide chunks, then a third loop that writes exp(x - max) / sum."""
import torch
import triton
import triton.language as tl

KERNEL = "softmax_kernel"
SIZES = {"rows": 4096, "cols": 32768}
SHAPES = ["rows=4096", "cols=32768", "n_cols=32768"]
CPU_SIZES = {"rows": 5, "cols": 3000}
DTYPE = torch.float32


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * stride_x
    y_row = y_ptr + row * stride_y
    # pass 1: row max
    m = -float("inf")
    for c0 in range(0, n_cols, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf"))
        m = tl.maximum(m, tl.max(x, axis=0))
    # pass 2: sum of exponentials
    s = 0.0
    for c0 in range(0, n_cols, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf"))
        s += tl.sum(tl.exp(x - m), axis=0)
    # write
    for c0 in range(0, n_cols, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf"))
        tl.store(y_row + cols, tl.exp(x - m) / s, mask=cols < n_cols)


def launch(x):
    rows, cols = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(rows,)](x, y, cols, x.stride(0), y.stride(0), BLOCK=1024)
    return y


def make_inputs(device, sizes=None):
    s = sizes or SIZES
    return (torch.randn((s["rows"], s["cols"]), device=device, dtype=DTYPE) * 3,)


def reference(x):
    return torch.softmax(x.double(), dim=-1).float()
