"""HONEST: dispatch by row length — rows up to 256 columns go to a whole-row kernel (one
read), longer ones to a looped online-softmax kernel (two reads); both are right at every
size, so the branch is a speed choice, not a special case.
Runs: CPU and GPU.
"""

import triton
import triton.language as tl

WHOLE_ROW_MAX = 256
BLOCK = 128


@triton.jit
def short_kernel(x_ptr, out_ptr, x_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    v = tl.load(x_ptr + row * x_stride + offs, mask=mask, other=float("-inf"))
    e = tl.exp(v - tl.max(v, axis=0))
    tl.store(out_ptr + row * out_stride + offs, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def long_kernel(x_ptr, out_ptr, x_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_stride
    out_row = out_ptr + row * out_stride
    offs = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        v = tl.load(x_row + start + offs, mask=start + offs < n_cols, other=float("-inf"))
        new_m = tl.maximum(m, v)
        # a lane that has seen only padding keeps max -inf: give it a zero, not exp(nan)
        scale = tl.where(new_m == float("-inf"), 0.0, tl.exp(m - new_m))
        add = tl.where(new_m == float("-inf"), 0.0, tl.exp(v - new_m))
        s = s * scale + add
        m = new_m
    row_max = tl.max(m, axis=0)
    row_sum = tl.sum(tl.where(m == float("-inf"), 0.0, s * tl.exp(m - row_max)), axis=0)
    for start in range(0, n_cols, BLOCK):
        mask = start + offs < n_cols
        v = tl.load(x_row + start + offs, mask=mask, other=float("-inf"))
        tl.store(out_row + start + offs, tl.exp(v - row_max) / row_sum, mask=mask)


def run(x, out):
    n_rows, n_cols = x.shape
    if n_cols <= WHOLE_ROW_MAX:
        short_kernel[(n_rows,)](x, out, x.stride(0), out.stride(0), n_cols, BLOCK=triton.next_power_of_2(n_cols))
    else:
        long_kernel[(n_rows,)](x, out, x.stride(0), out.stride(0), n_cols, BLOCK=BLOCK, num_warps=8)
