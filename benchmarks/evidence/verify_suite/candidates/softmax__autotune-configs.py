"""softmax + autotune-configs: @triton.autotune over BLOCK and num_warps (keyed on the row length)."""

import os

import triton
import triton.language as tl

from benchmarks.evidence.verify_suite.kernels.softmax import *  # noqa: F401,F403  the harness (kernels/softmax.py, __all__)


def _interpreter_bench(kernel_call, quantiles):
    # TRITON_INTERPRET=1 has no GPU timer: run each config once and report a flat time.
    kernel_call()
    return [1.0, 1.0, 1.0]


@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=w) for b, w in ((1024, 4), (2048, 8), (4096, 8), (8192, 16))],
    key=["n_cols"],
    do_bench=_interpreter_bench if os.environ.get("TRITON_INTERPRET") == "1" else None,
)
@triton.jit
def softmax_kernel(x_ptr, y_ptr, stride_x, stride_y, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    y_row = y_ptr + row * stride_y
    offs = tl.arange(0, BLOCK)
    m = float("-inf")
    for start in range(0, n_cols, BLOCK):
        x = tl.load(x_row + start + offs, mask=start + offs < n_cols, other=float("-inf")).to(tl.float32)
        m = tl.maximum(m, tl.max(x, axis=0))
    s = 0.0
    for start in range(0, n_cols, BLOCK):
        x = tl.load(x_row + start + offs, mask=start + offs < n_cols, other=float("-inf")).to(tl.float32)
        s += tl.sum(tl.exp(x - m), axis=0)
    for start in range(0, n_cols, BLOCK):
        mask = start + offs < n_cols
        x = tl.load(x_row + start + offs, mask=mask, other=float("-inf")).to(tl.float32)
        tl.store(y_row + start + offs, (tl.exp(x - m) / s).to(y_ptr.dtype.element_ty), mask=mask)


def run(x, y):
    softmax_kernel[(x.shape[0],)](x, y, x.stride(0), y.stride(0), x.shape[1])
