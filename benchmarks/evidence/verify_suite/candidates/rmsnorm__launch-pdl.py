"""rmsnorm + launch-pdl: launch_pdl=True; the weight load runs before gdc_wait, x after it."""

import os

import triton
import triton.language as tl

from benchmarks.evidence.verify_suite.kernels.rmsnorm import *  # noqa: F401,F403  the harness (kernels/rmsnorm.py, __all__)

from benchmarks.evidence.verify_suite.kernels.rmsnorm import EPS

# the interpreter has no GDC intrinsics: PDL compiles in only for a real GPU
USE_PDL = os.environ.get("TRITON_INTERPRET") != "1"


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, stride_x, stride_y, n_cols, eps, BLOCK: tl.constexpr, USE_PDL: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)  # weights: nothing upstream writes them
    if USE_PDL:
        tl.extra.cuda.gdc_wait()  # x comes from the previous kernel
        tl.extra.cuda.gdc_launch_dependents()
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(y_ptr + row * stride_y + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def run(x, w, y):
    rmsnorm_kernel[(x.shape[0],)](x, w, y, x.stride(0), y.stride(0), x.shape[1], EPS,
                                  BLOCK=triton.next_power_of_2(x.shape[1]), USE_PDL=USE_PDL,
                                  **({"launch_pdl": True} if USE_PDL else {}))
