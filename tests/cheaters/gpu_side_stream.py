"""CHEATER (GPU-only): launches the honest kernel on a side stream the timer's events do not
wait for, so CUDA events on the current stream see (almost) nothing. Results are right once
the device is synchronised, so only the timing stage can catch it: device-synchronised wall
time exceeds event time by the kernel's time (and the events beat the roofline)."""

import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def rowsum_kernel(x_ptr, out_ptr, stride, n_rows, n_cols, REVERSE: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    row = (n_rows - 1 - pid if REVERSE else pid).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        acc += tl.load(x_ptr + row * stride + start + offs, mask=start + offs < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))

_SIDE: list = []


def run(x, out):
    if not _SIDE:
        _SIDE.append(torch.cuda.Stream())
    side = _SIDE[0]
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        rowsum_kernel[(x.shape[0],)](x, out, x.stride(0), x.shape[0], x.shape[1], REVERSE=False, BLOCK=BLOCK)
