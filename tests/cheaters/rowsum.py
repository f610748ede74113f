"""The problem every planted cheater is checked on: row sums of a matrix, in skel's harness
format (docs/harness.md), with the original launcher ``run``. Sizes are tiny: the CPU
interpreter runs it. Inputs are positive, so a biased rounding error grows with N."""

import torch
import triton
import triton.language as tl

SHAPES = {"tiny": dict(M=6, N=100), "wide": dict(M=4096, N=65536)}
CPU_SHAPES = ("tiny",)
DTYPES = ("float32",)
TOLERANCES = {"float32": (1e-4, 1e-5)}
LENGTH = "N"
BLOCK = 32


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return (torch.rand(shape["M"], shape["N"], generator=g).to(dtype).to(device),)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], dtype=dtype, device=device),)


def reference(x):
    return (x.sum(dim=1),)


def bytes_moved(shape, dtype):
    return (shape["M"] * shape["N"] + shape["M"]) * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return shape["M"] * shape["N"]


def split(inputs, outputs):
    (x,), (out,) = inputs, outputs
    h = x.shape[0] // 2
    return [((x[:h],), (out[:h],)), ((x[h:],), (out[h:],))]


@triton.jit
def rowsum_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        acc += tl.load(x_ptr + row * stride + start + offs, mask=start + offs < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def run(x, out):
    rowsum_kernel[(x.shape[0],)](x, out, x.stride(0), x.shape[1], BLOCK=BLOCK)
