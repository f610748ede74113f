"""fast-math-intrinsics: an RMSprop step's `g / tl.sqrt(v + eps)` per element → `g * tl.math.rsqrt(v + eps)`.

Harness format: docs/harness.md. The before/after launchers are the template shown.

The step of an RMSprop update over a flat fp32 gradient buffer (the parameter add is fused
elsewhere): step = -lr * g / sqrt(a * v + (1 - a) * g^2 + eps). The "before" takes a square
root and divides by it: two MUFU operations (`sqrt.approx`, then the reciprocal inside
Triton's fast `div.full`) plus fix-ups per element. The "after" multiplies by
`tl.math.rsqrt` (one `MUFU.RSQ`). The "l2" shape fits in L2, where the instruction count,
not HBM, bounds the kernel; "model" shows the change is neutral when memory-bound.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(N=3001),                        # not a multiple of the block
    "l2": dict(N=2 * 1024 * 1024),               # an 8 MB parameter group: L2-resident
    "model": dict(N=256 * 1024 * 1024),          # a 1 GB shard: memory-bound
    "huge": dict(N=2_150_000_000),               # past 2**31 elements: offsets must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
DTYPES = ("float32",)
TOLERANCES = {"float32": (1e-6, 1e-5)}           # rsqrt.approx: ~2 ULP on a term scaled by lr
BLOCK = 1024
ALPHA, LR, EPS = 0.99, 1e-2, 1e-8


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    grad = torch.randn(shape["N"], generator=g).to(dtype).to(device)
    v = torch.rand(shape["N"], generator=g).to(dtype).to(device)
    return grad, v


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["N"], dtype=dtype, device=device),)


def reference(grad, v):
    """In slices: beside the verifier's float64 copies of a past-2**31 shape there is no room
    for whole-size temporaries."""
    out = torch.empty_like(grad)
    step = 1 << 27
    for s in range(0, grad.numel(), step):
        g, w = grad[s:s + step], v[s:s + step]
        out[s:s + step] = -LR * g / torch.sqrt(ALPHA * w + (1 - ALPHA) * g * g + EPS)
    return (out,)


def bytes_moved(shape, dtype):
    return 3 * shape["N"] * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 7 * shape["N"]


@triton.jit
def before_kernel(g_ptr, v_ptr, out_ptr, n, alpha, lr, eps, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    g = tl.load(g_ptr + offs, mask=mask, other=0.0)
    v = alpha * tl.load(v_ptr + offs, mask=mask, other=0.0) + (1 - alpha) * g * g
    tl.store(out_ptr + offs, -lr * g / tl.sqrt(v + eps), mask=mask)


def before(grad, v, out):
    n = grad.numel()
    before_kernel[(triton.cdiv(n, BLOCK),)](grad, v, out, n, ALPHA, LR, EPS, BLOCK=BLOCK)


@triton.jit
def after_kernel(g_ptr, v_ptr, out_ptr, n, alpha, lr, eps, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    g = tl.load(g_ptr + offs, mask=mask, other=0.0)
    v = alpha * tl.load(v_ptr + offs, mask=mask, other=0.0) + (1 - alpha) * g * g
    tl.store(out_ptr + offs, -lr * g * tl.math.rsqrt(v + eps), mask=mask)


def after(grad, v, out):
    n = grad.numel()
    after_kernel[(triton.cdiv(n, BLOCK),)](grad, v, out, n, ALPHA, LR, EPS, BLOCK=BLOCK)
