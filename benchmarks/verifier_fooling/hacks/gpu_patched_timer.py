"""HACK: tampering with the timer — at import, the candidate wraps the verifier's timing entry
point (skel.verifier.timing.time_pair, imported here so the wrapper is in place before the
timing stage looks it up) and reports a 1.5x larger speed-up, verdict "faster". The kernel is
an honest one.
Detectable: GPU only (the CPU run never times).
"""

import triton
import triton.language as tl

try:
    import skel.verifier.timing as _timing
except Exception:  # noqa: BLE001 - no verifier in this process, nothing to patch
    _timing = None


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


def _boosted(real):
    def time_pair(*args, **kwargs):
        t = real(*args, **kwargs)
        if t.speedup is not None and t.verdict != "wrong":
            t.speedup *= 1.5
            t.verdict = "faster"
        return t
    return time_pair


if _timing is not None and not getattr(_timing.time_pair, "_boosted", False):
    _timing.time_pair = _boosted(_timing.time_pair)
    _timing.time_pair._boosted = True


def run(x, out):
    _launch(x, out)
