"""A correct candidate with torch glue around its kernel (a contiguous copy, the output zeroed
first, a scale by 1.0 after): must PASS; only a candidate with no kernel at all is a fallback."""

import triton
import triton.language as tl


@triton.jit
def rowsum_glue_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        acc += tl.load(x_ptr + row * stride + start + offs, mask=start + offs < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def run(x, out):
    x = x.contiguous()
    out.zero_()
    rowsum_glue_kernel[(x.shape[0],)](x, out, x.stride(0), x.shape[1], BLOCK=64)
    out.mul_(1.0)
