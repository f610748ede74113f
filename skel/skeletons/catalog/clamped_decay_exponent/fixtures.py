# Fixtures for clamped-decay-exponent: unclamped pairwise decays exp(g[:, None] - g[None, :]) vs clamped
# exponents, fully masked selections, softmax exponents and 1-D decays.
import triton
import triton.language as tl


# skel: match clamped-decay-exponent
@triton.jit
def ssd_chunk_scan_unclamped(cb_ptr, x_ptr, dA_cumsum_ptr, out_ptr, chunk_size, BLOCK_M: tl.constexpr,
                             BLOCK_K: tl.constexpr, BLOCK_N: tl.constexpr):
    # Mamba-2's chunk scan before its stability patch: a causal where only, no range test
    pid_m = tl.program_id(0)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    dA_cs_m = tl.load(dA_cumsum_ptr + offs_m, mask=offs_m < chunk_size, other=0.0).to(tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, (pid_m + 1) * BLOCK_M, BLOCK_K):
        offs_k = k + tl.arange(0, BLOCK_K)
        cb = tl.load(cb_ptr + offs_m[:, None] * chunk_size + offs_k[None, :],
                     mask=(offs_m[:, None] < chunk_size) & (offs_k[None, :] < chunk_size), other=0.0)
        dA_cs_k = tl.load(dA_cumsum_ptr + offs_k, mask=offs_k < chunk_size, other=0.0).to(tl.float32)
        cb *= tl.exp(dA_cs_m[:, None] - dA_cs_k[None, :])
        cb = tl.where(offs_m[:, None] >= offs_k[None, :], cb, 0.0)
        x = tl.load(x_ptr + offs_k[:, None] * BLOCK_N + offs_n[None, :], mask=offs_k[:, None] < chunk_size, other=0.0)
        acc += tl.dot(cb.to(x.dtype), x)
    tl.store(out_ptr + offs_m[:, None] * BLOCK_N + offs_n[None, :], acc, mask=offs_m[:, None] < chunk_size)


# skel: match clamped-decay-exponent
@triton.jit
def gla_fwd_o_unclamped(q, k, v, g, o, T, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr):
    # simple-GLA output, the decay computed apart and multiplied in before a causal-only where
    i_t, i_bh = tl.program_id(0), tl.program_id(1)
    p_q = tl.make_block_ptr(q + i_bh * T * K, (T, K), (K, 1), (i_t * BT, 0), (BT, K), (1, 0))
    p_k = tl.make_block_ptr(k + i_bh * T * K, (K, T), (1, K), (0, i_t * BT), (K, BT), (0, 1))
    p_v = tl.make_block_ptr(v + i_bh * T * V, (T, V), (V, 1), (i_t * BT, 0), (BT, V), (1, 0))
    p_g = tl.make_block_ptr(g + i_bh * T, (T,), (1,), (i_t * BT,), (BT,), (0,))
    p_o = tl.make_block_ptr(o + i_bh * T * V, (T, V), (V, 1), (i_t * BT, 0), (BT, V), (1, 0))
    b_g = tl.load(p_g, boundary_check=(0,))
    b_s = tl.dot(tl.load(p_q, boundary_check=(0, 1)), tl.load(p_k, boundary_check=(0, 1)))
    b_D = b_g[:, None] - b_g[None, :]
    b_s = b_s * tl.exp(b_D)
    o_i = tl.arange(0, BT)
    b_s = tl.where(o_i[:, None] >= o_i[None, :], b_s, 0)
    b_o = tl.dot(b_s.to(tl.float16), tl.load(p_v, boundary_check=(0, 1)))
    tl.store(p_o, b_o.to(p_o.dtype.element_ty), boundary_check=(0, 1))


# skel: ok clamped-decay-exponent
# skel: uses clamped-decay-exponent
@triton.jit
def ssd_chunk_scan_clamped(cb_ptr, dA_cumsum_ptr, out_ptr, chunk_size, BLOCK_M: tl.constexpr,
                           BLOCK_K: tl.constexpr):
    # after Mamba-2's patch: tl.exp(tl.minimum(.., 0.0))
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_k = tl.arange(0, BLOCK_K)
    dA_cs_m = tl.load(dA_cumsum_ptr + offs_m, mask=offs_m < chunk_size, other=0.0)
    dA_cs_k = tl.load(dA_cumsum_ptr + offs_k, mask=offs_k < chunk_size, other=0.0)
    cb = tl.load(cb_ptr + offs_m[:, None] * BLOCK_K + offs_k[None, :])
    cb *= tl.exp(tl.minimum(dA_cs_m[:, None] - dA_cs_k[None, :], 0.0))
    cb = tl.where(offs_m[:, None] >= offs_k[None, :], cb, 0.0)
    tl.store(out_ptr + offs_m[:, None] * BLOCK_K + offs_k[None, :], cb)


# skel: ok clamped-decay-exponent
# skel: uses clamped-decay-exponent
@triton.jit
def gdn_fwd_o_safe_exp(q, k, g, A, T, K: tl.constexpr, BT: tl.constexpr):
    # flash-linear-attention's safe_exp(x) = exp(tl.where(x <= 0, x, -inf)): clamped in the helper
    i_t = tl.program_id(0)
    o_t = i_t * BT + tl.arange(0, BT)
    o_k = tl.arange(0, K)
    m_t = o_t < T
    b_q = tl.load(q + o_t[:, None] * K + o_k[None, :], mask=m_t[:, None], other=0.)
    b_k = tl.load(k + o_t[:, None] * K + o_k[None, :], mask=m_t[:, None], other=0.)
    b_g = tl.load(g + o_t, mask=m_t, other=0.)
    b_A = tl.dot(b_q, tl.trans(b_k)) * safe_exp(b_g[:, None] - b_g[None, :])
    tl.store(A + o_t[:, None] * BT + tl.arange(0, BT)[None, :], b_A, mask=m_t[:, None])


# skel: ok clamped-decay-exponent
@triton.jit
def gdn_fwd_o_full_mask(q, k, g, A, T, K: tl.constexpr, BT: tl.constexpr):
    # the other fix (fla 356d59d7): the where tests the triangle and the range: every inf discarded
    i_t = tl.program_id(0)
    o_t = i_t * BT + tl.arange(0, BT)
    o_k = tl.arange(0, K)
    m_t = o_t < T
    b_q = tl.load(q + o_t[:, None] * K + o_k[None, :], mask=m_t[:, None], other=0.)
    b_k = tl.load(k + o_t[:, None] * K + o_k[None, :], mask=m_t[:, None], other=0.)
    b_g = tl.load(g + o_t, mask=m_t, other=0.)
    m_A = (o_t[:, None] >= o_t[None, :]) & (m_t[:, None] & m_t)
    b_A = tl.where(m_A, tl.dot(b_q, tl.trans(b_k)) * tl.exp(b_g[:, None] - b_g[None, :]), 0)
    tl.store(A + o_t[:, None] * BT + tl.arange(0, BT)[None, :], b_A, mask=m_t[:, None])


# skel: ok clamped-decay-exponent
@triton.jit
def attention_softmax_tile(q, k, o, m_ptr, N, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    # a softmax exponent: qk minus the row maximum, not one tensor's pairwise values
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_d = tl.arange(0, D)
    b_q = tl.load(q + offs_m[:, None] * D + offs_d[None, :])
    b_k = tl.load(k + offs_n[:, None] * D + offs_d[None, :], mask=offs_n[:, None] < N, other=0.)
    qk = tl.dot(b_q, tl.trans(b_k))
    m_i = tl.load(m_ptr + offs_m)
    p = tl.exp(qk - m_i[:, None])
    tl.store(o + offs_m[:, None] * BN + offs_n[None, :], p)


# skel: ok clamped-decay-exponent
@triton.jit
def chunk_state_last_decay(b_ptr, dA_cumsum_ptr, out_ptr, chunk_size, BLOCK_K: tl.constexpr, BLOCK_N: tl.constexpr):
    # a 1-D decay to the chunk's end: padded lanes load 0 and the exponent stays <= 0
    offs_k = tl.arange(0, BLOCK_K)
    offs_n = tl.arange(0, BLOCK_N)
    dA_cs_last = tl.load(dA_cumsum_ptr + chunk_size - 1)
    dA_cs_k = tl.load(dA_cumsum_ptr + offs_k, mask=offs_k < chunk_size, other=0.0)
    b = tl.load(b_ptr + offs_k[:, None] * BLOCK_N + offs_n[None, :], mask=offs_k[:, None] < chunk_size, other=0.0)
    b *= tl.exp(dA_cs_last - dA_cs_k)[:, None]
    tl.store(out_ptr + offs_n, tl.sum(b, 0))
