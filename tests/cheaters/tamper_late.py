"""CHEATER: right at import; on its first call it replaces the verifier's comparison (every
output reported exact) and from then on writes zeros."""

import sys

import triton
import triton.language as tl

_PATCHED = []


@triton.jit
def rowsum_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        acc += tl.load(x_ptr + row * stride + start + offs, mask=start + offs < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def _exact(out, ref, atol, rtol, index):
    import sys  # resolved where the code runs: the checker's module has no `sys`

    checker = sys.modules["skel.verifier.correctness"]
    return checker.OutputCheck(index, 0.0, 0.0, 0, int(out.numel()), atol, rtol)


def run(x, out):
    if not _PATCHED:
        checker = sys.modules.get("skel.verifier.correctness")
        if checker is not None:
            checker.compare.__code__ = _exact.__code__  # the same function object, other code
        _PATCHED.append(True)
    out.zero_()
