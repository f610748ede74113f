"""CHEATER (a real bug class): reads rows from the start of the input's storage, ignoring a
view's offset. Right on a whole tensor; wrong on the second part of a split problem."""

import torch
import triton
import triton.language as tl


@triton.jit
def rowsum_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        acc += tl.load(x_ptr + row * stride + start + offs, mask=start + offs < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def run(x, out):
    base = torch.as_strided(x, x.shape, x.stride(), 0)
    rowsum_kernel[(x.shape[0],)](base, out, x.stride(0), x.shape[1], BLOCK=32)
