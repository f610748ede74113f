"""Naive short-row kernel: per-head q-norm (RMSNorm over head_dim=128) on 1M rows (tokens x heads), one
program per 128-element row."""
from functools import lru_cache

import torch
import triton
import triton.language as tl

KERNEL = "qnorm_kernel"
SIZES = {"rows": 1048576, "cols": 128}
SHAPES = ["rows=1048576", "cols=128", "n_cols=128", "programs=1048576"]
CPU_SIZES = {"rows": 11, "cols": 128}
DTYPE = torch.float16
EPS = 1e-6


# persistent-kernel applied by hand from the template (`skel skeletons show persistent-kernel`): about
# NUM_SMS * programs_per_sm programs walk the rows with a tl.num_programs stride (tl.range, num_stages=2), the
# weight loaded once per program. num_warps stays the original's (Triton's default, 4), so
# programs_per_sm = min(32, 64 // 4) = 16 by the template's formula.


@lru_cache(maxsize=None)
def _num_sms(device):
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 1  # the interpreter: one "SM", so the persistent loop really loops


@triton.jit
def qnorm_kernel(x_ptr, w_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, eps,
                 BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)  # once per program, not once per row
    for row in tl.range(tl.program_id(0).to(tl.int64), n_rows, tl.num_programs(0), num_stages=NUM_STAGES):
        x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
        tl.store(y_ptr + row * stride_y + cols, (x * rstd * w).to(tl.float16), mask=mask)


def launch(x, w):
    rows, cols = x.shape
    y = torch.empty_like(x)
    warps = 4  # the original launch's (Triton's default)
    programs_per_sm = min(32, 64 // warps)
    grid = (min(rows, _num_sms(x.device) * programs_per_sm),)
    qnorm_kernel[grid](x, w, y, rows, cols, x.stride(0), y.stride(0), EPS,
                       BLOCK=triton.next_power_of_2(cols), NUM_STAGES=2, num_warps=warps)
    return y


def make_inputs(device, sizes=None):
    s = sizes or SIZES
    x = torch.randn((s["rows"], s["cols"]), device=device, dtype=DTYPE)
    w = torch.rand((s["cols"],), device=device, dtype=DTYPE) + 0.5
    return x, w


def reference(x, w):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * w.float()).to(x.dtype)
