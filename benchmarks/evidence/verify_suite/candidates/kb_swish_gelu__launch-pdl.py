"""kb_swish_gelu + launch-pdl: launch_pdl=True on the three chained kernels, gdc_wait before loading the predecessor's output."""

import os

import torch
import torch.nn as nn
import triton
import triton.language as tl


# the interpreter has no GDC intrinsics: PDL compiles in only for a real GPU
USE_PDL = os.environ.get("TRITON_INTERPRET") != "1"
PDL = {"launch_pdl": True} if USE_PDL else {}


@triton.jit
def swish_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, USE_PDL: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if USE_PDL:
        tl.extra.cuda.gdc_wait()  # x comes from the previous kernel
        tl.extra.cuda.gdc_launch_dependents()
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x * tl.sigmoid(x), mask=mask)


@triton.jit
def gelu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, USE_PDL: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if USE_PDL:
        tl.extra.cuda.gdc_wait()  # x comes from the previous kernel
        tl.extra.cuda.gdc_launch_dependents()
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476)), mask=mask)


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr, USE_PDL: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if USE_PDL:
        tl.extra.cuda.gdc_wait()  # x comes from the previous kernel
        tl.extra.cuda.gdc_launch_dependents()
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n = x.numel()
        grid = (triton.cdiv(n, 1024),)
        a = torch.empty_like(x)
        swish_kernel[grid](x, a, n, BLOCK=1024, USE_PDL=USE_PDL, **PDL)
        b = torch.empty_like(x)
        gelu_kernel[grid](a, b, n, BLOCK=1024, USE_PDL=USE_PDL, **PDL)
        y = torch.empty_like(x)
        scale_kernel[grid](b, y, n, self.scale, BLOCK=1024, USE_PDL=USE_PDL, **PDL)
        return y
