"""elementwise_chain + launch-pdl: launch_pdl=True, gdc_wait before the first load of upstream data (the host upcasts stay)."""

import os

import torch
import triton
import triton.language as tl

from benchmarks.evidence.verify_suite.kernels.elementwise_chain import *  # noqa: F401,F403  the harness (kernels/elementwise_chain.py, __all__)

from benchmarks.evidence.verify_suite.kernels.elementwise_chain import BLOCK, SCALE

# the interpreter has no GDC intrinsics: PDL compiles in only for a real GPU
USE_PDL = os.environ.get("TRITON_INTERPRET") != "1"


@triton.jit
def chain_kernel(gate_ptr, up_ptr, res_ptr, out_ptr, n, scale, BLOCK: tl.constexpr, USE_PDL: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if USE_PDL:
        tl.extra.cuda.gdc_wait()  # the inputs come from the previous kernels (the host upcasts)
        tl.extra.cuda.gdc_launch_dependents()
    gate = tl.load(gate_ptr + offs, mask=mask)
    up = tl.load(up_ptr + offs, mask=mask)
    res = tl.load(res_ptr + offs, mask=mask)
    out = gate * tl.sigmoid(gate) * up * scale + res
    tl.store(out_ptr + offs, out, mask=mask)


def run(gate, up, residual, out):
    g32, u32, r32 = gate.float(), up.float(), residual.float()
    o32 = torch.empty_like(g32)
    n = g32.numel()
    chain_kernel[(triton.cdiv(n, BLOCK),)](g32, u32, r32, o32, n, SCALE, BLOCK=BLOCK, USE_PDL=USE_PDL,
                                           **({"launch_pdl": True} if USE_PDL else {}))
    out.copy_(o32)
