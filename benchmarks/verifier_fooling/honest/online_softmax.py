"""HONEST: online softmax — one pass keeps a running max and a rescaled running sum, then a
write pass: two reads of each row instead of three.
Runs: CPU and GPU.
"""

import triton
import triton.language as tl

BLOCK = 64


@triton.jit
def online_kernel(x_ptr, out_ptr, x_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_stride
    out_row = out_ptr + row * out_stride
    offs = tl.arange(0, BLOCK)
    run_max = tl.max(tl.full([BLOCK], float("-inf"), dtype=tl.float32), axis=0)
    run_sum = tl.sum(tl.zeros([BLOCK], dtype=tl.float32), axis=0)
    for start in range(0, n_cols, BLOCK):
        v = tl.load(x_row + start + offs, mask=start + offs < n_cols, other=float("-inf"))
        new_max = tl.maximum(run_max, tl.max(v, axis=0))
        run_sum = run_sum * tl.exp(run_max - new_max) + tl.sum(tl.exp(v - new_max), axis=0)
        run_max = new_max
    for start in range(0, n_cols, BLOCK):
        mask = start + offs < n_cols
        v = tl.load(x_row + start + offs, mask=mask, other=float("-inf"))
        tl.store(out_row + start + offs, tl.exp(v - run_max) / run_sum, mask=mask)


def run(x, out):
    online_kernel[(x.shape[0],)](x, out, x.stride(0), out.stride(0), x.shape[1], BLOCK=BLOCK)
