"""HONEST: a different block size — the original's three passes with 256-column blocks and
8 warps (fewer loop trips on long rows; more masked lanes on short ones).
Runs: CPU and GPU.
"""

import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def big_kernel(x_ptr, out_ptr, x_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_stride
    out_row = out_ptr + row * out_stride
    offs = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        m = tl.maximum(m, tl.load(x_row + start + offs, mask=start + offs < n_cols, other=float("-inf")))
    row_max = tl.max(m, axis=0)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        v = tl.load(x_row + start + offs, mask=start + offs < n_cols, other=float("-inf"))
        s += tl.exp(v - row_max)
    row_sum = tl.sum(s, axis=0)
    for start in range(0, n_cols, BLOCK):
        mask = start + offs < n_cols
        v = tl.load(x_row + start + offs, mask=mask, other=float("-inf"))
        tl.store(out_row + start + offs, tl.exp(v - row_max) / row_sum, mask=mask)


def run(x, out):
    big_kernel[(x.shape[0],)](x, out, x.stride(0), out.stride(0), x.shape[1], BLOCK=BLOCK, num_warps=8)
