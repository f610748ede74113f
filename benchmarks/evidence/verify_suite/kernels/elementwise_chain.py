"""Elementwise chain out = silu(gate) * up * scale + residual, naive: the launcher upcasts the bf16
inputs to fp32 on the host, the kernel works in fp32, and the fp32 result is cast back on the host.
"""

import torch
import triton
import triton.language as tl

__all__ = ["SHAPES", "CPU_SHAPES", "DTYPES", "TOLERANCES", "make_inputs", "make_outputs", "reference",
           "bytes_moved", "flops"]

SHAPES = {
    "tiny": dict(M=7, N=300),
    "tokens": dict(M=8192, N=4096),
}
CPU_SHAPES = ("tiny",)
DTYPES = ("bfloat16", "float32")
TOLERANCES = {"bfloat16": (1e-2, 1e-2), "float32": (1e-5, 1e-5)}
SCALE = 0.5
BLOCK = 1024


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return tuple(torch.randn(shape["M"], shape["N"], generator=g).to(dtype).to(device) for _ in range(3))


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["N"], dtype=dtype, device=device),)


def reference(gate, up, residual):
    return (torch.nn.functional.silu(gate) * up * SCALE + residual,)


def bytes_moved(shape, dtype):
    return 4 * shape["M"] * shape["N"] * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 6 * shape["M"] * shape["N"]


@triton.jit
def chain_kernel(gate_ptr, up_ptr, res_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    gate = tl.load(gate_ptr + offs, mask=mask)
    up = tl.load(up_ptr + offs, mask=mask)
    res = tl.load(res_ptr + offs, mask=mask)
    out = gate * tl.sigmoid(gate) * up * scale + res
    tl.store(out_ptr + offs, out, mask=mask)


def run(gate, up, residual, out):
    g32, u32, r32 = gate.float(), up.float(), residual.float()
    o32 = torch.empty_like(g32)
    n = g32.numel()
    chain_kernel[(triton.cdiv(n, BLOCK),)](g32, u32, r32, o32, n, SCALE, BLOCK=BLOCK)
    out.copy_(o32)
