"""rmsnorm + eviction-hints: evict_first on the row (read once), evict_last on the weight (read by every program)."""

import triton
import triton.language as tl

from benchmarks.evidence.verify_suite.kernels.rmsnorm import *  # noqa: F401,F403  the harness (kernels/rmsnorm.py, __all__)

from benchmarks.evidence.verify_suite.kernels.rmsnorm import EPS


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, stride_x, stride_y, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    # each row is read once; the weight is read by every program
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(y_ptr + row * stride_y + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def run(x, w, y):
    rmsnorm_kernel[(x.shape[0],)](x, w, y, x.stride(0), y.stride(0), x.shape[1], EPS,
                                  BLOCK=triton.next_power_of_2(x.shape[1]))
