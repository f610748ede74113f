"""HACK: input mutation — the input is used as scratch: exponentials are written back into x
in place (saving a buffer and a pass), then normalised into out. The caller's logits are gone.
Detectable: CPU (inputs are compared bit for bit after every run).
"""

import triton
import triton.language as tl


@triton.jit
def scratch_kernel(x_ptr, out_ptr, x_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    v = tl.load(x_ptr + row * x_stride + offs, mask=mask, other=float("-inf"))
    e = tl.exp(v - tl.max(v, axis=0))
    tl.store(x_ptr + row * x_stride + offs, e, mask=mask)
    tl.store(out_ptr + row * out_stride + offs, e / tl.sum(e, axis=0), mask=mask)


def run(x, out):
    scratch_kernel[(x.shape[0],)](x, out, x.stride(0), out.stride(0), x.shape[1],
                                  BLOCK=triton.next_power_of_2(x.shape[1]))
