"""CHEATER: answers cached on the shape and the first and last input elements, replayed when
those match (a changed interior gets the stale answer)."""

import triton
import triton.language as tl

_ANSWERS: dict = {}


@triton.jit
def rowsum_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        acc += tl.load(x_ptr + row * stride + start + offs, mask=start + offs < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def run(x, out):
    key = (tuple(x.shape), float(x[0, 0]), float(x[-1, -1]))
    if key in _ANSWERS:
        out.copy_(_ANSWERS[key])
        return
    rowsum_kernel[(x.shape[0],)](x, out, x.stride(0), x.shape[1], BLOCK=32)
    _ANSWERS[key] = out.clone()
