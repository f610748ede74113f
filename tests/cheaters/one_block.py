"""CHEATER: one 512-column block and no loop: right for rows of at most 512 columns (every shape
the CPU run had derived from the tiny one), the columns past 512 never summed."""

import triton
import triton.language as tl


@triton.jit
def one_block_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + offs, mask=offs < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(x, axis=0))


def run(x, out):
    one_block_kernel[(x.shape[0],)](x, out, x.stride(0), x.shape[1], BLOCK=512)
