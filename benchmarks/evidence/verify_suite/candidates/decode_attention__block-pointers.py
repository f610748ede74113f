"""decode_attention + block-pointers: K/V tiles through tl.make_block_ptr + tl.advance + boundary_check instead of offset grids and masks."""

import triton
import triton.language as tl

from benchmarks.evidence.verify_suite.kernels.decode_attention import *  # noqa: F401,F403  the harness (kernels/decode_attention.py, __all__)


@triton.jit
def decode_attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, S, sm_scale,
                            stride_qb, stride_qh, stride_kb, stride_kh, stride_ks, stride_ob, stride_oh,
                            GROUP: tl.constexpr, D: tl.constexpr, BLOCK_N: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    h = tl.program_id(1)
    kv_h = h // GROUP
    offs_d = tl.arange(0, D)
    offs_n = tl.arange(0, BLOCK_N)
    q = tl.load(q_ptr + b * stride_qb + h * stride_qh + offs_d).to(tl.float32)
    p_k = tl.make_block_ptr(k_ptr + b * stride_kb + kv_h * stride_kh, shape=(S, D), strides=(stride_ks, 1),
                            offsets=(0, 0), block_shape=(BLOCK_N, D), order=(1, 0))
    p_v = tl.make_block_ptr(v_ptr + b * stride_kb + kv_h * stride_kh, shape=(S, D), strides=(stride_ks, 1),
                            offsets=(0, 0), block_shape=(BLOCK_N, D), order=(1, 0))
    m = float("-inf")
    l = 0.0
    acc = tl.zeros((D,), dtype=tl.float32)
    for start in range(0, S, BLOCK_N):
        mask = start + offs_n < S
        k = tl.load(p_k, boundary_check=(0,), padding_option="zero").to(tl.float32)
        s = tl.sum(q[None, :] * k, axis=1) * sm_scale
        s = tl.where(mask, s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=0))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new)
        v = tl.load(p_v, boundary_check=(0,), padding_option="zero").to(tl.float32)
        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
        l = l * alpha + tl.sum(p, axis=0)
        m = m_new
        p_k = tl.advance(p_k, (BLOCK_N, 0))
        p_v = tl.advance(p_v, (BLOCK_N, 0))
    tl.store(o_ptr + b * stride_ob + h * stride_oh + offs_d, (acc / l).to(o_ptr.dtype.element_ty))


def run(q, k, v, o):
    B, HQ, D = q.shape
    HKV, S = k.shape[1], k.shape[2]
    decode_attention_kernel[(B, HQ)](q, k, v, o, S, D ** -0.5, q.stride(0), q.stride(1), k.stride(0), k.stride(1),
                                     k.stride(2), o.stride(0), o.stride(1), GROUP=HQ // HKV, D=D, BLOCK_N=64)
