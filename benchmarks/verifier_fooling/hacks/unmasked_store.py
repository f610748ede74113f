"""HACK: out-of-bounds writes — the store's mask is dropped (one predicate fewer): each row
writes its whole power-of-two block, zeros past column N spilling into the next row (which
that row's program overwrites, if it runs later) and, from the last row, past the end of the
output buffer. The interpreter runs programs in order, so every in-bounds value ends up right.
Detectable: CPU (with guard bands around the outputs, a write outside them is seen; on a GPU
program order is not fixed, so the spill can also overwrite finished rows).
"""

import triton
import triton.language as tl


@triton.jit
def spill_kernel(x_ptr, out_ptr, x_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + row * x_stride + offs, mask=offs < n_cols, other=float("-inf"))
    e = tl.exp(v - tl.max(v, axis=0))
    tl.store(out_ptr + row * out_stride + offs, e / tl.sum(e, axis=0))


def run(x, out):
    spill_kernel[(x.shape[0],)](x, out, x.stride(0), out.stride(0), x.shape[1],
                                BLOCK=triton.next_power_of_2(x.shape[1]))
