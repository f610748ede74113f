"""kda_decode + exp2-log2e-folding: every tl.exp becomes tl.exp2 with log2(e) folded in (decay, softplus, A_log)."""

import triton
import triton.language as tl

from benchmarks.evidence.verify_suite.kernels.kda_decode import *  # noqa: F401,F403  the harness (kernels/kda_decode.py, __all__)


@triton.jit
def kda_decode_kernel(q_ptr, k_ptr, v_ptr, a_ptr, beta_ptr, A_log_ptr, dt_bias_ptr, s_ptr, o_ptr, s_out_ptr, H,
                      scale, K: tl.constexpr, V: tl.constexpr, BV: tl.constexpr):
    LOG2E: tl.constexpr = 1.4426950408889634
    LN2: tl.constexpr = 0.6931471805599453
    i_v = tl.program_id(0)
    i_bh = tl.program_id(1).to(tl.int64)
    i_h = i_bh % H
    offs_k = tl.arange(0, K)
    offs_v = i_v * BV + tl.arange(0, BV)
    q = tl.load(q_ptr + i_bh * K + offs_k).to(tl.float32)
    k = tl.load(k_ptr + i_bh * K + offs_k).to(tl.float32)
    q = q / tl.sqrt(tl.sum(q * q, axis=0) + 1e-6)
    k = k / tl.sqrt(tl.sum(k * k, axis=0) + 1e-6)
    a = tl.load(a_ptr + i_bh * K + offs_k).to(tl.float32) + tl.load(dt_bias_ptr + i_h * K + offs_k)
    softplus = tl.where(a > 20.0, a, tl.log2(1.0 + tl.exp2(a * LOG2E)) * LN2)
    g2 = -tl.exp2(tl.load(A_log_ptr + i_h) * LOG2E) * softplus * LOG2E  # the gate in log2 units
    beta = tl.sigmoid(tl.load(beta_ptr + i_bh).to(tl.float32))
    s_off = i_bh * K * V + offs_k[:, None] * V + offs_v[None, :]
    S = tl.load(s_ptr + s_off) * tl.exp2(g2)[:, None]
    v = tl.load(v_ptr + i_bh * V + offs_v).to(tl.float32)
    u = beta * (v - tl.sum(k[:, None] * S, axis=0))
    S = S + k[:, None] * u[None, :]
    o = tl.sum((q * scale)[:, None] * S, axis=0)
    tl.store(s_out_ptr + s_off, S)
    tl.store(o_ptr + i_bh * V + offs_v, o.to(o_ptr.dtype.element_ty))


def run(q, k, v, a, beta, A_log, dt_bias, state, o, state_out):
    B, H, K = q.shape
    V = v.shape[-1]
    BV = min(32, V)
    kda_decode_kernel[(triton.cdiv(V, BV), B * H)](q, k, v, a, beta, A_log, dt_bias, state, o, state_out, H,
                                                   K ** -0.5, K=K, V=V, BV=BV)
