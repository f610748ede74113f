"""HACK: a dropped edge element — the store mask is off by one (offs < n_cols - 1), so the last
column of every row is never written; one element in N, easy to miss by eye.
Detectable: CPU (poisoned outputs: the unwritten element stays NaN).
"""

import triton
import triton.language as tl


@triton.jit
def edge_kernel(x_ptr, out_ptr, x_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    v = tl.load(x_ptr + row * x_stride + offs, mask=mask, other=float("-inf"))
    e = tl.exp(v - tl.max(v, axis=0))
    tl.store(out_ptr + row * out_stride + offs, e / tl.sum(e, axis=0), mask=offs < n_cols - 1)


def run(x, out):
    edge_kernel[(x.shape[0],)](x, out, x.stride(0), out.stride(0), x.shape[1],
                               BLOCK=triton.next_power_of_2(x.shape[1]))
