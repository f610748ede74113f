"""kb_rmsnorm + launch-pdl: launch_pdl=True; the weight load runs before gdc_wait, x after it."""

import os

import torch
import torch.nn as nn
import triton
import triton.language as tl

# the interpreter has no GDC intrinsics: PDL compiles in only for a real GPU
USE_PDL = os.environ.get("TRITON_INTERPRET") != "1"


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, stride, n_cols, eps, BLOCK: tl.constexpr, USE_PDL: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)  # weights: nothing upstream writes them
    if USE_PDL:
        tl.extra.cuda.gdc_wait()  # x comes from the previous kernel
        tl.extra.cuda.gdc_launch_dependents()
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
        pdl = USE_PDL and x.is_cuda and torch.cuda.get_device_capability(x.device)[0] >= 9
        rmsnorm_kernel[(x.shape[0],)](x, self.weight, y, x.stride(0), x.shape[1], self.eps,
                                      BLOCK=triton.next_power_of_2(x.shape[1]), USE_PDL=pdl,
                                      **({"launch_pdl": True} if pdl else {}))
        return y
