"""Naive decode attention step: one query per (batch, head), one program per (batch, head), a loop over the KV
cache in BLOCK_N chunks: a first pass for the score max, a second pass for exp-sum and the weighted V sum."""
import math

import torch
import triton
import triton.language as tl

KERNEL = "decode_attention_kernel"
SIZES = {"B": 32, "H": 32, "S": 4096, "D": 128}
SHAPES = ["batch=32", "heads=32", "seq_len=4096", "head_dim=128", "programs=1024"]
CPU_SIZES = {"B": 2, "H": 3, "S": 200, "D": 32}
DTYPE = torch.float16


@triton.jit(do_not_specialize=["seq_len"])
def decode_attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq_len, sm_scale,
                            stride_qb, stride_qh, stride_kb, stride_kh, stride_ks,
                            stride_vb, stride_vh, stride_vs, stride_ob, stride_oh,
                            H, HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    b = pid // H
    h = pid % H
    d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + b * stride_qb + h * stride_qh + d).to(tl.float32)
    k_base = k_ptr + b * stride_kb + h * stride_kh
    v_base = v_ptr + b * stride_vb + h * stride_vh
    # pass 1: max score
    m = -float("inf")
    for s0 in range(0, seq_len, BLOCK_N):
        n = s0 + tl.arange(0, BLOCK_N)
        k = tl.load(k_base + n[:, None] * stride_ks + d[None, :], mask=n[:, None] < seq_len, other=0.0)
        scores = tl.sum(k.to(tl.float32) * q[None, :], axis=1) * sm_scale
        scores = tl.where(n < seq_len, scores, -float("inf"))
        m = tl.maximum(m, tl.max(scores, axis=0))
    # pass 2: exp-sum and weighted V
    l = 0.0  # noqa: E741
    acc = tl.zeros((HEAD_DIM,), dtype=tl.float32)
    for s0 in range(0, seq_len, BLOCK_N):
        n = s0 + tl.arange(0, BLOCK_N)
        k = tl.load(k_base + n[:, None] * stride_ks + d[None, :], mask=n[:, None] < seq_len, other=0.0)
        scores = tl.sum(k.to(tl.float32) * q[None, :], axis=1) * sm_scale
        p = tl.where(n < seq_len, tl.exp(scores - m), 0.0)
        v = tl.load(v_base + n[:, None] * stride_vs + d[None, :], mask=n[:, None] < seq_len, other=0.0)
        acc += tl.sum(p[:, None] * v.to(tl.float32), axis=0)
        l += tl.sum(p, axis=0)  # noqa: E741
    out = acc / l
    tl.store(o_ptr + b * stride_ob + h * stride_oh + d, out.to(tl.float16))


def launch(q, k, v):
    B, H, D = q.shape
    S = k.shape[2]
    o = torch.empty_like(q)
    decode_attention_kernel[(B * H,)](q, k, v, o, S, 1.0 / math.sqrt(D),
                                      q.stride(0), q.stride(1), k.stride(0), k.stride(1), k.stride(2),
                                      v.stride(0), v.stride(1), v.stride(2), o.stride(0), o.stride(1),
                                      H, HEAD_DIM=D, BLOCK_N=64)
    return o


def make_inputs(device, sizes=None):
    s = sizes or SIZES
    q = torch.randn((s["B"], s["H"], s["D"]), device=device, dtype=DTYPE)
    k = torch.randn((s["B"], s["H"], s["S"], s["D"]), device=device, dtype=DTYPE)
    v = torch.randn((s["B"], s["H"], s["S"], s["D"]), device=device, dtype=DTYPE)
    return q, k, v


def reference(q, k, v):
    scale = 1.0 / math.sqrt(q.shape[-1])
    scores = torch.einsum("bhd,bhsd->bhs", q.float(), k.float()) * scale
    p = torch.softmax(scores, dim=-1)
    return torch.einsum("bhs,bhsd->bhd", p, v.float()).to(q.dtype)
