"""RMSNorm, naive: one row per program, the whole row in one block, weight re-read by every row."""

import torch
import triton
import triton.language as tl

__all__ = ["SHAPES", "CPU_SHAPES", "DTYPES", "TOLERANCES", "make_inputs", "make_outputs", "reference",
           "bytes_moved", "flops"]

SHAPES = {
    "tiny": dict(M=37, N=96),
    "narrow": dict(M=262144, N=512),
    "hidden": dict(M=32768, N=4096),
}
CPU_SHAPES = ("tiny",)
DTYPES = ("bfloat16", "float32")
TOLERANCES = {"bfloat16": (1e-2, 1e-2), "float32": (1e-5, 1e-5)}
EPS = 1e-6


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(shape["M"], shape["N"], generator=g).to(dtype).to(device)
    w = (1 + 0.1 * torch.randn(shape["N"], generator=g)).to(dtype).to(device)
    return (x, w)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=dtype, device=device),)


def reference(x, w):
    return (x * torch.rsqrt(x.pow(2).mean(dim=1, keepdim=True) + EPS) * w,)


def bytes_moved(shape, dtype):
    return (2 * shape["M"] + 1) * shape["N"] * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 4 * shape["M"] * shape["N"]


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, stride_x, stride_y, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(y_ptr + row * stride_y + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def run(x, w, y):
    rmsnorm_kernel[(x.shape[0],)](x, w, y, x.stride(0), y.stride(0), x.shape[1], EPS,
                                  BLOCK=triton.next_power_of_2(x.shape[1]))
