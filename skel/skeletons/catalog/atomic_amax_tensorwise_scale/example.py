"""atomic-amax-tensorwise-scale: block absmaxes → a one-program serial loop → quantise; becomes atomic_max → quantise.

Harness format: docs/harness.md. The before/after launchers are the template shown.
Dynamic per-tensor FP8 (e4m3) quantisation of an activation `x [M, N]` (bf16): one fp32
scale = absmax(x) / 448 for the whole tensor, q = x / scale. Both sides cut x into blocks of
4,096 elements. The before runs three kernels: each block stores its absmax into a partials
buffer; one program walks the buffer with a scalar loop (one dependent load a step) to make
the scale; a third kernel quantises. The after merges each block's absmax into one fp32 with
`tl.atomic_max` and lets the quantising kernel derive the scale: two kernels, no serial loop.
On a GPU the before's single program should dominate its time at "act8k" (16,384 partials)
and "hidden4k" (4,096); at "decode" (16 partials) only a launch is saved. The inputs are
chosen so the answer is exact: fp8-representable values times one power of two for the
whole tensor, one of them at +-448 times it, so the scale is that power of two and x / scale
needs no rounding.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(M=37, N=300),         # on the CPU: 11,100 elements, 3 blocks, the last one partial
    "decode": dict(M=16, N=4096),      # 16 partials: the gain is about one launch
    "hidden4k": dict(M=4096, N=4096),  # 4,096 partials
    "act8k": dict(M=8192, N=8192),     # 16,384 partials, 128 MiB of bf16
}
CPU_SHAPES = ("tiny",)
DTYPES = ("bfloat16",)
TOLERANCES = {"bfloat16": (0.0, 1e-6)}  # fp8 values exact by construction; the scale within fp32 division's ulps
FP8_MAX = 448.0
BLOCK = 4096


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    M, N = shape["M"], shape["N"]
    v = (torch.randn(M * N, generator=g, device=device) * 64).clamp(-FP8_MAX, FP8_MAX)
    v = v.to(torch.float8_e4m3fn).to(torch.float32)
    peak = torch.randint(0, M * N, (1,), generator=g, device=device)
    v[peak] = FP8_MAX if torch.rand(1, generator=g, device=device).item() < 0.5 else -FP8_MAX
    e = int(torch.randint(0, 12, (1,), generator=g, device=device).item())
    return ((v * 2.0 ** -e).reshape(M, N).to(dtype),)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=torch.float8_e4m3fn, device=device),
            torch.empty(1, dtype=torch.float32, device=device))


def reference(x):
    scale = x.abs().amax().clamp_min(1e-12) / FP8_MAX
    return (x / scale).clamp(-FP8_MAX, FP8_MAX), scale.reshape(1)


def bytes_moved(shape, dtype):
    n = shape["M"] * shape["N"]
    # the least traffic: x read twice (its absmax must be known before any element is scaled), q written once
    return n * (2 * torch.tensor([], dtype=dtype).element_size() + 1)


def flops(shape, dtype):
    return 3 * shape["M"] * shape["N"]


@triton.jit
def before_block_amax_kernel(x_ptr, partials_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    tl.store(partials_ptr + tl.program_id(0), tl.max(tl.abs(x), 0))


@triton.jit
def before_scale_kernel(partials_ptr, scale_ptr, num_blocks, fp8_max: tl.constexpr):
    # one program, one partial a step: every iteration waits for its load
    amax = 0.0
    for i in range(num_blocks):
        amax = tl.maximum(amax, tl.load(partials_ptr + i))
    tl.store(scale_ptr, tl.maximum(amax, 1e-12) / fp8_max)


@triton.jit
def before_quant_kernel(x_ptr, q_ptr, scale_ptr, n, fp8_max: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    q = tl.clamp(x / tl.load(scale_ptr), -fp8_max, fp8_max)
    tl.store(q_ptr + offs, q.to(q_ptr.dtype.element_ty), mask=offs < n)


def before(x, q, scale):
    n = x.numel()
    nb = triton.cdiv(n, BLOCK)
    partials = torch.empty(nb, dtype=torch.float32, device=x.device)
    before_block_amax_kernel[(nb,)](x, partials, n, BLOCK=BLOCK, num_warps=8)
    before_scale_kernel[(1,)](partials, scale, nb, fp8_max=FP8_MAX, num_warps=1)
    before_quant_kernel[(nb,)](x, q, scale, n, fp8_max=FP8_MAX, BLOCK=BLOCK, num_warps=8)


@triton.jit
def after_amax_kernel(x_ptr, amax_ptr, n, BLOCK: tl.constexpr):
    # each block merges its absmax where it computes it (amax_ptr starts at 0; |x| >= 0)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    tl.atomic_max(amax_ptr, tl.max(tl.abs(x), 0), sem="relaxed")


@triton.jit
def after_quant_kernel(x_ptr, q_ptr, amax_ptr, scale_ptr, n, fp8_max: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    scale = tl.maximum(tl.load(amax_ptr), 1e-12) / fp8_max
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    q = tl.clamp(x / scale, -fp8_max, fp8_max)
    tl.store(q_ptr + offs, q.to(q_ptr.dtype.element_ty), mask=offs < n)
    if pid == 0:
        tl.store(scale_ptr, scale)


def after(x, q, scale):
    n = x.numel()
    nb = triton.cdiv(n, BLOCK)
    amax = torch.zeros(1, dtype=torch.float32, device=x.device)
    after_amax_kernel[(nb,)](x, amax, n, BLOCK=BLOCK, num_warps=8)
    after_quant_kernel[(nb,)](x, q, amax, scale, n, fp8_max=FP8_MAX, BLOCK=BLOCK, num_warps=8)
