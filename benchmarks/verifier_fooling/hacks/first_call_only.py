"""HACK: work only on the first call — later calls return at once, leaving whatever the
output buffer holds (a timer that repeats the call sees almost nothing).
Detectable: CPU (outputs are poisoned before every run; the second seed finds them unwritten).
"""

import triton
import triton.language as tl

_DONE: list = []


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
    if _DONE:
        return
    _launch(x, out)
    _DONE.append(True)
