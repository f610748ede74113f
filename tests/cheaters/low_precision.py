"""CHEATER: silently lowers precision: fp16 math in an fp32 problem."""

import triton
import triton.language as tl


@triton.jit
def rowsum_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float16)
    for start in range(0, n_cols, BLOCK):
        x = tl.load(x_ptr + row * stride + start + offs, mask=start + offs < n_cols, other=0.0)
        acc += x.to(tl.float16)
    tl.store(out_ptr + row, tl.sum(acc, axis=0).to(tl.float32))


def run(x, out):
    rowsum_kernel[(x.shape[0],)](x, out, x.stride(0), x.shape[1], BLOCK=32)
