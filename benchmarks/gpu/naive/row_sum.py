"""Naive row-sum reduction: one program per row, a loop over the columns in BLOCK chunks, each chunk reduced
with tl.sum into a scalar accumulator."""
import torch
import triton
import triton.language as tl

KERNEL = "row_sum_kernel"
SIZES = {"rows": 16384, "cols": 8192}
SHAPES = ["rows=16384", "cols=8192", "n_cols=8192"]
CPU_SIZES = {"rows": 9, "cols": 2500}
DTYPE = torch.float32


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, stride_x, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = 0.0
    for c0 in range(0, n_cols, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride_x + cols, mask=cols < n_cols, other=0.0)
        acc += tl.sum(x, axis=0)
    tl.store(out_ptr + row, acc)


def launch(x):
    rows, cols = x.shape
    out = torch.empty((rows,), device=x.device, dtype=torch.float32)
    row_sum_kernel[(rows,)](x, out, cols, x.stride(0), BLOCK=1024)
    return out


def make_inputs(device, sizes=None):
    s = sizes or SIZES
    return (torch.randn((s["rows"], s["cols"]), device=device, dtype=DTYPE),)


def reference(x):
    return x.double().sum(-1).float()
