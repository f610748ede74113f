"""A correct KernelBench candidate: the ReLU in a Triton kernel into a fresh output. Must PASS."""

import torch
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=offs < n)


class ModelNew(torch.nn.Module):
    def __init__(self, features):
        super().__init__()
        self.fc = torch.nn.Linear(features, features)

    def forward(self, x):
        h = self.fc(x).contiguous()
        y = torch.empty_like(h)
        relu_kernel[(triton.cdiv(h.numel(), 64),)](h, y, h.numel(), BLOCK=64)
        return y
