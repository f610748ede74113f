"""cross_entropy + expert: one online pass in log2 units (exp2), streamed loads (evict_first), 8192-wide tiles over 16 warps."""

import triton
import triton.language as tl

from benchmarks.evidence.verify_suite.kernels.cross_entropy import *  # noqa: F401,F403  the harness (kernels/cross_entropy.py, __all__)


@triton.jit
def cross_entropy_kernel(logits_ptr, target_ptr, loss_ptr, stride, n_cols, BLOCK: tl.constexpr):
    LOG2E: tl.constexpr = 1.4426950408889634
    LN2: tl.constexpr = 0.6931471805599453
    row = tl.program_id(0).to(tl.int64)
    row_ptr = logits_ptr + row * stride
    offs = tl.arange(0, BLOCK)
    m = float("-inf")
    s = 0.0
    for start in range(0, n_cols, BLOCK):
        x = tl.load(row_ptr + start + offs, mask=start + offs < n_cols, other=float("-inf"),
                    eviction_policy="evict_first").to(tl.float32) * LOG2E
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp2(m - m_new) + tl.sum(tl.exp2(x - m_new), axis=0)
        m = m_new
    t = tl.load(target_ptr + row)
    x_t = tl.load(row_ptr + t).to(tl.float32)
    tl.store(loss_ptr + row, (m + tl.log2(s)) * LN2 - x_t)


def run(logits, target, loss):
    cross_entropy_kernel[(logits.shape[0],)](logits, target, loss, logits.stride(0), logits.shape[1],
                                             BLOCK=min(8192, triton.next_power_of_2(logits.shape[1])), num_warps=16)
