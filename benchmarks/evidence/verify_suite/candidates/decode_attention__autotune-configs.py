"""decode_attention + autotune-configs: @triton.autotune over BLOCK_N, num_warps and num_stages, keyed on D and the GQA group."""

import os

import triton
import triton.language as tl

from benchmarks.evidence.verify_suite.kernels.decode_attention import *  # noqa: F401,F403  the harness (kernels/decode_attention.py, __all__)


def _interpreter_bench(kernel_call, quantiles):
    # TRITON_INTERPRET=1 has no GPU timer: run each config once and report a flat time.
    kernel_call()
    return [1.0, 1.0, 1.0]


@triton.autotune(
    configs=[triton.Config({"BLOCK_N": bn}, num_warps=w, num_stages=s)
             for bn, w, s in ((32, 4, 2), (64, 4, 2), (64, 4, 3), (128, 4, 3), (128, 8, 3))],
    key=["GROUP", "D"],
    do_bench=_interpreter_bench if os.environ.get("TRITON_INTERPRET") == "1" else None,
)
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
    k_base = k_ptr + b * stride_kb + kv_h * stride_kh
    v_base = v_ptr + b * stride_kb + kv_h * stride_kh
    m = float("-inf")
    l = 0.0
    acc = tl.zeros((D,), dtype=tl.float32)
    for start in range(0, S, BLOCK_N):
        n = start + offs_n
        mask = n < S
        kv_off = n[:, None].to(tl.int64) * stride_ks + offs_d[None, :]
        k = tl.load(k_base + kv_off, mask=mask[:, None], other=0.0).to(tl.float32)
        s = tl.sum(q[None, :] * k, axis=1) * sm_scale
        s = tl.where(mask, s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=0))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new)
        v = tl.load(v_base + kv_off, mask=mask[:, None], other=0.0).to(tl.float32)
        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
        l = l * alpha + tl.sum(p, axis=0)
        m = m_new
    tl.store(o_ptr + b * stride_ob + h * stride_oh + offs_d, (acc / l).to(o_ptr.dtype.element_ty))


def run(q, k, v, o):
    B, HQ, D = q.shape
    HKV, S = k.shape[1], k.shape[2]
    decode_attention_kernel[(B, HQ)](q, k, v, o, S, D ** -0.5, q.stride(0), q.stride(1), k.stride(0), k.stride(1),
                                     k.stride(2), o.stride(0), o.stride(1), GROUP=HQ // HKV, D=D)
