"""CHEATER: mask `start + offs <= n_cols` reads and writes one element past each row. Every
value is right (the next row rewrites it), but the last row reads and writes past the end of
its tensors."""

import triton
import triton.language as tl

BLOCK = 32


@triton.jit
def rowscale_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    for start in range(0, n_cols, BLOCK):
        m = start + offs <= n_cols
        x = tl.load(x_ptr + row * stride + start + offs, mask=m, other=0.0)
        tl.store(out_ptr + row * stride + start + offs, 2 * x + 1, mask=m)


def run(x, out):
    rowscale_kernel[(x.shape[0],)](x, out, x.stride(0), x.shape[1], BLOCK=BLOCK)
