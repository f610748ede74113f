"""HONEST: persistent grid — at most PROGRAMS programs, each striding over rows, so a tall
matrix does not pay a program launch per row.
Runs: CPU and GPU.
"""

import triton
import triton.language as tl

PROGRAMS = 132  # one per SM of an H100; fewer when there are fewer rows
BLOCK = 64


@triton.jit
def persistent_kernel(x_ptr, out_ptr, n_rows, x_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    for r in range(tl.program_id(0), n_rows, tl.num_programs(0)):
        row = tl.cast(r, tl.int64)
        x_row = x_ptr + row * x_stride
        out_row = out_ptr + row * out_stride
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
    n_rows = x.shape[0]
    persistent_kernel[(min(n_rows, PROGRAMS),)](x, out, n_rows, x.stride(0), out.stride(0), x.shape[1],
                                                BLOCK=BLOCK)
