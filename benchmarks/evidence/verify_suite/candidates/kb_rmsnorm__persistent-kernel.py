"""kb_rmsnorm + persistent-kernel: 4 x NUM_SMS programs stride over the rows with tl.range; weight loaded once per program."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, stride, n_rows, n_cols, eps, BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr):
    # launched with grid = (min(n_rows, 4 * NUM_SMS),)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)  # once per program
    for row in tl.range(tl.program_id(0).to(tl.int64), n_rows, tl.num_programs(0), num_stages=NUM_STAGES):
        x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
        rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
        tl.store(y_ptr + row * stride + cols, x * rstd * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(num_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        sms = torch.cuda.get_device_properties(x.device).multi_processor_count if x.is_cuda else 4
        rmsnorm_kernel[(min(x.shape[0], 4 * sms),)](x, self.weight, y, x.stride(0), x.shape[0], x.shape[1], self.eps,
                                                    BLOCK=triton.next_power_of_2(x.shape[1]), NUM_STAGES=2)
        return y
