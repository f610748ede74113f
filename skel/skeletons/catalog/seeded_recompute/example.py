"""seeded-recompute: attention forward stores P for the backward → stores only the lse; backward recomputes P.

Harness format: docs/harness.md. The before/after launchers are the template shown.
Softmax attention over (batch * heads, T, D) with the dV part of its backward:
o = softmax(q k^T * scale) v and dv = P^T do. The before's forward writes the normalised
probabilities P ([T, T] per head, fp16) and its backward reads P tile by tile. The after's
forward writes only lse = m + log(l) per query row ([T] per head, fp32), and its backward
recomputes each tile p = exp(q k^T * scale - lse) with one extra tl.dot. Both forwards take
two passes over the keys (the row max and sum, then the output); only what crosses to the
backward differs: T^2 values against T.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(BH=3, T=100, D=32),         # on the CPU: T off the 32-blocks
    "short": dict(BH=64, T=1024, D=64),
    "long": dict(BH=32, T=4096, D=128),       # P = 1 GiB in fp16: its write and read dominate
    "huge": dict(BH=16, T=12000, D=64),       # BH * T * T past 2**31: P's offsets must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
FIXED = ("D",)
DTYPES = ("float16",)  # the CPU interpreter's bf16 tl.dot is wrong; fp16 runs on both
TOLERANCES = {"float16": (2e-3, 1e-2)}  # fp16 P and probabilities in both, fp32 accumulation


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    BH, T, D = shape["BH"], shape["T"], shape["D"]
    q, k, v, do = (torch.randn(BH, T, D, generator=g, device=device).to(dtype) for _ in range(4))
    return q, k, v, do


def make_outputs(shape, dtype, device):
    BH, T, D = shape["BH"], shape["T"], shape["D"]
    return (torch.empty(BH, T, D, dtype=dtype, device=device), torch.empty(BH, T, D, dtype=dtype, device=device))


def reference(q, k, v, do):
    p = torch.softmax(q @ k.transpose(1, 2) * q.shape[-1] ** -0.5, dim=-1)
    return (p @ v, p.transpose(1, 2) @ do)


def bytes_moved(shape, dtype):
    BH, T, D = shape["BH"], shape["T"], shape["D"]
    return 7 * BH * T * D * torch.tensor([], dtype=dtype).element_size() + BH * T * 4  # q,k,v,do,o,dv + lse


def flops(shape, dtype):
    return 8 * shape["BH"] * shape["T"] * shape["T"] * shape["D"]


def _blocks(q):
    return (64, 64) if q.is_cuda else (32, 32)


@triton.jit
def before_fwd(q_ptr, k_ptr, v_ptr, o_ptr, p_ptr, T, scale, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    i_m, i_bh = tl.program_id(0), tl.program_id(1).to(tl.int64)
    o_m = i_m * BM + tl.arange(0, BM)
    o_d = tl.arange(0, D)
    b_q = tl.load(q_ptr + (i_bh * T + o_m[:, None]) * D + o_d[None, :], mask=o_m[:, None] < T, other=0.0)
    m = tl.zeros([BM], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BM], dtype=tl.float32)
    for s in range(0, T, BN):
        o_n = s + tl.arange(0, BN)
        b_k = tl.load(k_ptr + (i_bh * T + o_n[None, :]) * D + o_d[:, None], mask=o_n[None, :] < T, other=0.0)
        qk = tl.where(o_n[None, :] < T, tl.dot(b_q, b_k) * scale, float("-inf"))
        m_new = tl.maximum(m, tl.max(qk, 1))
        l_i = l_i * tl.exp(m - m_new) + tl.sum(tl.exp(qk - m_new[:, None]), 1)
        m = m_new
    acc = tl.zeros([BM, D], dtype=tl.float32)
    for s in range(0, T, BN):
        o_n = s + tl.arange(0, BN)
        b_k = tl.load(k_ptr + (i_bh * T + o_n[None, :]) * D + o_d[:, None], mask=o_n[None, :] < T, other=0.0)
        b_v = tl.load(v_ptr + (i_bh * T + o_n[:, None]) * D + o_d[None, :], mask=o_n[:, None] < T, other=0.0)
        qk = tl.where(o_n[None, :] < T, tl.dot(b_q, b_k) * scale, float("-inf"))
        p = (tl.exp(qk - m[:, None]) / l_i[:, None]).to(tl.float16)
        tl.store(p_ptr + (i_bh * T + o_m[:, None]) * T + o_n[None, :], p, mask=(o_m[:, None] < T) & (o_n[None, :] < T))
        acc = tl.dot(p, b_v, acc)
    tl.store(o_ptr + (i_bh * T + o_m[:, None]) * D + o_d[None, :], acc.to(o_ptr.dtype.element_ty),
             mask=o_m[:, None] < T)


@triton.jit
def before_bwd_dv(p_ptr, do_ptr, dv_ptr, T, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    i_n, i_bh = tl.program_id(0), tl.program_id(1).to(tl.int64)
    o_n = i_n * BN + tl.arange(0, BN)
    o_d = tl.arange(0, D)
    acc = tl.zeros([BN, D], dtype=tl.float32)
    for s in range(0, T, BM):
        o_m = s + tl.arange(0, BM)
        p = tl.load(p_ptr + (i_bh * T + o_m[:, None]) * T + o_n[None, :], mask=(o_m[:, None] < T) & (o_n[None, :] < T),
                    other=0.0)  # the stored [T, T] probabilities: T^2 values read back
        b_do = tl.load(do_ptr + (i_bh * T + o_m[:, None]) * D + o_d[None, :], mask=o_m[:, None] < T, other=0.0)
        acc = tl.dot(tl.trans(p), b_do, acc)
    tl.store(dv_ptr + (i_bh * T + o_n[:, None]) * D + o_d[None, :], acc.to(dv_ptr.dtype.element_ty),
             mask=o_n[:, None] < T)


def before(q, k, v, do, o, dv):
    BH, T, D = q.shape
    bm, bn = _blocks(q)
    p = torch.empty(BH, T, T, dtype=torch.float16, device=q.device)
    before_fwd[(triton.cdiv(T, bm), BH)](q, k, v, o, p, T, D ** -0.5, D=D, BM=bm, BN=bn)
    before_bwd_dv[(triton.cdiv(T, bn), BH)](p, do, dv, T, D=D, BM=bm, BN=bn)


@triton.jit
def after_fwd(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, T, scale, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    i_m, i_bh = tl.program_id(0), tl.program_id(1).to(tl.int64)
    o_m = i_m * BM + tl.arange(0, BM)
    o_d = tl.arange(0, D)
    b_q = tl.load(q_ptr + (i_bh * T + o_m[:, None]) * D + o_d[None, :], mask=o_m[:, None] < T, other=0.0)
    m = tl.zeros([BM], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BM], dtype=tl.float32)
    for s in range(0, T, BN):
        o_n = s + tl.arange(0, BN)
        b_k = tl.load(k_ptr + (i_bh * T + o_n[None, :]) * D + o_d[:, None], mask=o_n[None, :] < T, other=0.0)
        qk = tl.where(o_n[None, :] < T, tl.dot(b_q, b_k) * scale, float("-inf"))
        m_new = tl.maximum(m, tl.max(qk, 1))
        l_i = l_i * tl.exp(m - m_new) + tl.sum(tl.exp(qk - m_new[:, None]), 1)
        m = m_new
    lse = m + tl.log(l_i)
    acc = tl.zeros([BM, D], dtype=tl.float32)
    for s in range(0, T, BN):
        o_n = s + tl.arange(0, BN)
        b_k = tl.load(k_ptr + (i_bh * T + o_n[None, :]) * D + o_d[:, None], mask=o_n[None, :] < T, other=0.0)
        b_v = tl.load(v_ptr + (i_bh * T + o_n[:, None]) * D + o_d[None, :], mask=o_n[:, None] < T, other=0.0)
        qk = tl.where(o_n[None, :] < T, tl.dot(b_q, b_k) * scale, float("-inf"))
        acc = tl.dot(tl.exp(qk - lse[:, None]).to(tl.float16), b_v, acc)
    tl.store(o_ptr + (i_bh * T + o_m[:, None]) * D + o_d[None, :], acc.to(o_ptr.dtype.element_ty),
             mask=o_m[:, None] < T)
    tl.store(lse_ptr + i_bh * T + o_m, lse, mask=o_m < T)  # T values, not T^2


@triton.jit
def after_bwd_dv(q_ptr, k_ptr, lse_ptr, do_ptr, dv_ptr, T, scale, D: tl.constexpr, BM: tl.constexpr,
                 BN: tl.constexpr):
    i_n, i_bh = tl.program_id(0), tl.program_id(1).to(tl.int64)
    o_n = i_n * BN + tl.arange(0, BN)
    o_d = tl.arange(0, D)
    b_k = tl.load(k_ptr + (i_bh * T + o_n[:, None]) * D + o_d[None, :], mask=o_n[:, None] < T, other=0.0)
    acc = tl.zeros([BN, D], dtype=tl.float32)
    for s in range(0, T, BM):
        o_m = s + tl.arange(0, BM)
        b_q = tl.load(q_ptr + (i_bh * T + o_m[:, None]) * D + o_d[None, :], mask=o_m[:, None] < T, other=0.0)
        lse = tl.load(lse_ptr + i_bh * T + o_m, mask=o_m < T, other=0.0)
        qk = tl.dot(b_q, tl.trans(b_k)) * scale
        p = tl.where((o_m[:, None] < T) & (o_n[None, :] < T), tl.exp(qk - lse[:, None]), 0.0)  # P recomputed
        b_do = tl.load(do_ptr + (i_bh * T + o_m[:, None]) * D + o_d[None, :], mask=o_m[:, None] < T, other=0.0)
        acc = tl.dot(tl.trans(p.to(tl.float16)), b_do, acc)
    tl.store(dv_ptr + (i_bh * T + o_n[:, None]) * D + o_d[None, :], acc.to(dv_ptr.dtype.element_ty),
             mask=o_n[:, None] < T)


def after(q, k, v, do, o, dv):
    BH, T, D = q.shape
    bm, bn = _blocks(q)
    lse = torch.empty(BH, T, dtype=torch.float32, device=q.device)
    after_fwd[(triton.cdiv(T, bm), BH)](q, k, v, o, lse, T, D ** -0.5, D=D, BM=bm, BN=bn)
    after_bwd_dv[(triton.cdiv(T, bn), BH)](q, k, lse, do, dv, T, D ** -0.5, D=D, BM=bm, BN=bn)
