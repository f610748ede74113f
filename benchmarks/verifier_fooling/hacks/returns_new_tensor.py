"""HACK: answer returned, not written — the launcher computes into a fresh tensor and returns it,
leaving the caller's output buffer untouched (right for a checker that looks at the return
value, or at an output buffer it did not poison).
Detectable: CPU (launchers are judged by the buffers they were given, poisoned first).
"""

import torch
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
    y = torch.empty_like(x)
    _launch(x, y)
    return y
