"""HONEST: exp2 folding — exp(v - max) computed as exp2((v - max) * log2(e)), which maps to the
hardware's ex2 instruction; otherwise the original's three passes.
Runs: CPU and GPU.
"""

import triton
import triton.language as tl

BLOCK = 32
LOG2E = 1.4426950408889634


@triton.jit
def exp2_kernel(x_ptr, out_ptr, x_stride, out_stride, n_cols, LOG2E: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_stride
    out_row = out_ptr + row * out_stride
    offs = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        m = tl.maximum(m, tl.load(x_row + start + offs, mask=start + offs < n_cols, other=float("-inf")))
    scaled_max = tl.max(m, axis=0) * LOG2E
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        v = tl.load(x_row + start + offs, mask=start + offs < n_cols, other=float("-inf"))
        s += tl.exp2(v * LOG2E - scaled_max)
    row_sum = tl.sum(s, axis=0)
    for start in range(0, n_cols, BLOCK):
        mask = start + offs < n_cols
        v = tl.load(x_row + start + offs, mask=mask, other=float("-inf"))
        tl.store(out_row + start + offs, tl.exp2(v * LOG2E - scaled_max) / row_sum, mask=mask)


def run(x, out):
    exp2_kernel[(x.shape[0],)](x, out, x.stride(0), out.stride(0), x.shape[1], LOG2E=LOG2E, BLOCK=BLOCK)
