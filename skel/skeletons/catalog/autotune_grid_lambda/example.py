"""autotune-grid-lambda: an autotuned BLOCK with a host-fixed grid → `grid = lambda meta: ...`.

Harness format: docs/harness.md. The before/after launchers are the template shown.

The "before" is the correct form of the mistake: the fixed grid is sized for the smallest
tuned BLOCK (1024), so every config covers the tensor, but a larger BLOCK runs with 2-8x too
many programs, the extra ones fully masked (had the grid used a larger block, a smaller tuned
one would leave the tail unwritten: wrong, not just slow). The "after" launches exactly
cdiv(N, BLOCK) programs for whichever config the tuner tries. MEASURE is "kernel": the tuned
kernel's time on each side.
"""

import os
import time

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(N=3001),                  # not a multiple of any BLOCK
    "mlp_act": dict(N=8192 * 14336),       # SiLU over an 8k-token MLP activation
    "large": dict(N=1 << 29),
    "huge": dict(N=(1 << 31) + 4099),      # past 2**31 elements: pid * BLOCK must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
DTYPES = ("bfloat16", "float32")
TOLERANCES = {"bfloat16": (1e-3, 8e-3), "float32": (1e-6, 1e-5)}  # computed in fp32, stored in dtype


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    return ((torch.randn(shape["N"], generator=g) * 3).to(dtype).to(device),)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["N"], dtype=dtype, device=device),)


def reference(x):
    return (x * torch.sigmoid(x),)


def bytes_moved(shape, dtype):
    return 2 * shape["N"] * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 4 * shape["N"]


def bench(fn, quantiles):
    """The autotuner's timer. On a GPU: triton.testing.do_bench (the default). The CPU
    interpreter has no GPU clock (the default fails with "0 active drivers"): there each config
    runs once, timed by the host clock, so every config is still exercised."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        t0 = time.perf_counter()
        fn()
        return [time.perf_counter() - t0] * len(quantiles)
    return triton.testing.do_bench(fn, quantiles=quantiles)


@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=w) for b, w in ((1024, 4), (2048, 4), (4096, 8), (8192, 16))],
    key=["N"],
    do_bench=bench,  # harness: triton.testing.do_bench on a GPU, one timed run under the interpreter
)
@triton.jit
def before_kernel(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, (x * tl.sigmoid(x)).to(y_ptr.dtype.element_ty), mask=mask)


def before(x, y):
    N = x.numel()
    before_kernel[(triton.cdiv(N, 1024),)](x, y, N)


@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=w) for b, w in ((1024, 4), (2048, 4), (4096, 8), (8192, 16))],
    key=["N"],
    do_bench=bench,  # harness: triton.testing.do_bench on a GPU, one timed run under the interpreter
)
@triton.jit
def after_kernel(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, (x * tl.sigmoid(x)).to(y_ptr.dtype.element_ty), mask=mask)


def after(x, y):
    N = x.numel()
    after_kernel[lambda meta: (triton.cdiv(N, meta["BLOCK"]),)](x, y, N)
