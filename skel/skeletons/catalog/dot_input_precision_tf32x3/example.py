"""dot-input-precision-tf32x3: default (TF32) fp32 `tl.dot` → `input_precision="tf32x3"` (near-fp32 accuracy).

Harness format: docs/harness.md. The before/after launchers are the template shown.
A batch of independent BT x BT fp32 products (the per-chunk matrices of chunked linear
attention: c[n] = a[n] @ b[n]). Both sides load, multiply and store the same tiles; only
the dot's input precision differs. It is an accuracy skeleton: on an H200 the TF32 before
is off by ~1e-3 of |c|, the 3xTF32 after by ~1e-6; the shapes are memory-bound chunk
batches, where the two extra MMAs should cost little. The tolerance admits TF32 so both
sides are timed; under TRITON_INTERPRET=1 `input_precision` is ignored (both are ieee).
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(N=5, BT=32),
    "chunks64": dict(N=65536, BT=64),        # 1 GiB per tensor
    "chunks128": dict(N=16384, BT=128),
    "huge": dict(N=524300, BT=64),           # past 2**31 elements: n * BT * BT must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
FIXED = ("BT",)
DTYPES = ("float32",)
TOLERANCES = {"float32": (1e-2, 1e-2)}  # admits TF32 (the before on a GPU); |c| ~ 1


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    N, BT = shape["N"], shape["BT"]
    a = (torch.randn(N, BT, BT, generator=g, device=device) * BT ** -0.5).to(dtype)
    b = torch.randn(N, BT, BT, generator=g, device=device).to(dtype)
    return a, b


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["N"], shape["BT"], shape["BT"], dtype=dtype, device=device),)


def reference(a, b):
    return (torch.bmm(a, b),)


def bytes_moved(shape, dtype):
    return 3 * shape["N"] * shape["BT"] ** 2 * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 2 * shape["N"] * shape["BT"] ** 3


@triton.jit
def before_kernel(a_ptr, b_ptr, c_ptr, BT: tl.constexpr):
    o = tl.arange(0, BT)
    offs = tl.program_id(0).to(tl.int64) * BT * BT + o[:, None] * BT + o[None, :]
    a = tl.load(a_ptr + offs).to(tl.float32)
    b = tl.load(b_ptr + offs).to(tl.float32)
    c = tl.dot(a, b)
    tl.store(c_ptr + offs, c)


def before(a, b, c):
    BT = a.shape[-1]
    before_kernel[(a.shape[0],)](a, b, c, BT=BT, num_warps=4 if BT <= 64 else 8)


@triton.jit
def after_kernel(a_ptr, b_ptr, c_ptr, BT: tl.constexpr):
    o = tl.arange(0, BT)
    offs = tl.program_id(0).to(tl.int64) * BT * BT + o[:, None] * BT + o[None, :]
    a = tl.load(a_ptr + offs).to(tl.float32)
    b = tl.load(b_ptr + offs).to(tl.float32)
    c = tl.dot(a, b, input_precision="tf32x3")
    tl.store(c_ptr + offs, c)


def after(a, b, c):
    BT = a.shape[-1]
    after_kernel[(a.shape[0],)](a, b, c, BT=BT, num_warps=4 if BT <= 64 else 8)
