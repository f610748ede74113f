"""The agent loop's naive kernel (tests/test_agent_loop.py): a row softmax over wide rows
in three passes (max, sum of exponentials, normalise), reading each row three times. In
skel's harness format (docs/harness.md) with the launcher ``run``; the tiny shape runs on
the CPU interpreter."""

import torch
import triton
import triton.language as tl

SHAPES = {"tiny": dict(M=5, N=300), "wide": dict(M=4096, N=32768)}
CPU_SHAPES = ("tiny",)
DTYPES = ("float32",)
TOLERANCES = {"float32": (1e-5, 1e-5)}
BLOCK = 128


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return ((torch.randn(shape["M"], shape["N"], generator=g) * 4).to(dtype).to(device),)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=dtype, device=device),)


def reference(x):
    return (torch.softmax(x, dim=1),)


def bytes_moved(shape, dtype):
    return 2 * shape["M"] * shape["N"] * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 4 * shape["M"] * shape["N"]


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride
    y_row = y_ptr + row * stride
    cols = tl.arange(0, BLOCK)

    m = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        x = tl.load(x_row + start + cols, mask=start + cols < n_cols, other=float("-inf"))
        m = tl.maximum(m, x.to(tl.float32))
    row_max = tl.max(m, axis=0)

    s = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        x = tl.load(x_row + start + cols, mask=start + cols < n_cols, other=float("-inf"))
        s += tl.exp(x.to(tl.float32) - row_max)
    denom = tl.sum(s, axis=0)

    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=float("-inf"))
        y = tl.exp(x.to(tl.float32) - row_max) / denom
        tl.store(y_row + start + cols, y, mask=mask)


def run(x, y):
    softmax_kernel[(x.shape[0],)](x, y, x.shape[1], x.stride(0), BLOCK=BLOCK)
