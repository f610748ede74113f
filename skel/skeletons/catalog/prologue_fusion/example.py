"""prologue-fusion: intra-chunk attention scores `s = l2norm(q) @ l2norm(k)^T` (chunked linear
attention, GDN/KDA style) with q and k normalised by a separate l2norm kernel first → the
l2norm applied to the q/k tiles right after `tl.load`, inside the scores kernel.

Harness format: docs/harness.md. The before/after launchers are the template shown.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(B=1, H=3, T=100, K=32),            # T not a multiple of BT
    "gdn_4k": dict(B=8, H=16, T=4096, K=128),       # chunked GDN/KDA prefill, 4k tokens
    "long_32k": dict(B=1, H=32, T=32768, K=128),
    "k256": dict(B=8, H=16, T=4096, K=256),         # wider heads: the fp32 [BT, K] tiles need 8 warps
    "huge": dict(B=1, H=64, T=270000, K=128),       # q/k past 2**31 elements: int64 row offsets
}
CPU_SHAPES = ("tiny",)
GPU_SHAPES = ("gdn_4k", "long_32k", "k256")
CHECK_ONLY = ("huge",)
DTYPES = ("float16",)  # bf16 tl.dot is garbage in the CPU interpreter
TOLERANCES = {"float16": (2e-3, 2e-3)}  # both sides round the normalised q/k to fp16 for the MMA
FIXED = ("K",)  # the head dim is one power-of-two tile
BT = 64


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    B, H, T, K = (shape[n] for n in ("B", "H", "T", "K"))
    q = torch.randn(B, H, T, K, generator=g).to(dtype).to(device)
    k = torch.randn(B, H, T, K, generator=g).to(dtype).to(device)
    return q, k


def make_outputs(shape, dtype, device):
    B, H, T = shape["B"], shape["H"], shape["T"]
    return (torch.empty(B, H, T, BT, dtype=torch.float32, device=device),)


def reference(q, k):
    B, H, T, K = q.shape
    NT = triton.cdiv(T, BT)
    s = q.new_empty(B, H, NT * BT, BT)
    for i_b in range(B):  # one head at a time: the huge shape's q and k are 17 GB each in fp64
        for i_h in range(H):
            qn = torch.zeros(NT * BT, K, dtype=q.dtype, device=q.device)
            kn = torch.zeros(NT * BT, K, dtype=q.dtype, device=q.device)
            qn[:T] = q[i_b, i_h] * torch.rsqrt((q[i_b, i_h] ** 2).sum(-1, keepdim=True) + 1e-6)
            kn[:T] = k[i_b, i_h] * torch.rsqrt((k[i_b, i_h] ** 2).sum(-1, keepdim=True) + 1e-6)
            s[i_b, i_h] = (qn.view(NT, BT, K) @ kn.view(NT, BT, K).transpose(1, 2)).view(NT * BT, BT)
    return (s[:, :, :T],)


def bytes_moved(shape, dtype):
    B, H, T, K = (shape[n] for n in ("B", "H", "T", "K"))
    return B * H * T * (2 * K * torch.tensor([], dtype=dtype).element_size() + BT * 4)


def flops(shape, dtype):
    B, H, T, K = (shape[n] for n in ("B", "H", "T", "K"))
    return B * H * T * (2 * BT * K + 6 * K)


@triton.jit
def before_l2norm_kernel(x, y, n_rows, K: tl.constexpr, BT: tl.constexpr):
    o_t = tl.program_id(0) * BT + tl.arange(0, BT)
    o_k = tl.arange(0, K)
    p_x = o_t.to(tl.int64)[:, None] * K + o_k[None, :]
    m_t = o_t[:, None] < n_rows
    b_x = tl.load(x + p_x, mask=m_t, other=0.0).to(tl.float32)
    b_x = b_x * tl.rsqrt(tl.sum(b_x * b_x, 1) + 1e-6)[:, None]
    tl.store(y + p_x, b_x.to(y.dtype.element_ty), mask=m_t)


def before_l2norm(x):
    y = torch.empty_like(x)
    n_rows = x.numel() // x.shape[-1]
    before_l2norm_kernel[(triton.cdiv(n_rows, 16),)](x, y, n_rows, K=x.shape[-1], BT=16, num_warps=4)
    return y


@triton.jit
def before_kernel(q, k, s, T, K: tl.constexpr, BT: tl.constexpr):
    i_t, i_bh = tl.program_id(0), tl.program_id(1)
    o_t = i_t * BT + tl.arange(0, BT)
    o_k = tl.arange(0, K)
    m_t = o_t[:, None] < T
    p_qk = (i_bh.to(tl.int64) * T + o_t[:, None]) * K + o_k[None, :]
    b_q = tl.load(q + p_qk, mask=m_t, other=0.0)
    b_k = tl.load(k + p_qk, mask=m_t, other=0.0)
    b_s = tl.dot(b_q, tl.trans(b_k))
    tl.store(s + (i_bh.to(tl.int64) * T + o_t[:, None]) * BT + tl.arange(0, BT)[None, :], b_s, mask=m_t)


def before(q, k, s):
    B, H, T, K = q.shape
    q, k = before_l2norm(q), before_l2norm(k)
    before_kernel[(triton.cdiv(T, BT), B * H)](q, k, s, T, K=K, BT=BT, num_warps=4 if K <= 128 else 8)


@triton.jit
def after_kernel(q, k, s, T, K: tl.constexpr, BT: tl.constexpr):
    i_t, i_bh = tl.program_id(0), tl.program_id(1)
    o_t = i_t * BT + tl.arange(0, BT)
    o_k = tl.arange(0, K)
    m_t = o_t[:, None] < T
    p_qk = (i_bh.to(tl.int64) * T + o_t[:, None]) * K + o_k[None, :]
    b_q = tl.load(q + p_qk, mask=m_t, other=0.0).to(tl.float32)
    b_k = tl.load(k + p_qk, mask=m_t, other=0.0).to(tl.float32)
    b_q = (b_q * tl.rsqrt(tl.sum(b_q * b_q, 1) + 1e-6)[:, None]).to(q.dtype.element_ty)
    b_k = (b_k * tl.rsqrt(tl.sum(b_k * b_k, 1) + 1e-6)[:, None]).to(k.dtype.element_ty)
    b_s = tl.dot(b_q, tl.trans(b_k))
    tl.store(s + (i_bh.to(tl.int64) * T + o_t[:, None]) * BT + tl.arange(0, BT)[None, :], b_s, mask=m_t)


def after(q, k, s):
    B, H, T, K = q.shape
    after_kernel[(triton.cdiv(T, BT), B * H)](q, k, s, T, K=K, BT=BT, num_warps=4 if K <= 128 else 8)
