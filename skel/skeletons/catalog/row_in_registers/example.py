"""row-in-registers: LayerNorm that stores the centred row and loads it back → one load, kept in registers.

Harness format: docs/harness.md. The before/after launchers are the template shown.
A LayerNorm forward over `[M, N]` rows, one row per program, the row in one block
(`BLOCK = next_power_of_2(N)`). The before writes the centred row `x - mean` to `y`, loads
it back for the variance and the output, then overwrites `y`: per element 1 read of `x`,
2 writes and 1 read of `y`. The after keeps the centred row in registers: 1 read, 1 write.
On a GPU the after should approach the roofline (`bytes_moved`) where the before moves
about twice that; past ~16K columns one program's row spills and the gain goes ("wide32k").
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(M=37, N=100),               # neither size a power of two
    "hidden1024": dict(M=65536, N=1024),
    "hidden4096": dict(M=16384, N=4096),     # a 7-8B model's hidden size, 16K tokens
    "hidden8192": dict(M=8192, N=8192),      # a 70B model's hidden size
    "wide32k": dict(M=2048, N=32768),        # past the register budget: does not pay (the payoff says so)
}
CPU_SHAPES = ("tiny",)
DTYPES = ("bfloat16", "float32")
TOLERANCES = {"bfloat16": (2e-2, 2e-2), "float32": (1e-5, 1e-5)}  # bf16: the output's own rounding
EPS = 1e-5


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device="cpu").manual_seed(seed)
    x = (2 * torch.randn(shape["M"], shape["N"], generator=g) + 0.5).to(dtype).to(device)
    w = (1 + 0.1 * torch.randn(shape["N"], generator=g)).to(dtype).to(device)
    b = (0.1 * torch.randn(shape["N"], generator=g)).to(dtype).to(device)
    return x, w, b, EPS


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=dtype, device=device),)


def reference(x, w, b, eps):
    return (torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, eps),)


def bytes_moved(shape, dtype):
    # the least traffic: x read once, y written once, w and b read once
    return (2 * shape["M"] + 2) * shape["N"] * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 8 * shape["M"] * shape["N"]


@triton.jit
def before_kernel(x_ptr, w_ptr, b_ptr, y_ptr, stride_x, stride_y, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    # the centred row goes out to y ...
    tl.store(y_ptr + row * stride_y + cols, (x - mean).to(y_ptr.dtype.element_ty), mask=mask)
    # ... and comes back for the variance and the output
    xc = tl.load(y_ptr + row * stride_y + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(xc * xc, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride_y + cols, (xc * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)


def before(x, w, b, eps, y):
    M, N = x.shape
    BLOCK = triton.next_power_of_2(N)
    num_warps = 4 if BLOCK <= 1024 else (8 if BLOCK <= 4096 else 16)
    before_kernel[(M,)](x, w, b, y, x.stride(0), y.stride(0), N, eps, BLOCK=BLOCK, num_warps=num_warps)


@triton.jit
def after_kernel(x_ptr, w_ptr, b_ptr, y_ptr, stride_x, stride_y, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    # the centred row stays in registers: masked lanes zeroed so they add nothing to the variance
    xc = tl.where(mask, x - tl.sum(x, axis=0) / n_cols, 0.0)
    rstd = tl.rsqrt(tl.sum(xc * xc, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride_y + cols, (xc * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)


def after(x, w, b, eps, y):
    M, N = x.shape
    BLOCK = triton.next_power_of_2(N)
    num_warps = 4 if BLOCK <= 1024 else (8 if BLOCK <= 4096 else 16)
    after_kernel[(M,)](x, w, b, y, x.stride(0), y.stride(0), N, eps, BLOCK=BLOCK, num_warps=num_warps)
