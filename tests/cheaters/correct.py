"""A correct candidate (two rows per program, a different reduction order): must PASS."""

import triton
import triton.language as tl


@triton.jit
def rowsum2_kernel(x_ptr, out_ptr, stride, n_rows, n_cols, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * 2 + tl.arange(0, 2)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([2, BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + offs
        mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
        acc += tl.load(x_ptr + rows[:, None].to(tl.int64) * stride + cols[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + rows, tl.sum(acc, axis=1), mask=rows < n_rows)


def run(x, out):
    rowsum2_kernel[(triton.cdiv(x.shape[0], 2),)](x, out, x.stride(0), x.shape[0], x.shape[1], BLOCK=64)
