"""decode_attention + gqa-head-packing: one program per (batch, KV head) with its GROUP query heads as a [BLOCK_H, D] tl.dot tile (KV read once per group, scores and P@V on tensor cores)."""

import triton
import triton.language as tl

from benchmarks.evidence.verify_suite.kernels.decode_attention import *  # noqa: F401,F403  the harness (kernels/decode_attention.py, __all__)


@triton.jit
def decode_attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, S, sm_scale,
                            stride_qb, stride_qh, stride_kb, stride_kh, stride_ks, stride_ob, stride_oh,
                            GROUP: tl.constexpr, D: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_H: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    kv_h = tl.program_id(1)
    h = kv_h * GROUP + tl.arange(0, BLOCK_H)  # the group's query heads, padded to BLOCK_H
    m_h = h < (kv_h + 1) * GROUP
    offs_d = tl.arange(0, D)
    offs_n = tl.arange(0, BLOCK_N)
    q = tl.load(q_ptr + b * stride_qb + h[:, None] * stride_qh + offs_d[None, :], mask=m_h[:, None], other=0.0)
    k_base = k_ptr + b * stride_kb + kv_h * stride_kh
    v_base = v_ptr + b * stride_kb + kv_h * stride_kh
    m = tl.full((BLOCK_H,), float("-inf"), dtype=tl.float32)
    l = tl.zeros((BLOCK_H,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_H, D), dtype=tl.float32)
    for start in range(0, S, BLOCK_N):
        n = start + offs_n
        mask = n < S
        kv_off = n[:, None].to(tl.int64) * stride_ks + offs_d[None, :]
        k = tl.load(k_base + kv_off, mask=mask[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k)) * sm_scale  # [BLOCK_H, BLOCK_N]
        s = tl.where(mask[None, :], s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new[:, None])
        v = tl.load(v_base + kv_off, mask=mask[:, None], other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        l = l * alpha + tl.sum(p, axis=1)
        m = m_new
    tl.store(o_ptr + b * stride_ob + h[:, None] * stride_oh + offs_d[None, :],
             (acc / l[:, None]).to(o_ptr.dtype.element_ty), mask=m_h[:, None])


def run(q, k, v, o):
    B, HQ, D = q.shape
    HKV, S = k.shape[1], k.shape[2]
    GROUP = HQ // HKV
    decode_attention_kernel[(B, HKV)](q, k, v, o, S, D ** -0.5, q.stride(0), q.stride(1), k.stride(0), k.stride(1),
                                      k.stride(2), o.stride(0), o.stride(1), GROUP=GROUP, D=D, BLOCK_N=64,
                                      BLOCK_H=max(16, triton.next_power_of_2(GROUP)))
