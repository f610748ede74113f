"""in-kernel-reduction: a key-dimension split grid axis + fp32 partials + host `.sum(0)` → a K loop.

Harness format: docs/harness.md. The before/after launchers are the template shown.

The inter-chunk output of chunked linear attention, o_t = q_t @ S_c (the state S_c of the
chunk c containing t), one program per (chunk, batch x head). The "before" also splits the
key dimension across the grid, `grid = (NK, NT, B * H)`: each program multiplies a BK-slice
of q by the matching rows of S and stores an fp32 partial into a `[NK, B, T, H, V]` buffer
that the host sums. The grid is already large through its NT axis, so the split adds only
traffic: the partials (4 bytes per element per split, written and read again), the sum
kernel and its launch. The "after" loops over the K blocks inside the program, accumulates
in registers and stores the output once, in its own dtype.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(B=1, T=150, H=2, K=64, V=32),   # T not a multiple of the chunk
    "gla": dict(B=8, T=4096, H=16, K=128, V=128),
    "wide_k": dict(B=4, T=8192, H=8, K=256, V=128),
    "huge": dict(B=1, T=1050000, H=16, K=128, V=64),   # q and h past 2**31 elements: offsets must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
FIXED = ("K", "V")
DTYPES = ("float16",)                             # bf16 tl.dot is wrong under the CPU interpreter
TOLERANCES = {"float16": (2e-2, 1e-2)}            # fp32 accumulation, one fp16 rounding
BT = 64
BK = 32


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    B, T, H, K, V = shape["B"], shape["T"], shape["H"], shape["K"], shape["V"]
    NT = -(-T // BT)
    q = (torch.randn(B, T, H, K, generator=g) / K ** 0.5).to(dtype).to(device)
    h = torch.randn(B, NT, H, K, V, generator=g).to(dtype).to(device)
    return q, h


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["B"], shape["T"], shape["H"], shape["V"], dtype=dtype, device=device),)


def reference(q, h):
    """Block by block against each chunk's state (indexing h per token would copy it BT
    times; one padded copy of the whole q would not fit beside the float64 inputs)."""
    B, T, H, K = q.shape
    NT, V = h.shape[1], h.shape[-1]
    o = torch.empty(B, T, H, V, dtype=q.dtype, device=q.device)
    step = 1024
    for n in range(0, NT, step):
        m = min(n + step, NT)
        s, e = n * BT, min(m * BT, T)
        qc = torch.nn.functional.pad(q[:, s:e], (0, 0, 0, 0, 0, (m - n) * BT - (e - s))).view(B, m - n, BT, H, K)
        o[:, s:e] = torch.einsum("bnthk,bnhkv->bnthv", qc, h[:, n:m]).reshape(B, -1, H, V)[:, :e - s]
    return (o,)


def bytes_moved(shape, dtype):
    e = torch.tensor([], dtype=dtype).element_size()
    B, T, H, K, V = shape["B"], shape["T"], shape["H"], shape["K"], shape["V"]
    return e * (B * T * H * (K + V) + B * (-(-T // BT)) * H * K * V)


def flops(shape, dtype):
    return 2 * shape["B"] * shape["T"] * shape["H"] * shape["K"] * shape["V"]


@triton.jit
def before_kernel(q, h, partial, T, H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr,
                  BK: tl.constexpr):
    i_k, i_t, i_bh = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    i_b, i_h = i_bh // H, i_bh % H
    NT = tl.cdiv(T, BT)
    o_t = i_t * BT + tl.arange(0, BT)
    o_k = i_k * BK + tl.arange(0, BK)
    o_v = tl.arange(0, V)
    m_t = o_t < T
    b_q = tl.load(q + (i_b.to(tl.int64) * T * H + i_h) * K + o_t[:, None].to(tl.int64) * (H * K) + o_k[None, :],
                  mask=m_t[:, None], other=0.0)
    p_h = h + ((i_b.to(tl.int64) * NT + i_t) * H + i_h) * K * V
    b_h = tl.load(p_h + o_k[:, None] * V + o_v[None, :])
    b_o = tl.dot(b_q, b_h)
    # one [B, T, H, V] partial per key block: B * H == tl.num_programs(2)
    p_o = partial + i_k.to(tl.int64) * tl.num_programs(2) * T * V + (i_b.to(tl.int64) * T * H + i_h) * V \
        + o_t[:, None].to(tl.int64) * (H * V) + o_v[None, :]
    tl.store(p_o, b_o, mask=m_t[:, None])


def before(q, h, o):
    B, T, H, K = q.shape
    V = h.shape[-1]
    NK, NT = triton.cdiv(K, BK), triton.cdiv(T, BT)
    partial = torch.empty(NK, B, T, H, V, dtype=torch.float32, device=q.device)
    before_kernel[(NK, NT, B * H)](q, h, partial, T, H=H, K=K, V=V, BT=BT, BK=BK)
    o.copy_(partial.sum(0))


@triton.jit
def after_kernel(q, h, o, T, H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr,
                 BK: tl.constexpr):
    i_t, i_bh = tl.program_id(0), tl.program_id(1)
    i_b, i_h = i_bh // H, i_bh % H
    NT = tl.cdiv(T, BT)
    o_t = i_t * BT + tl.arange(0, BT)
    o_v = tl.arange(0, V)
    m_t = o_t < T
    p_h = h + ((i_b.to(tl.int64) * NT + i_t) * H + i_h) * K * V
    b_o = tl.zeros([BT, V], dtype=tl.float32)
    for i_k in range(tl.cdiv(K, BK)):
        o_k = i_k * BK + tl.arange(0, BK)
        b_q = tl.load(q + (i_b.to(tl.int64) * T * H + i_h) * K + o_t[:, None].to(tl.int64) * (H * K) + o_k[None, :],
                      mask=m_t[:, None], other=0.0)
        b_h = tl.load(p_h + o_k[:, None] * V + o_v[None, :])
        b_o = tl.dot(b_q, b_h, b_o)
    p_o = o + (i_b.to(tl.int64) * T * H + i_h) * V + o_t[:, None].to(tl.int64) * (H * V) + o_v[None, :]
    tl.store(p_o, b_o.to(o.dtype.element_ty), mask=m_t[:, None])


def after(q, h, o):
    B, T, H, K = q.shape
    V = h.shape[-1]
    after_kernel[(triton.cdiv(T, BT), B * H)](q, h, o, T, H=H, K=K, V=V, BT=BT, BK=BK)
