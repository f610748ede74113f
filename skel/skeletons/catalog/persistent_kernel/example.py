"""persistent-kernel: an RMSNorm over short rows, one program per row → ~NUM_SMS programs looping over rows.

Harness format: docs/harness.md. The before/after launchers are the template shown.
"""

from functools import lru_cache

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(M=37, N=100),              # N not a power of two; more rows than the CPU's "SMs"
    "qk_norm": dict(M=4194304, N=128),      # per-head q/k norm: 64K tokens x 64 heads, head dim 128
    "head64": dict(M=8388608, N=64),        # even shorter rows: per-program overhead dominates
    "hidden": dict(M=16384, N=8192),        # does not apply: wide rows, memory-bound either way
    "huge": dict(M=17825792, N=128),        # past 2**31 elements: row * stride must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
DTYPES = ("float32", "bfloat16")
TOLERANCES = {"float32": (1e-5, 1e-5), "bfloat16": (1e-2, 1e-2)}
EPS = 1e-6


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(shape["M"], shape["N"], generator=g).to(dtype).to(device)
    w = (1 + 0.1 * torch.randn(shape["N"], generator=g)).to(dtype).to(device)
    return x, w


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=dtype, device=device),)


def reference(x, w):
    return (x * torch.rsqrt(x.pow(2).mean(dim=1, keepdim=True) + EPS) * w,)


def bytes_moved(shape, dtype):
    size = torch.tensor([], dtype=dtype).element_size()
    return (2 * shape["M"] + 1) * shape["N"] * size


def flops(shape, dtype):
    return 4 * shape["M"] * shape["N"]


def _block_and_warps(n_cols):
    block = triton.next_power_of_2(n_cols)
    return block, 1 if block <= 256 else 4 if block <= 2048 else 8


@lru_cache(maxsize=None)
def _num_sms(device):
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 1  # the interpreter: one "SM" (32 programs), so the persistent loop really loops


@triton.jit
def before_kernel(x_ptr, w_ptr, y_ptr, x_row_stride, y_row_stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(y_ptr + row * y_row_stride + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def before(x, w, y):
    n_rows, n_cols = x.shape
    block, warps = _block_and_warps(n_cols)
    before_kernel[(n_rows,)](x, w, y, x.stride(0), y.stride(0), n_cols, EPS, BLOCK=block, num_warps=warps)


@triton.jit
def after_kernel(x_ptr, w_ptr, y_ptr, x_row_stride, y_row_stride, n_rows, n_cols, eps,
                 BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)  # once per program, not once per row
    # an int64 start makes the loop index int64, so row * stride cannot overflow
    for row in tl.range(tl.program_id(0).to(tl.int64), n_rows, tl.num_programs(0), num_stages=NUM_STAGES):
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
        tl.store(y_ptr + row * y_row_stride + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def after(x, w, y):
    n_rows, n_cols = x.shape
    block, warps = _block_and_warps(n_cols)
    programs_per_sm = min(32, 64 // warps)  # as many resident programs as the SM holds (32 blocks, 64 warps)
    grid = (min(n_rows, _num_sms(x.device) * programs_per_sm),)
    after_kernel[grid](x, w, y, x.stride(0), y.stride(0), n_rows, n_cols, EPS,
                       BLOCK=block, NUM_STAGES=2, num_warps=warps)
