"""fast-math-intrinsics: SwiGLU's IEEE division `a / (1 + exp(-a))` → `tl.fdiv(..., ieee_rounding=False)`.

Harness format: docs/harness.md. The before/after launchers are the template shown.

The SwiGLU of a transformer MLP, out = silu(a) * b = a / (1 + exp(-a)) * b over [M, N]
activations. The "before" divides with `/`, which Triton lowers to an IEEE round-to-nearest
division (`div.rn.f32`: a reciprocal, Newton steps and a slow-path branch per element). The
"after" uses `tl.fdiv(x, y, ieee_rounding=False)` (`div.full.f32`: about 2 ULP, a handful of
instructions); `tl.exp` is already `ex2.approx`. (libdevice `tanh`/`fast_dividef` are the
same move for GELU-tanh and friends; the CPU interpreter cannot run libdevice, so this pair
uses the core-language intrinsic.) The difference is far below the output's rounding.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(M=37, N=1000),                  # no size a multiple of the block
    "decode": dict(M=64, N=14336),               # a decode batch: L2-resident, instruction-bound
    "prefill": dict(M=8192, N=14336),
    "huge": dict(M=150000, N=14336),             # past 2**31 elements: offsets must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
DTYPES = ("bfloat16", "float32")
TOLERANCES = {"bfloat16": (2e-2, 2e-2), "float32": (1e-5, 1e-4)}  # ~2 ULP from the division
BLOCK = 1024


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    a = (2 * torch.randn(shape["M"], shape["N"], generator=g)).to(dtype).to(device)
    b = torch.randn(shape["M"], shape["N"], generator=g).to(dtype).to(device)
    return a, b


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=dtype, device=device),)


def reference(a, b):
    return (torch.nn.functional.silu(a) * b,)


def bytes_moved(shape, dtype):
    return 3 * shape["M"] * shape["N"] * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 4 * shape["M"] * shape["N"]


@triton.jit
def before_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    c = a / (1.0 + tl.exp(-a)) * b
    tl.store(c_ptr + offs, c.to(c_ptr.dtype.element_ty), mask=mask)


def before(a, b, c):
    n = a.numel()
    before_kernel[(triton.cdiv(n, BLOCK),)](a, b, c, n, BLOCK=BLOCK)


@triton.jit
def after_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    c = tl.fdiv(a, 1.0 + tl.exp(-a), ieee_rounding=False) * b
    tl.store(c_ptr + offs, c.to(c_ptr.dtype.element_ty), mask=mask)


def after(a, b, c):
    n = a.numel()
    after_kernel[(triton.cdiv(n, BLOCK),)](a, b, c, n, BLOCK=BLOCK)
