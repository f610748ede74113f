"""int64-offsets: an RMSNorm forward whose `row * stride` is an int32 product → the row
index promoted with `.to(tl.int64)`.

x is [M, N]; y = x * rsqrt(mean(x**2) + eps) * w. A correctness technique: at the timed
shapes both sides are right and the pair measures what the 64-bit offsets cost; at the
CHECK_ONLY shape (past 2**31 elements) `row * stride` wraps in int32 and the "before" side
reads and writes the wrong memory.

The tensors of the CHECK_ONLY shape are views that start 2**31 elements into a larger
buffer (as a slice of a packed activation buffer would): the before side's wrapped,
negative offsets then land in memory this process owns, so the overflow shows up as wrong
values instead of an illegal-address fault that would poison the CUDA context for the rest
of the verification run.
Harness format: docs/harness.md. The before/after launchers are the template shown.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(M=37, N=1000),             # N not a power of two, M not a multiple of anything
    "llama": dict(M=16384, N=4096),         # 16k tokens of a 4096-wide model
    "wide": dict(M=8192, N=8192),
    "huge": dict(M=525_000, N=4096),        # past 2**31 elements: row * N wraps in int32 from row 524,288
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
FIXES = ("huge",)                 # where the before is wrong (int32 offsets wrap): the evidence
DTYPES = ("bfloat16",)
TOLERANCES = {"bfloat16": (2e-2, 2e-2)}
EPS = 1e-6
_INT32_LIMIT = 1 << 31


def _in_padded_buffer(rows, cols, dtype, device):
    """A [rows, cols] tensor; past 2**31 elements, a view 2**31 elements into a buffer."""
    pad = _INT32_LIMIT if rows * cols > _INT32_LIMIT else 0
    buf = torch.empty(pad + rows * cols, dtype=dtype, device=device)
    return buf[pad:].view(rows, cols)


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    M, N = shape["M"], shape["N"]
    x = _in_padded_buffer(M, N, dtype, device)
    x.copy_(torch.randn(M, N, generator=g, device=device, dtype=torch.float32).to(dtype))
    if x.untyped_storage().size() > x.numel() * x.element_size():
        base = torch.empty(0, dtype=dtype, device=device).set_(x.untyped_storage())
        base[:_INT32_LIMIT].fill_(7.0)  # what a wrapped read finds: never a right answer
    w = (1.0 + 0.1 * torch.randn(N, generator=g, device=device)).to(dtype)
    return x, w


def make_outputs(shape, dtype, device):
    return (_in_padded_buffer(shape["M"], shape["N"], dtype, device),)


def reference(x, w):
    y = torch.empty_like(x)
    for s in range(0, x.shape[0], 1 << 16):  # row chunks: the CHECK_ONLY shape's float64 temporaries stay small
        xc = x[s:s + (1 << 16)]
        y[s:s + (1 << 16)] = xc * torch.rsqrt(xc.pow(2).mean(dim=1, keepdim=True) + EPS) * w
    return (y,)


def bytes_moved(shape, dtype):
    e = torch.tensor([], dtype=dtype).element_size()
    return (2 * shape["M"] + 1) * shape["N"] * e


def flops(shape, dtype):
    return 4 * shape["M"] * shape["N"]


@triton.jit
def before_kernel(x_ptr, w_ptr, y_ptr, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=m, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(y_ptr + row * stride + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=m)


def before(x, w, y):
    M, N = x.shape
    BLOCK = triton.next_power_of_2(N)
    before_kernel[(M,)](x, w, y, x.stride(0), N, EPS, BLOCK=BLOCK, num_warps=8 if BLOCK >= 4096 else 4)


@triton.jit
def after_kernel(x_ptr, w_ptr, y_ptr, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)  # row * stride is now a 64-bit product
    cols = tl.arange(0, BLOCK)
    m = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=m, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(y_ptr + row * stride + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=m)


def after(x, w, y):
    M, N = x.shape
    BLOCK = triton.next_power_of_2(N)
    after_kernel[(M,)](x, w, y, x.stride(0), N, EPS, BLOCK=BLOCK, num_warps=8 if BLOCK >= 4096 else 4)
