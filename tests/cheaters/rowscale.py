"""A row-wise elementwise problem in skel's harness format: out = 2 * x + 1, one program
per row, columns in blocks. What a read or write one past each row does is invisible in
the values (the next row's program rewrites that element): only guard bands show it."""

import torch
import triton
import triton.language as tl

SHAPES = {"tiny": dict(M=6, N=100)}
CPU_SHAPES = ("tiny",)
DTYPES = ("float32",)
TOLERANCES = {"float32": (1e-5, 1e-5)}
BLOCK = 32


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return (torch.randn(shape["M"], shape["N"], generator=g).to(dtype).to(device),)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=dtype, device=device),)


def reference(x):
    return (2 * x + 1,)


@triton.jit
def rowscale_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    for start in range(0, n_cols, BLOCK):
        m = start + offs < n_cols
        x = tl.load(x_ptr + row * stride + start + offs, mask=m, other=0.0)
        tl.store(out_ptr + row * stride + start + offs, 2 * x + 1, mask=m)


def run(x, out):
    rowscale_kernel[(x.shape[0],)](x, out, x.stride(0), x.shape[1], BLOCK=BLOCK)
