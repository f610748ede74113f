"""HONEST: several rows per program — a 2-D tile of ROWS x BLOCK, so a short row does not
leave most of a program idle; the grid shrinks by ROWS. Rows past the end are masked.
Runs: CPU and GPU.
"""

import triton
import triton.language as tl

ROWS = 4
BLOCK = 64


@triton.jit
def tile_kernel(x_ptr, out_ptr, n_rows, x_stride, out_stride, n_cols, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    row_ok = rows < n_rows
    cols = tl.arange(0, BLOCK)
    x_rows = x_ptr + rows[:, None] * x_stride
    out_rows = out_ptr + rows[:, None] * out_stride
    m = tl.full([ROWS, BLOCK], float("-inf"), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        mask = row_ok[:, None] & (start + cols[None, :] < n_cols)
        m = tl.maximum(m, tl.load(x_rows + start + cols[None, :], mask=mask, other=float("-inf")))
    row_max = tl.max(m, axis=1)
    # rows past the end have max -inf: keep them finite so no NaN is computed (never stored)
    row_max = tl.where(row_ok, row_max, 0.0)
    s = tl.zeros([ROWS, BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        mask = row_ok[:, None] & (start + cols[None, :] < n_cols)
        v = tl.load(x_rows + start + cols[None, :], mask=mask, other=float("-inf"))
        s += tl.exp(v - row_max[:, None])
    row_sum = tl.sum(s, axis=1)
    row_sum = tl.where(row_ok, row_sum, 1.0)
    for start in range(0, n_cols, BLOCK):
        mask = row_ok[:, None] & (start + cols[None, :] < n_cols)
        v = tl.load(x_rows + start + cols[None, :], mask=mask, other=float("-inf"))
        tl.store(out_rows + start + cols[None, :], tl.exp(v - row_max[:, None]) / row_sum[:, None], mask=mask)


def run(x, out):
    n_rows = x.shape[0]
    tile_kernel[(triton.cdiv(n_rows, ROWS),)](x, out, n_rows, x.stride(0), out.stride(0), x.shape[1],
                                              ROWS=ROWS, BLOCK=BLOCK)
