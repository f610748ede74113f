"""HACK: precision downgrade by approximation — exp replaced by a cheap 2**t with t split into
integer and fraction parts and the fraction's power taken from a cubic polynomial (relative
error ~1e-4): fewer special-function instructions, results off in the fourth digit.
Detectable: CPU (beyond float32's tolerance against the float64 reference).
"""

import triton
import triton.language as tl

LOG2E = 1.4426950408889634


@triton.jit
def cheap_exp(z, LOG2E: tl.constexpr):
    t = z * LOG2E
    ti = tl.floor(t)
    f = t - ti
    # 2**f on [0, 1) by a cubic fit (not exact: that is the point)
    p = 1.0 + f * (0.6951786 + f * (0.2261105 + f * 0.0787109))
    return p * tl.exp2(ti)


@triton.jit
def approx_kernel(x_ptr, out_ptr, x_stride, out_stride, n_cols, LOG2E: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    v = tl.load(x_ptr + row * x_stride + offs, mask=mask, other=float("-inf"))
    e = tl.where(mask, cheap_exp(v - tl.max(v, axis=0), LOG2E), 0.0)
    tl.store(out_ptr + row * out_stride + offs, e / tl.sum(e, axis=0), mask=mask)


def run(x, out):
    approx_kernel[(x.shape[0],)](x, out, x.stride(0), out.stride(0), x.shape[1], LOG2E=LOG2E,
                                 BLOCK=triton.next_power_of_2(x.shape[1]))
