"""CHEATER: TF32-style input truncation (10 mantissa bits kept, the rest dropped), fp32
accumulation. The error is biased, so it grows with the row length: under a loose tolerance
it passes the benchmark length and fails at 4x — only the error-growth check sees it."""

import triton
import triton.language as tl


@triton.jit
def rowsum_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        x = tl.load(x_ptr + row * stride + start + offs, mask=start + offs < n_cols, other=0.0)
        bits = x.to(tl.int32, bitcast=True) & -8192  # clear the 13 low mantissa bits
        acc += bits.to(tl.float32, bitcast=True)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def run(x, out):
    rowsum_kernel[(x.shape[0],)](x, out, x.stride(0), x.shape[1], BLOCK=32)
