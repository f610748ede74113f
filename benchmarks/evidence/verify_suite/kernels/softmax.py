"""Row softmax, naive: one row per program, three passes over the row (max, exp-sum, write)."""

import torch
import triton
import triton.language as tl

__all__ = ["SHAPES", "CPU_SHAPES", "DTYPES", "TOLERANCES", "make_inputs", "make_outputs", "reference",
           "bytes_moved", "flops"]

SHAPES = {
    "tiny": dict(M=5, N=1000),
    "wide": dict(M=4096, N=32768),
    "vocab": dict(M=1024, N=128256),
}
CPU_SHAPES = ("tiny",)
DTYPES = ("bfloat16", "float32")
TOLERANCES = {"bfloat16": (1e-6, 8e-3), "float32": (1e-7, 1e-5)}
BLOCK = 1024


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return ((torch.randn(shape["M"], shape["N"], generator=g) * 3).to(dtype).to(device),)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=dtype, device=device),)


def reference(x):
    return (torch.softmax(x, dim=1),)


def bytes_moved(shape, dtype):
    return 2 * shape["M"] * shape["N"] * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 5 * shape["M"] * shape["N"]


@triton.jit
def softmax_kernel(x_ptr, y_ptr, stride_x, stride_y, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    y_row = y_ptr + row * stride_y
    offs = tl.arange(0, BLOCK)
    m = float("-inf")
    for start in range(0, n_cols, BLOCK):
        x = tl.load(x_row + start + offs, mask=start + offs < n_cols, other=float("-inf")).to(tl.float32)
        m = tl.maximum(m, tl.max(x, axis=0))
    s = 0.0
    for start in range(0, n_cols, BLOCK):
        x = tl.load(x_row + start + offs, mask=start + offs < n_cols, other=float("-inf")).to(tl.float32)
        s += tl.sum(tl.exp(x - m), axis=0)
    for start in range(0, n_cols, BLOCK):
        mask = start + offs < n_cols
        x = tl.load(x_row + start + offs, mask=mask, other=float("-inf")).to(tl.float32)
        tl.store(y_row + start + offs, (tl.exp(x - m) / s).to(y_ptr.dtype.element_ty), mask=mask)


def run(x, y):
    softmax_kernel[(x.shape[0],)](x, y, x.stride(0), y.stride(0), x.shape[1], BLOCK=BLOCK)
