"""native-cumsum: chunk-local prefix sum of gates, triangular-ones `tl.dot` → `tl.cumsum`.

The chunk-local cumsum of flash-linear-attention's gated kernels: g is [B, T, H, S], and
within each chunk of BT time steps the output is the running sum over time.
Harness format: docs/harness.md. The before/after launchers are the template shown.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(B=2, T=150, H=3, S=16),          # T not a multiple of BT
    "gla": dict(B=8, T=4096, H=16, S=128),        # per-key gates of a GLA/KDA layer, head dim 128
    "long": dict(B=2, T=32768, H=32, S=64),
    "huge": dict(B=1, T=1050000, H=16, S=128),    # past 2**31 elements: offsets must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
FIXED = ("S",)
DTYPES = ("float32", "bfloat16")  # the input's dtype; the cumsum is fp32 either way
TOLERANCES = {"float32": (2e-5, 1e-5), "bfloat16": (2e-5, 1e-5)}  # fp32 sums of 64 terms; tf32 would fail
BT = 64


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    x = torch.nn.functional.logsigmoid(torch.randn(shape["B"], shape["T"], shape["H"], shape["S"], generator=g))
    return (x.to(dtype).to(device),)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["B"], shape["T"], shape["H"], shape["S"], dtype=torch.float32, device=device),)


def reference(g):
    B, T, H, S = g.shape
    NT = -(-T // BT)
    padded = torch.nn.functional.pad(g, (0, 0, 0, 0, 0, NT * BT - T))
    return (padded.view(B, NT, BT, H, S).cumsum(dim=2).view(B, NT * BT, H, S)[:, :T],)


def bytes_moved(shape, dtype):
    n = shape["B"] * shape["T"] * shape["H"] * shape["S"]
    return n * (torch.tensor([], dtype=dtype).element_size() + 4)


def flops(shape, dtype):
    return shape["B"] * shape["T"] * shape["H"] * shape["S"]


@triton.jit
def before_kernel(g_ptr, o_ptr, T, H: tl.constexpr, S: tl.constexpr, BT: tl.constexpr):
    i_t, i_bh = tl.program_id(0), tl.program_id(1)
    i_b, i_h = i_bh // H, i_bh % H
    base = (i_b.to(tl.int64) * T * H + i_h) * S
    o_i = tl.arange(0, BT)
    o_s = tl.arange(0, S)
    m_s = tl.where(o_i[:, None] >= o_i[None, :], 1.0, 0.0)
    o_t = i_t * BT + o_i
    p = base + o_t[:, None].to(tl.int64) * (H * S) + o_s[None, :]
    b_g = tl.load(g_ptr + p, mask=o_t[:, None] < T, other=0.0).to(tl.float32)
    b_o = tl.dot(m_s, b_g, input_precision="ieee")
    tl.store(o_ptr + p, b_o, mask=o_t[:, None] < T)


def before(g, o):
    B, T, H, S = g.shape
    before_kernel[(triton.cdiv(T, BT), B * H)](g, o, T, H=H, S=S, BT=BT)


@triton.jit
def after_kernel(g_ptr, o_ptr, T, H: tl.constexpr, S: tl.constexpr, BT: tl.constexpr):
    i_t, i_bh = tl.program_id(0), tl.program_id(1)
    i_b, i_h = i_bh // H, i_bh % H
    base = (i_b.to(tl.int64) * T * H + i_h) * S
    o_i = tl.arange(0, BT)
    o_s = tl.arange(0, S)
    o_t = i_t * BT + o_i
    p = base + o_t[:, None].to(tl.int64) * (H * S) + o_s[None, :]
    b_g = tl.load(g_ptr + p, mask=o_t[:, None] < T, other=0.0).to(tl.float32)
    b_o = tl.cumsum(b_g, axis=0)
    tl.store(o_ptr + p, b_o, mask=o_t[:, None] < T)


def after(g, o):
    B, T, H, S = g.shape
    after_kernel[(triton.cdiv(T, BT), B * H)](g, o, T, H=H, S=S, BT=BT)
