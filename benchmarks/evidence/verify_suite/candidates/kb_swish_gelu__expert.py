"""kb_swish_gelu + expert: the three elementwise kernels fused into one (one read, one write), 4096-wide tiles."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def swish_gelu_scale_kernel(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, eviction_policy="evict_first").to(tl.float32)
    x = x * tl.sigmoid(x)
    x = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    tl.store(y_ptr + offs, (x * scale).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        swish_gelu_scale_kernel[(triton.cdiv(n, 4096),)](x, y, n, self.scale, BLOCK=4096, num_warps=8)
        return y
