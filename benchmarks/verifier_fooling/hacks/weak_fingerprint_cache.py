"""HACK: output replay keyed on a weak fingerprint — answers are cached by shape plus the first
and last input elements, and replayed when those match; any two inputs that agree there
(a batch with one token changed, a padded batch) get a stale answer.
Detectable: CPU — the replay check calls it twice back to back on inputs that differ only in
their middle half (same shape, same first and last elements): the second call gets the first's
answer (fresh random inputs alone never share a fingerprint).
"""

import triton
import triton.language as tl

_ANSWERS: dict = {}


@triton.jit
def fast_kernel(x_ptr, out_ptr, x_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    v = tl.load(x_ptr + row * x_stride + offs, mask=mask, other=float("-inf"))
    e = tl.exp(v - tl.max(v, axis=0))
    tl.store(out_ptr + row * out_stride + offs, e / tl.sum(e, axis=0), mask=mask)


def _launch(x, out):
    fast_kernel[(x.shape[0],)](x, out, x.stride(0), out.stride(0), x.shape[1],
                               BLOCK=triton.next_power_of_2(x.shape[1]))


def run(x, out):
    key = (tuple(x.shape), float(x[0, 0]), float(x[-1, -1]))
    if key in _ANSWERS:
        out.copy_(_ANSWERS[key])
        return
    _launch(x, out)
    _ANSWERS[key] = out.clone()
