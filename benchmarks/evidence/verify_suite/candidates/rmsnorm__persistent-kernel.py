"""rmsnorm + persistent-kernel: grid of 4 x NUM_SMS programs striding over rows with tl.range; the weight loaded once per program."""

import torch
import triton
import triton.language as tl

from benchmarks.evidence.verify_suite.kernels.rmsnorm import *  # noqa: F401,F403  the harness (kernels/rmsnorm.py, __all__)

from benchmarks.evidence.verify_suite.kernels.rmsnorm import EPS


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, stride_x, stride_y, n_rows, n_cols, eps, BLOCK: tl.constexpr,
                   NUM_STAGES: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)  # once per program
    for row in tl.range(tl.program_id(0).to(tl.int64), n_rows, tl.num_programs(0), num_stages=NUM_STAGES):
        x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
        tl.store(y_ptr + row * stride_y + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def _num_sms(device):
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 4


def run(x, w, y):
    n_rows = x.shape[0]
    grid = (min(n_rows, 4 * _num_sms(x.device)),)
    rmsnorm_kernel[grid](x, w, y, x.stride(0), y.stride(0), n_rows, x.shape[1], EPS,
                         BLOCK=triton.next_power_of_2(x.shape[1]), NUM_STAGES=2)
