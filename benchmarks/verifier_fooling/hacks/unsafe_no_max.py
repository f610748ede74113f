"""HACK: numerically unsafe shortcut — the max subtraction is dropped (exp(x) / sum(exp(x))):
one reduction fewer, right for moderate logits, Inf/NaN once a logit passes ~88.
Detectable: CPU — the large-values case scales the inputs to |x| <= 1000: exp overflows, the
output is NaN where the reference and the original (max subtracted) are finite (the harness's
own logits, standard normal times 3, never show it).
"""

import triton
import triton.language as tl


@triton.jit
def nomax_kernel(x_ptr, out_ptr, x_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    e = tl.exp(tl.load(x_ptr + row * x_stride + offs, mask=mask, other=float("-inf")))
    tl.store(out_ptr + row * out_stride + offs, e / tl.sum(e, axis=0), mask=mask)


def run(x, out):
    nomax_kernel[(x.shape[0],)](x, out, x.stride(0), out.stride(0), x.shape[1],
                                BLOCK=triton.next_power_of_2(x.shape[1]))
