"""loop-flattening: GroupNorm forward on small feature maps. The normalise phase loops over
the channels of a group and, inside, over each channel's `hw` values in BLOCK steps → one
loop over the group's `channels_per_group * hw` values, the channel of each element
recovered as `offs // hw` (its weight and bias gathered).

x is [B, C, HW] (HW = H * W), G groups of C // G channels; y = (x - mean_g) * rstd_g * w_c + b_c.
Harness format: docs/harness.md. The before/after launchers are the template shown.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(B=2, C=12, G=4, HW=37),            # 3 channels per group, 37 values each
    "resnet_7x7": dict(B=64, C=2048, G=32, HW=49),  # 64 channels of 49 values per group: 95% of a block masked
    "unet_8x8": dict(B=32, C=1280, G=32, HW=64),
    "unet_64x64": dict(B=8, C=320, G=32, HW=4096),  # large maps: the nest already fills the block
    "huge": dict(B=512, C=2048, G=32, HW=2100),     # past 2**31 elements: offsets must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
FIXED = ("C", "G")                                # C must stay a multiple of G
DTYPES = ("float32", "bfloat16")
TOLERANCES = {"float32": (1e-4, 1e-4), "bfloat16": (2e-2, 2e-2)}  # stats as E[x^2] - E[x]^2 in fp32
EPS = 1e-5
MAX_BLOCK = 4096


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    B, C, HW = shape["B"], shape["C"], shape["HW"]
    x = torch.randn(B, C, HW, generator=g, device=device, dtype=torch.float32).to(dtype)
    w = (1.0 + 0.1 * torch.randn(C, generator=g, device=device)).to(dtype)
    b = (0.1 * torch.randn(C, generator=g, device=device)).to(dtype)
    return x, w, b, shape["G"]


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["B"], shape["C"], shape["HW"], dtype=dtype, device=device),)


def reference(x, w, b, G):
    y = torch.empty_like(x)
    for s in range(0, x.shape[0], 64):  # batch chunks: the CHECK_ONLY shape's float64 temporaries stay small
        y[s:s + 64] = torch.nn.functional.group_norm(x[s:s + 64], G, w, b, EPS)
    return (y,)


def bytes_moved(shape, dtype):
    return 2 * shape["B"] * shape["C"] * shape["HW"] * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 7 * shape["B"] * shape["C"] * shape["HW"]


def _block(cpg, hw):
    return min(MAX_BLOCK, triton.next_power_of_2(cpg * hw))


@triton.jit
def before_kernel(x_ptr, w_ptr, b_ptr, y_ptr, G, cpg, hw, eps, BLOCK: tl.constexpr):
    batch = tl.program_id(0)
    group = tl.program_id(1)
    n = cpg * hw
    base = (batch.to(tl.int64) * G + group) * n
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    acc2 = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(0, n, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + base + offs, mask=offs < n, other=0.0).to(tl.float32)
        acc += x
        acc2 += x * x
    mean = tl.sum(acc, axis=0) / n
    rstd = tl.rsqrt(tl.sum(acc2, axis=0) / n - mean * mean + eps)
    for c in range(0, cpg):                         # every channel of the group ...
        w = tl.load(w_ptr + group * cpg + c).to(tl.float32)
        b = tl.load(b_ptr + group * cpg + c).to(tl.float32)
        for i in range(0, hw, BLOCK):               # ... a full BLOCK for its hw values
            offs = i + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + base + c * hw + offs, mask=offs < hw, other=0.0).to(tl.float32)
            y = (x - mean) * rstd * w + b
            tl.store(y_ptr + base + c * hw + offs, y.to(y_ptr.dtype.element_ty), mask=offs < hw)


def before(x, w, b, G, y):
    B, C, HW = x.shape
    cpg = C // G
    before_kernel[(B, G)](x, w, b, y, G, cpg, HW, EPS, BLOCK=_block(cpg, HW), num_warps=8)


@triton.jit
def after_kernel(x_ptr, w_ptr, b_ptr, y_ptr, G, cpg, hw, eps, BLOCK: tl.constexpr):
    batch = tl.program_id(0)
    group = tl.program_id(1)
    n = cpg * hw
    base = (batch.to(tl.int64) * G + group) * n
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    acc2 = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(0, n, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + base + offs, mask=offs < n, other=0.0).to(tl.float32)
        acc += x
        acc2 += x * x
    mean = tl.sum(acc, axis=0) / n
    rstd = tl.rsqrt(tl.sum(acc2, axis=0) / n - mean * mean + eps)
    for i in range(0, n, BLOCK):                    # one loop over the group's cpg * hw values
        offs = i + tl.arange(0, BLOCK)
        mask = offs < n
        c = group * cpg + offs // hw                # the channel of every element
        w = tl.load(w_ptr + c, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + c, mask=mask, other=0.0).to(tl.float32)
        x = tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(y_ptr + base + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def after(x, w, b, G, y):
    B, C, HW = x.shape
    cpg = C // G
    after_kernel[(B, G)](x, w, b, y, G, cpg, HW, EPS, BLOCK=_block(cpg, HW), num_warps=8)
