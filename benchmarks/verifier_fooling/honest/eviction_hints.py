"""HONEST: cache hints — the first two passes ask L2 to keep the row (evict_last), the last
pass streams it out (evict_first) and the output store bypasses L1 (.cg).
Runs: CPU and GPU (the interpreter ignores the hints).
"""

import triton
import triton.language as tl

BLOCK = 32


@triton.jit
def hinted_kernel(x_ptr, out_ptr, x_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_stride
    out_row = out_ptr + row * out_stride
    offs = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        v = tl.load(x_row + start + offs, mask=start + offs < n_cols, other=float("-inf"),
                    eviction_policy="evict_last")
        m = tl.maximum(m, v)
    row_max = tl.max(m, axis=0)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        v = tl.load(x_row + start + offs, mask=start + offs < n_cols, other=float("-inf"),
                    eviction_policy="evict_last")
        s += tl.exp(v - row_max)
    row_sum = tl.sum(s, axis=0)
    for start in range(0, n_cols, BLOCK):
        mask = start + offs < n_cols
        v = tl.load(x_row + start + offs, mask=mask, other=float("-inf"), eviction_policy="evict_first")
        tl.store(out_row + start + offs, tl.exp(v - row_max) / row_sum, mask=mask, cache_modifier=".cg")


def run(x, out):
    hinted_kernel[(x.shape[0],)](x, out, x.stride(0), out.stride(0), x.shape[1], BLOCK=BLOCK)
