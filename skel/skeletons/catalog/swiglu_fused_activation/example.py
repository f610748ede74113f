"""swiglu-fused-activation: a SiLU kernel on the gate, then a multiply by up → one kernel reading both.

Harness format: docs/harness.md. The before/after launchers are the template shown.
The gated MLP's `silu(gate) * up` over the `[M, 2 * I]` output of a merged gate/up
projection (gate the first half of each row, up the second). The before runs a SiLU
kernel on the gate half into a scratch `[M, I]` buffer and multiplies it by the up half
on the host: 5 values moved per output element, two launches. The after loads both halves
and stores the product: 3 values, one launch. On a GPU the after should take about 3/5 of
the before's time at the prefill shapes.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(M=37, I=100),                  # neither size a power of two
    "decode": dict(M=16, I=14336),              # Llama-3-8B's intermediate size, a decode batch
    "prefill8k_i14336": dict(M=8192, I=14336),  # 8K tokens: 235 MB a half in bf16
    "prefill4k_i11008": dict(M=4096, I=11008),  # Llama-2-7B's intermediate size
}
CPU_SHAPES = ("tiny",)
DTYPES = ("bfloat16", "float32")
TOLERANCES = {"bfloat16": (2e-2, 2e-2), "float32": (1e-5, 1e-5)}
BLOCK = 1024


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device="cpu").manual_seed(seed)
    gate_up = (2 * torch.randn(shape["M"], 2 * shape["I"], generator=g)).to(dtype).to(device)
    return (gate_up,)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["I"], dtype=dtype, device=device),)


def reference(gate_up):
    gate, up = gate_up.chunk(2, dim=-1)
    return (torch.nn.functional.silu(gate) * up,)


def bytes_moved(shape, dtype):
    # the least traffic: gate and up read once, the product written once
    return 3 * shape["M"] * shape["I"] * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 5 * shape["M"] * shape["I"]


@triton.jit
def before_silu_kernel(gate_ptr, act_ptr, stride_g, stride_a, n_cols, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    g = tl.load(gate_ptr + row * stride_g + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(act_ptr + row * stride_a + cols, (g * tl.sigmoid(g)).to(act_ptr.dtype.element_ty), mask=mask)


def before(gate_up, out):
    M, I2 = gate_up.shape
    I = I2 // 2
    gate, up = gate_up[:, :I], gate_up[:, I:]
    act = torch.empty_like(out)  # the activation's round trip through HBM
    before_silu_kernel[(M, triton.cdiv(I, BLOCK))](gate, act, gate.stride(0), act.stride(0), I, BLOCK_N=BLOCK)
    torch.mul(act, up, out=out)


@triton.jit
def after_kernel(gate_up_ptr, out_ptr, stride_gu, stride_o, n_cols, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    g = tl.load(gate_up_ptr + row * stride_gu + cols, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(gate_up_ptr + row * stride_gu + n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    # the activation rounded to the output's dtype as the before's scratch buffer rounds it
    act = (g * tl.sigmoid(g)).to(out_ptr.dtype.element_ty).to(tl.float32)
    tl.store(out_ptr + row * stride_o + cols, (act * u).to(out_ptr.dtype.element_ty), mask=mask)


def after(gate_up, out):
    M, I2 = gate_up.shape
    I = I2 // 2
    after_kernel[(M, triton.cdiv(I, BLOCK))](gate_up, out, gate_up.stride(0), out.stride(0), I, BLOCK_N=BLOCK)
