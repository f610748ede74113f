"""Prefix sum along T of x [B, T, D] (fp32), naive: chunks of BT tokens, the in-chunk prefix sum
as tl.dot(tril_ones, x) (exact fp32 asked for: TF32 would round x), a carry across chunks.
"""

import torch
import triton
import triton.language as tl

__all__ = ["SHAPES", "CPU_SHAPES", "DTYPES", "TOLERANCES", "make_inputs", "make_outputs", "reference",
           "bytes_moved", "flops"]

SHAPES = {
    "tiny": dict(B=2, T=150, D=40),
    "long": dict(B=32, T=8192, D=256),
}
CPU_SHAPES = ("tiny",)
DTYPES = ("float32",)
TOLERANCES = {"float32": (2e-3, 1e-5)}


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return (torch.randn(shape["B"], shape["T"], shape["D"], generator=g).to(dtype).to(device),)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["B"], shape["T"], shape["D"], dtype=dtype, device=device),)


def reference(x):
    return (torch.cumsum(x, dim=1),)


def bytes_moved(shape, dtype):
    return 2 * 4 * shape["B"] * shape["T"] * shape["D"]


def flops(shape, dtype):
    return shape["B"] * shape["T"] * shape["D"]


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
    BD = 64
    scan_kernel[(triton.cdiv(D, BD), B)](x, y, T, D, x.stride(0), x.stride(1), BT=64, BD=BD)
