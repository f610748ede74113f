"""kb_rmsnorm + expert: multi-row tiles of ~8k elements, evict_first on x, evict_last on the weight, 8 warps."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, stride, n_rows, n_cols, eps, BLOCK_ROW: tl.constexpr, BLOCK_D: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_ROW + tl.arange(0, BLOCK_ROW)
    cols = tl.arange(0, BLOCK_D)
    mask = (rows < n_rows)[:, None] & (cols < n_cols)[None, :]
    x = tl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=mask, other=0.0, eviction_policy="evict_first")
    w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0, eviction_policy="evict_last")
    rstd = tl.rsqrt(tl.sum(x * x, axis=1) / n_cols + eps)
    tl.store(y_ptr + rows[:, None] * stride + cols[None, :], x * rstd[:, None] * w[None, :], mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(num_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        BLOCK_D = triton.next_power_of_2(x.shape[1])
        BLOCK_ROW = max(1, min(32, 8192 // BLOCK_D))
        rmsnorm_kernel[(triton.cdiv(x.shape[0], BLOCK_ROW),)](x, self.weight, y, x.stride(0), x.shape[0], x.shape[1],
                                                              self.eps, BLOCK_ROW=BLOCK_ROW, BLOCK_D=BLOCK_D, num_warps=8)
        return y
