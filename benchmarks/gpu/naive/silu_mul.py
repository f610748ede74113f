"""Naive SiLU-and-mul: x is (T, 2D) = [gate | up]; out = silu(gate) * up, shape (T, D). One flat index per
output element, BLOCK elements per program."""
import torch
import triton
import triton.language as tl

KERNEL = "silu_mul_kernel"
SIZES = {"T": 16384, "D": 8192}
SHAPES = ["rows=16384", "cols=8192", "d=8192", "n_elements=134217728"]
CPU_SIZES = {"T": 7, "D": 300}
DTYPE = torch.float16


@triton.jit
def silu_mul_kernel(x_ptr, out_ptr, n_elements, d, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    row = offs // d
    col = offs % d
    gate = tl.load(x_ptr + row * (2 * d) + col, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(x_ptr + row * (2 * d) + d + col, mask=mask, other=0.0).to(tl.float32)
    y = gate / (1.0 + tl.exp(-gate)) * up
    tl.store(out_ptr + offs, y.to(tl.float16), mask=mask)


def launch(x):
    T, two_d = x.shape
    d = two_d // 2
    out = torch.empty((T, d), device=x.device, dtype=x.dtype)
    n = T * d
    silu_mul_kernel[(triton.cdiv(n, 1024),)](x, out, n, d, BLOCK=1024)
    return out


def make_inputs(device, sizes=None):
    s = sizes or SIZES
    return (torch.randn((s["T"], 2 * s["D"]), device=device, dtype=DTYPE),)


def reference(x):
    d = x.shape[1] // 2
    g, u = x[:, :d].float(), x[:, d:].float()
    return (torch.nn.functional.silu(g) * u).to(x.dtype)
