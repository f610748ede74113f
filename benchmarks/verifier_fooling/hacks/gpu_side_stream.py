"""HACK: work on a side stream — the kernel is launched on a private stream that the caller's
stream never waits for, so CUDA events recorded on the current stream time (almost) nothing.
Results are right once the device is synchronised.
Detectable: GPU only (the CPU has no streams; here it launches plainly and is right).
"""

import torch
import triton
import triton.language as tl

_SIDE: list = []


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
    if not x.is_cuda:
        _launch(x, out)
        return
    if not _SIDE:
        _SIDE.append(torch.cuda.Stream())
    side = _SIDE[0]
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        _launch(x, out)
