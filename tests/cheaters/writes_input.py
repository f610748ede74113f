"""CHEATER: computes in place in its input (uses x as scratch), saving an allocation."""

import triton
import triton.language as tl


@triton.jit
def rowsum_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        acc += tl.load(x_ptr + row * stride + start + offs, mask=start + offs < n_cols, other=0.0)
    s = tl.sum(acc, axis=0)
    tl.store(x_ptr + row * stride, s)
    tl.store(out_ptr + row, s)


def run(x, out):
    rowsum_kernel[(x.shape[0],)](x, out, x.stride(0), x.shape[1], BLOCK=32)
