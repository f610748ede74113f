"""scan + expert: native tl.cumsum (exact fp32, O(n), no dot) per chunk with a carry; narrower BD=32 columns for 2x the programs, 128-token chunks, pipelined loads."""

import triton
import triton.language as tl

from benchmarks.evidence.verify_suite.kernels.scan import *  # noqa: F401,F403  the harness (kernels/scan.py, __all__)


@triton.jit
def scan_kernel(x_ptr, y_ptr, T, D, stride_b, stride_t, BT: tl.constexpr, BD: tl.constexpr):
    i_d = tl.program_id(0)
    i_b = tl.program_id(1).to(tl.int64)
    offs_t = tl.arange(0, BT)
    offs_d = i_d * BD + tl.arange(0, BD)
    carry = tl.zeros((BD,), dtype=tl.float32)
    for t0 in tl.range(0, T, BT, num_stages=3):
        t = t0 + offs_t
        mask = (t[:, None] < T) & (offs_d[None, :] < D)
        off = i_b * stride_b + t[:, None].to(tl.int64) * stride_t + offs_d[None, :]
        x = tl.load(x_ptr + off, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
        y = tl.cumsum(x, axis=0) + carry[None, :]
        tl.store(y_ptr + off, y.to(y_ptr.dtype.element_ty), mask=mask)
        carry += tl.sum(x, axis=0)


def run(x, y):
    B, T, D = x.shape
    BD = 32
    scan_kernel[(triton.cdiv(D, BD), B)](x, y, T, D, x.stride(0), x.stride(1), BT=128, BD=BD, num_warps=4)
