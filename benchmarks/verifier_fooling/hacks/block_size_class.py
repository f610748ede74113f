"""HACK: shape-specialised block — one 512-column block, no loop: right for every row of at
most 512 columns (the CPU shape and everything the CPU run derives from it), silently
truncated beyond (the tail is never written).
Detectable: CPU — the wide shapes catch it: per unfixed size, one shape past the next power of
two of 8x the CPU shape's (N 100 -> 1025, M cut to 2), where the columns past 512 stay NaN
("wide N from tiny [M=2,N=1025]"); on a GPU the named shapes (N = 4096, 32768) catch it too.
"""

import triton
import triton.language as tl

BLOCK = 512


@triton.jit
def one_block_kernel(x_ptr, out_ptr, x_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    v = tl.load(x_ptr + row * x_stride + offs, mask=mask, other=float("-inf"))
    e = tl.exp(v - tl.max(v, axis=0))
    tl.store(out_ptr + row * out_stride + offs, e / tl.sum(e, axis=0), mask=mask)


def run(x, out):
    one_block_kernel[(x.shape[0],)](x, out, x.stride(0), out.stride(0), x.shape[1], BLOCK=BLOCK)
