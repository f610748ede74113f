"""transposed-operand-load: `tl.dot(q, tl.trans(k * exp(g)))` → load k and g already transposed.

Harness format: docs/harness.md. The before/after launchers are the template shown.

The intra-chunk score matrix of a gated linear-attention layer: for each chunk of BT time
steps, A = q @ (k * exp(g))^T, a [BT, BT] tile per (batch, head, chunk). The "before" loads
k and g as [BT, D] tiles, gates them in registers and transposes the product for the dot,
a layout conversion through shared memory the compiler cannot fold into the load. The "after"
loads k and g through a pointer grid over the transposed view ([D, BT], the contiguous head
dimension on the first axis), gates them there and passes the tile to `tl.dot` as is.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(B=1, T=150, H=3, D=32),          # T not a multiple of the chunk
    "gla": dict(B=8, T=4096, H=16, D=128),        # GLA/KDA head dim 128
    "small_head": dict(B=16, T=4096, H=32, D=64),
    "huge": dict(B=1, T=1050000, H=16, D=128),    # past 2**31 elements: offsets must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
FIXED = ("D",)
DTYPES = ("float16",)                             # bf16 tl.dot is wrong under the CPU interpreter
TOLERANCES = {"float16": (2e-2, 2e-2)}            # fp16 operands (gated k rounded to fp16), fp32 sums
BT = 64


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    size = (shape["B"], shape["T"], shape["H"], shape["D"])
    q = (torch.randn(size, generator=g) / shape["D"] ** 0.5).to(dtype).to(device)
    k = torch.randn(size, generator=g).to(dtype).to(device)
    gate = (-torch.rand(size, generator=g)).to(torch.float32).to(device)  # log-decays in (-1, 0]
    return q, k, gate


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["B"], shape["T"], shape["H"], BT, dtype=torch.float32, device=device),)


def reference(q, k, gate):
    """Block by block over time (whole chunks at a time): the float64 copies of a past-2**31
    shape leave no room for padded copies of all three inputs at once."""
    B, T, H, D = q.shape
    A = torch.zeros(B, T, H, BT, dtype=q.dtype, device=q.device)
    step = BT * 1024
    for s in range(0, T, step):
        e = min(s + step, T)
        NT = -(-(e - s) // BT)
        pad = NT * BT - (e - s)
        qc = torch.nn.functional.pad(q[:, s:e], (0, 0, 0, 0, 0, pad)).view(B, NT, BT, H, D)
        kg = k[:, s:e] * torch.exp(gate[:, s:e])
        kg = torch.nn.functional.pad(kg, (0, 0, 0, 0, 0, pad)).view(B, NT, BT, H, D)
        A[:, s:e] = torch.einsum("bnihd,bnjhd->bnihj", qc, kg).reshape(B, NT * BT, H, BT)[:, :e - s]
    return (A,)


def bytes_moved(shape, dtype):
    n = shape["B"] * shape["T"] * shape["H"]
    e = torch.tensor([], dtype=dtype).element_size()
    return n * shape["D"] * (2 * e + 4) + n * BT * 4


def flops(shape, dtype):
    return 2 * shape["B"] * shape["T"] * shape["H"] * shape["D"] * BT


@triton.jit
def before_kernel(q, k, g, A, T, H: tl.constexpr, D: tl.constexpr, BT: tl.constexpr):
    i_t, i_bh = tl.program_id(0), tl.program_id(1)
    i_b, i_h = i_bh // H, i_bh % H
    base = (i_b.to(tl.int64) * T * H + i_h) * D
    o_t = i_t * BT + tl.arange(0, BT)
    o_d = tl.arange(0, D)
    m_t = o_t < T
    rows = o_t[:, None].to(tl.int64) * (H * D) + o_d[None, :]
    b_q = tl.load(q + base + rows, mask=m_t[:, None], other=0.0)
    b_k = tl.load(k + base + rows, mask=m_t[:, None], other=0.0)
    b_g = tl.load(g + base + rows, mask=m_t[:, None], other=0.0)
    b_kg = (b_k.to(tl.float32) * tl.exp(b_g)).to(b_q.dtype)
    b_A = tl.dot(b_q, tl.trans(b_kg))
    p_A = A + (i_b.to(tl.int64) * T * H + i_h) * BT + o_t[:, None].to(tl.int64) * (H * BT) + tl.arange(0, BT)[None, :]
    tl.store(p_A, b_A, mask=m_t[:, None])


def before(q, k, gate, A):
    B, T, H, D = q.shape
    before_kernel[(triton.cdiv(T, BT), B * H)](q, k, gate, A, T, H=H, D=D, BT=BT)


@triton.jit
def after_kernel(q, k, g, A, T, H: tl.constexpr, D: tl.constexpr, BT: tl.constexpr):
    i_t, i_bh = tl.program_id(0), tl.program_id(1)
    i_b, i_h = i_bh // H, i_bh % H
    base = (i_b.to(tl.int64) * T * H + i_h) * D
    o_t = i_t * BT + tl.arange(0, BT)
    o_d = tl.arange(0, D)
    m_t = o_t < T
    b_q = tl.load(q + base + o_t[:, None].to(tl.int64) * (H * D) + o_d[None, :], mask=m_t[:, None], other=0.0)
    # [D, BT]: the same memory read as the transposed view (head dim contiguous on axis 0)
    cols = o_d[:, None] + o_t[None, :].to(tl.int64) * (H * D)
    b_kt = tl.load(k + base + cols, mask=m_t[None, :], other=0.0)
    b_gt = tl.load(g + base + cols, mask=m_t[None, :], other=0.0)
    b_kgt = (b_kt.to(tl.float32) * tl.exp(b_gt)).to(b_q.dtype)
    b_A = tl.dot(b_q, b_kgt)
    p_A = A + (i_b.to(tl.int64) * T * H + i_h) * BT + o_t[:, None].to(tl.int64) * (H * BT) + tl.arange(0, BT)[None, :]
    tl.store(p_A, b_A, mask=m_t[:, None])


def after(q, k, gate, A):
    B, T, H, D = q.shape
    after_kernel[(triton.cdiv(T, BT), B * H)](q, k, gate, A, T, H=H, D=D, BT=BT)
