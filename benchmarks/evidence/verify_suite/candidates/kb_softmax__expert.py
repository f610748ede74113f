"""kb_softmax + expert: one online max/sum pass + one write pass, exp2 with log2e folded, 4096-wide tiles, 8 warps."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, stride_x, stride_y, n_cols, BLOCK: tl.constexpr):
    LOG2E: tl.constexpr = 1.4426950408889634
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    m = float("-inf")
    s = 0.0
    for start in range(0, n_cols, BLOCK):
        x = tl.load(x_ptr + row * stride_x + start + offs, mask=start + offs < n_cols, other=float("-inf"),
                    eviction_policy="evict_last").to(tl.float32) * LOG2E
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp2(m - m_new) + tl.sum(tl.exp2(x - m_new), axis=0)
        m = m_new
    inv = 1.0 / s
    for start in range(0, n_cols, BLOCK):
        mask = start + offs < n_cols
        x = tl.load(x_ptr + row * stride_x + start + offs, mask=mask, other=float("-inf"),
                    eviction_policy="evict_first").to(tl.float32)
        tl.store(y_ptr + row * stride_y + start + offs, (tl.exp2(x * LOG2E - m) * inv).to(y_ptr.dtype.element_ty),
                 mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        softmax_kernel[(x.shape[0],)](x, y, x.stride(0), y.stride(0), x.shape[1],
                                      BLOCK=min(4096, triton.next_power_of_2(x.shape[1])), num_warps=8)
        return y
