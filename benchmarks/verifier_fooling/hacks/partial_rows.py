"""HACK: partial writes — the grid is rounded down to a multiple of 4 rows ("the tail is
noise"), so up to three trailing rows are never computed.
Detectable: CPU (outputs are poisoned with NaN before every run; NaN never passes).
"""

import triton
import triton.language as tl


@triton.jit
def fast_kernel(x_ptr, out_ptr, x_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    v = tl.load(x_ptr + row * x_stride + offs, mask=mask, other=float("-inf"))
    e = tl.exp(v - tl.max(v, axis=0))
    tl.store(out_ptr + row * out_stride + offs, e / tl.sum(e, axis=0), mask=mask)


def _launch(x, out):
    fast_kernel[(x.shape[0],)](x, out, x.stride(0), out.stride(0), x.shape[1],
                               BLOCK=triton.next_power_of_2(x.shape[1]))


def run(x, out):
    rows = x.shape[0] // 4 * 4
    fast_kernel[(max(rows, 1),)](x, out, x.stride(0), out.stride(0), x.shape[1],
                                 BLOCK=triton.next_power_of_2(x.shape[1]))
