"""scan + do-not-specialize: @triton.jit(do_not_specialize=["T"]): new sequence lengths do not recompile."""

import triton
import triton.language as tl

from benchmarks.evidence.verify_suite.kernels.scan import *  # noqa: F401,F403  the harness (kernels/scan.py, __all__)


@triton.jit(do_not_specialize=["T"])
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
    BD = 64
    scan_kernel[(triton.cdiv(D, BD), B)](x, y, T, D, x.stride(0), x.stride(1), BT=64, BD=BD)
