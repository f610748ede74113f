"""kb_softmax + autotune-configs: @triton.autotune over BLOCK and num_warps, keyed on the row length."""

import os

import torch
import torch.nn as nn
import triton
import triton.language as tl


def _interpreter_bench(kernel_call, quantiles):
    # TRITON_INTERPRET=1 has no GPU timer: run each config once and report a flat time.
    kernel_call()
    return [1.0, 1.0, 1.0]


@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=w) for b, w in ((1024, 4), (2048, 8), (4096, 8), (8192, 16))],
    key=["n_cols"],
    do_bench=_interpreter_bench if os.environ.get("TRITON_INTERPRET") == "1" else None,
)
@triton.jit
def softmax_kernel(x_ptr, y_ptr, stride_x, stride_y, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    m = float("-inf")
    for start in range(0, n_cols, BLOCK):
        x = tl.load(x_ptr + row * stride_x + start + offs, mask=start + offs < n_cols, other=float("-inf"))
        m = tl.maximum(m, tl.max(x, axis=0))
    s = 0.0
    for start in range(0, n_cols, BLOCK):
        x = tl.load(x_ptr + row * stride_x + start + offs, mask=start + offs < n_cols, other=float("-inf"))
        s += tl.sum(tl.exp(x - m), axis=0)
    for start in range(0, n_cols, BLOCK):
        mask = start + offs < n_cols
        x = tl.load(x_ptr + row * stride_x + start + offs, mask=mask, other=float("-inf"))
        tl.store(y_ptr + row * stride_y + start + offs, tl.exp(x - m) / s, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        softmax_kernel[(x.shape[0],)](x, y, x.stride(0), y.stride(0), x.shape[1])
        return y
