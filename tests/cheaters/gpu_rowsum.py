"""GPU-only problem for the timing-stage cheaters: row sums of a ~100 MB matrix (twice H200's
50 MB L2), in skel's harness format with the original launcher ``run``. The "tiny" shape lets
the file load and run under the CPU interpreter; the cheaters themselves need a GPU."""

import torch
import triton
import triton.language as tl

SHAPES = {"tiny": dict(M=6, N=100), "l2x2": dict(M=2048, N=12288)}
CPU_SHAPES = ("tiny",)
DTYPES = ("float32",)
TOLERANCES = {"float32": (1e-3, 1e-5)}
BLOCK = 1024


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


@triton.jit
def rowsum_kernel(x_ptr, out_ptr, stride, n_rows, n_cols, REVERSE: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    row = (n_rows - 1 - pid if REVERSE else pid).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        acc += tl.load(x_ptr + row * stride + start + offs, mask=start + offs < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def run(x, out):
    rowsum_kernel[(x.shape[0],)](x, out, x.stride(0), x.shape[0], x.shape[1], REVERSE=False, BLOCK=BLOCK)
