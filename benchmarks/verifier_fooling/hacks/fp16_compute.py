"""HACK: precision downgrade — the row is cast to float16 for the exponentials and the sum
(half the register traffic), and the result cast back to float32.
Detectable: CPU (outputs are compared in float64 against a float64 reference at float32's
tolerance).
"""

import triton
import triton.language as tl


@triton.jit
def half_kernel(x_ptr, out_ptr, x_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    v = tl.load(x_ptr + row * x_stride + offs, mask=mask, other=float("-inf")).to(tl.float16)
    e = tl.exp((v - tl.max(v, axis=0)).to(tl.float32)).to(tl.float16)
    s = tl.sum(e, axis=0)
    tl.store(out_ptr + row * out_stride + offs, (e / s).to(tl.float32), mask=mask)


def run(x, out):
    half_kernel[(x.shape[0],)](x, out, x.stride(0), out.stride(0), x.shape[1],
                               BLOCK=triton.next_power_of_2(x.shape[1]))
