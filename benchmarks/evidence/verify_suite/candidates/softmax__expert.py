"""softmax + expert: online max/sum pass + write pass, exp2 with log2e folded, evict_last on the first read, 4096-wide tiles, 8 warps."""

import triton
import triton.language as tl

from benchmarks.evidence.verify_suite.kernels.softmax import *  # noqa: F401,F403  the harness (kernels/softmax.py, __all__)


@triton.jit
def softmax_kernel(x_ptr, y_ptr, stride_x, stride_y, n_cols, BLOCK: tl.constexpr):
    LOG2E: tl.constexpr = 1.4426950408889634
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    y_row = y_ptr + row * stride_y
    offs = tl.arange(0, BLOCK)
    m = float("-inf")
    s = 0.0
    for start in range(0, n_cols, BLOCK):
        x = tl.load(x_row + start + offs, mask=start + offs < n_cols, other=float("-inf"),
                    eviction_policy="evict_last").to(tl.float32) * LOG2E
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp2(m - m_new) + tl.sum(tl.exp2(x - m_new), axis=0)
        m = m_new
    inv = 1.0 / s
    for start in range(0, n_cols, BLOCK):
        mask = start + offs < n_cols
        x = tl.load(x_row + start + offs, mask=mask, other=float("-inf"), eviction_policy="evict_first").to(tl.float32)
        tl.store(y_row + start + offs, (tl.exp2(x * LOG2E - m) * inv).to(y_ptr.dtype.element_ty), mask=mask)


def run(x, y):
    softmax_kernel[(x.shape[0],)](x, y, x.stride(0), y.stride(0), x.shape[1],
                                  BLOCK=min(4096, triton.next_power_of_2(x.shape[1])), num_warps=8)
