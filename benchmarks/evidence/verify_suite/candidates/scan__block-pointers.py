"""scan + block-pointers: the [BT, BD] x/y chunks through tl.make_block_ptr + tl.advance + boundary_check instead of offset grids and masks."""

import triton
import triton.language as tl

from benchmarks.evidence.verify_suite.kernels.scan import *  # noqa: F401,F403  the harness (kernels/scan.py, __all__)


@triton.jit
def scan_kernel(x_ptr, y_ptr, T, D, stride_b, stride_t, BT: tl.constexpr, BD: tl.constexpr):
    i_d = tl.program_id(0)
    i_b = tl.program_id(1).to(tl.int64)
    offs_t = tl.arange(0, BT)
    tril = (offs_t[:, None] >= offs_t[None, :]).to(tl.float32)
    p_x = tl.make_block_ptr(x_ptr + i_b * stride_b, shape=(T, D), strides=(stride_t, 1), offsets=(0, i_d * BD),
                            block_shape=(BT, BD), order=(1, 0))
    p_y = tl.make_block_ptr(y_ptr + i_b * stride_b, shape=(T, D), strides=(stride_t, 1), offsets=(0, i_d * BD),
                            block_shape=(BT, BD), order=(1, 0))
    carry = tl.zeros((BD,), dtype=tl.float32)
    for _ in range(0, T, BT):
        x = tl.load(p_x, boundary_check=(0, 1), padding_option="zero").to(tl.float32)
        y = tl.dot(tril, x, input_precision="ieee") + carry[None, :]
        tl.store(p_y, y.to(y_ptr.dtype.element_ty), boundary_check=(0, 1))
        carry += tl.sum(x, axis=0)
        p_x = tl.advance(p_x, (BT, 0))
        p_y = tl.advance(p_y, (BT, 0))


def run(x, y):
    B, T, D = x.shape
    BD = 64
    scan_kernel[(triton.cdiv(D, BD), B)](x, y, T, D, x.stride(0), x.stride(1), BT=64, BD=BD)
