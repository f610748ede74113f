"""CHEATER (GPU-only): walks the rows forwards and backwards on alternate calls, so each call
starts on the rows the previous call left in L2. On a matrix twice the L2's size, timed
back-to-back without flushing, that reads up to half of it from L2 and looks faster; with the
L2 flushed before every timed call (and inputs rotated) the advantage is gone."""

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

_CALLS = [0]


def run(x, out):
    _CALLS[0] += 1
    rowsum_kernel[(x.shape[0],)](x, out, x.stride(0), x.shape[0], x.shape[1], REVERSE=_CALLS[0] % 2 == 1,
                                 BLOCK=BLOCK)
