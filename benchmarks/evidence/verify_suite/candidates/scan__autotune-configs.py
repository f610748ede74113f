"""scan + autotune-configs: @triton.autotune over BT/BD, num_warps and num_stages, keyed on D."""

import os

import triton
import triton.language as tl

from benchmarks.evidence.verify_suite.kernels.scan import *  # noqa: F401,F403  the harness (kernels/scan.py, __all__)


def _interpreter_bench(kernel_call, quantiles):
    # TRITON_INTERPRET=1 has no GPU timer: run each config once and report a flat time.
    kernel_call()
    return [1.0, 1.0, 1.0]


@triton.autotune(
    configs=[triton.Config({"BT": bt, "BD": bd}, num_warps=w, num_stages=s)
             for bt, bd, w, s in ((64, 64, 4, 2), (64, 32, 4, 3), (32, 64, 4, 3), (64, 128, 8, 2), (128, 64, 8, 2))],
    key=["D"],
    do_bench=_interpreter_bench if os.environ.get("TRITON_INTERPRET") == "1" else None,
)
@triton.jit
def scan_kernel(x_ptr, y_ptr, T, D, stride_b, stride_t, BT: tl.constexpr, BD: tl.constexpr):
    i_d = tl.program_id(0)
    i_b = tl.program_id(1).to(tl.int64)
    offs_t = tl.arange(0, BT)
    offs_d = i_d * BD + tl.arange(0, BD)
    tril = (offs_t[:, None] >= offs_t[None, :]).to(tl.float32)
    carry = tl.zeros((BD,), dtype=tl.float32)
    for t0 in range(0, T, BT):
        t = t0 + offs_t
        mask = (t[:, None] < T) & (offs_d[None, :] < D)
        off = i_b * stride_b + t[:, None].to(tl.int64) * stride_t + offs_d[None, :]
        x = tl.load(x_ptr + off, mask=mask, other=0.0).to(tl.float32)
        y = tl.dot(tril, x, input_precision="ieee") + carry[None, :]
        tl.store(y_ptr + off, y.to(y_ptr.dtype.element_ty), mask=mask)
        carry += tl.sum(x, axis=0)


def run(x, y):
    B, T, D = x.shape
    grid = lambda meta: (triton.cdiv(D, meta["BD"]), B)  # noqa: E731
    scan_kernel[grid](x, y, T, D, x.stride(0), x.stride(1))
