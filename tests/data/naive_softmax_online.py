"""What an agent writes after skel suggests `online-softmax` for tests/data/naive_softmax.py:
the max pass merged into the exp-sum pass with a running max `m` and a sum `l` rescaled by
`exp(m - m_new)` whenever the maximum grows (the skeleton's template, applied by hand). Two
reads of each row instead of three; same launcher ``run``."""

import triton
import triton.language as tl

BLOCK = 128


@triton.jit
def softmax_online_kernel(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride
    y_row = y_ptr + row * stride
    cols = tl.arange(0, BLOCK)

    # one pass: running max and rescaled running sum
    m = float("-inf")
    s = 0.0
    for start in range(0, n_cols, BLOCK):
        x = tl.load(x_row + start + cols, mask=start + cols < n_cols, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new

    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=float("-inf"))
        y = tl.exp(x.to(tl.float32) - m) / s
        tl.store(y_row + start + cols, y, mask=mask)


def run(x, y):
    softmax_online_kernel[(x.shape[0],)](x, y, x.shape[1], x.stride(0), BLOCK=BLOCK)
