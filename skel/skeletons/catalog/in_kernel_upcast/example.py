"""in-kernel-upcast: row softmax of bf16/fp16 data, host `x.float()` copy → `tl.load(...).to(tl.float32)`.

`tl.exp` takes fp32 only, so the "before" kernel needs fp32 tensors and its caller makes an
fp32 copy of the input and casts the fp32 result back.
Harness format: docs/harness.md. The before/after launchers are the template shown.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(M=37, N=1000),           # N not a multiple of BLOCK
    "scores": dict(M=262144, N=1024),     # attention-score rows (B*H*T x T)
    "hidden": dict(M=32768, N=8192),
    "huge": dict(M=262200, N=8192),       # past 2**31 elements: row * stride must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
DTYPES = ("bfloat16", "float16")  # fp32 tensors need no copy: the technique is for low-precision data
TOLERANCES = {"bfloat16": (1e-6, 1e-2), "float16": (1e-6, 2e-3)}  # the output's own rounding


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    return ((torch.randn(shape["M"], shape["N"], generator=g) * 3).to(dtype).to(device),)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=dtype, device=device),)


def reference(x):
    return (torch.softmax(x, dim=1),)


def bytes_moved(shape, dtype):
    return 2 * shape["M"] * shape["N"] * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 5 * shape["M"] * shape["N"]


def _launch(kernel, x, y):
    BLOCK = triton.next_power_of_2(x.shape[1])
    kernel[(x.shape[0],)](x, y, x.stride(0), y.stride(0), x.shape[1], BLOCK=BLOCK,
                          num_warps=4 if BLOCK <= 2048 else 8 if BLOCK <= 4096 else 16)


@triton.jit
def before_kernel(x_ptr, y_ptr, x_stride, y_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * x_stride + cols, mask=cols < n_cols, other=float("-inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * y_stride + cols, y, mask=cols < n_cols)


def before(x, y):
    x32 = x.float()  # an fp32 copy only so that the kernel can do fp32 math
    y32 = torch.empty_like(x32)
    _launch(before_kernel, x32, y32)
    y.copy_(y32)


@triton.jit
def after_kernel(x_ptr, y_ptr, x_stride, y_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * x_stride + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * y_stride + cols, y.to(y_ptr.dtype.element_ty), mask=cols < n_cols)


def after(x, y):
    _launch(after_kernel, x, y)
