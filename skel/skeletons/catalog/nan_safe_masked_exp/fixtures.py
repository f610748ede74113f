# Fixtures for nan-safe-masked-exp: masks multiplied into exp-of-difference products (NaN where
# the exp overflows) vs tl.where selections, bounded exponentials and exp-free masked products.
import triton
import triton.language as tl


# skel: match nan-safe-masked-exp
@triton.jit
def intra_scores_float_mask(q, k, g, A, T, K: tl.constexpr, BT: tl.constexpr):
    # the GLA / RWKV sub-chunk shape: one column j of the [BT, BT] scores per step, the
    # causal mask cast to float and multiplied in (flash-linear-attention, dplr kernels)
    i_t, i_bh = tl.program_id(0), tl.program_id(1)
    o_i = tl.arange(0, BT)
    o_k = tl.arange(0, K)
    m_t = i_t * BT + o_i < T
    p = i_bh * T * K + (i_t * BT + o_i)[:, None] * K + o_k[None, :]
    b_q = tl.load(q + p, mask=m_t[:, None], other=0.)
    b_g = tl.load(g + p, mask=m_t[:, None], other=0.)
    for j in range(0, BT):
        b_kj = tl.load(k + i_bh * T * K + (i_t * BT + j) * K + o_k)
        b_gj = tl.load(g + i_bh * T * K + (i_t * BT + j) * K + o_k)
        m_i = (o_i >= j).to(tl.float32)
        b_A = tl.sum(b_q * b_kj[None, :] * tl.exp(b_g - b_gj[None, :]), 1)
        b_A = b_A * m_i
        tl.store(A + (i_bh * T + i_t * BT + o_i) * BT + j, b_A, mask=m_t)


# skel: match nan-safe-masked-exp
@triton.jit
def dqk_intra_int1_mask(dA, gk, kj_ptr, dq, T, K: tl.constexpr, BC: tl.constexpr):
    # the exp computed apart, then an int1 mask in a product chain (fla 6cc3736b's before side)
    i_t, i_bh = tl.program_id(0), tl.program_id(1)
    o_i = tl.arange(0, BC)
    o_k = tl.arange(0, K)
    p = i_bh * T * K + (i_t * BC + o_i)[:, None] * K + o_k[None, :]
    b_gi = tl.load(gk + p)
    b_dq = tl.zeros([BC, K], dtype=tl.float32)
    for j in range(0, BC):
        b_dA_j = tl.load(dA + (i_bh * T + i_t * BC + o_i) * BC + j)
        b_kj = tl.load(kj_ptr + i_bh * T * K + (i_t * BC + j) * K + o_k)
        b_gij = tl.load(gk + i_bh * T * K + (i_t * BC + j) * K + o_k)
        tmp1 = tl.exp(b_gi - b_gij[None, :])
        m_i1 = (o_i[:, None] >= j).to(tl.int1)
        b_dq += m_i1 * b_dA_j[:, None] * b_kj[None, :] * tmp1
    tl.store(dq + p, b_dq)


# skel: match nan-safe-masked-exp
@triton.jit
def ssd_scores_mask_product(cb_ptr, dA_ptr, out_ptr, chunk_size, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    # mamba-SSD-shaped pairwise decay, masked by multiplying the causal test in
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_k = tl.arange(0, BLOCK_K)
    dA_m = tl.load(dA_ptr + offs_m, mask=offs_m < chunk_size, other=0.0)
    dA_k = tl.load(dA_ptr + offs_k, mask=offs_k < chunk_size, other=0.0)
    cb = tl.load(cb_ptr + offs_m[:, None] * BLOCK_K + offs_k[None, :])
    cb = cb * tl.exp(dA_m[:, None] - dA_k[None, :]) * (offs_m[:, None] >= offs_k[None, :])
    tl.store(out_ptr + offs_m[:, None] * BLOCK_K + offs_k[None, :], cb)


# skel: ok nan-safe-masked-exp
# skel: uses nan-safe-masked-exp
@triton.jit
def intra_scores_where(q, k, g, A, T, K: tl.constexpr, BT: tl.constexpr):
    # the fixed form: the causal mask selects, the overflowed lanes are discarded
    i_t, i_bh = tl.program_id(0), tl.program_id(1)
    o_i = tl.arange(0, BT)
    o_k = tl.arange(0, K)
    m_t = i_t * BT + o_i < T
    p = i_bh * T * K + (i_t * BT + o_i)[:, None] * K + o_k[None, :]
    b_q = tl.load(q + p, mask=m_t[:, None], other=0.)
    b_g = tl.load(g + p, mask=m_t[:, None], other=0.)
    for j in range(0, BT):
        b_kj = tl.load(k + i_bh * T * K + (i_t * BT + j) * K + o_k)
        b_gj = tl.load(g + i_bh * T * K + (i_t * BT + j) * K + o_k)
        b_A = tl.sum(b_q * b_kj[None, :] * tl.exp(b_g - b_gj[None, :]), 1)
        b_A = tl.where(o_i >= j, b_A, 0.)
        tl.store(A + (i_bh * T + i_t * BT + o_i) * BT + j, b_A, mask=m_t)


# skel: ok nan-safe-masked-exp
@triton.jit
def masked_softmax_multiply(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    # a softmax's exp(x - max) is at most 1 on every finite lane: times a mask is safe
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    p = tl.exp(x - tl.max(x, axis=0)) * (cols < n_cols).to(tl.float32)
    tl.store(y_ptr + row * n_cols + cols, p / tl.sum(p, axis=0), mask=mask)


# skel: ok nan-safe-masked-exp
@triton.jit
def dot_scores_mask_multiply(q, k, A, scale, T, K: tl.constexpr, BT: tl.constexpr):
    # a masked product with no exponential (fla a1b163cc's `b_dA_qk * scale * m_s`): finite
    i_t = tl.program_id(0)
    o_i = tl.arange(0, BT)
    o_k = tl.arange(0, K)
    b_q = tl.load(q + (i_t * BT + o_i)[:, None] * K + o_k[None, :])
    b_k = tl.load(k + (i_t * BT + o_i)[:, None] * K + o_k[None, :])
    m_s = (o_i[:, None] >= o_i[None, :]).to(tl.int1)
    b_A = tl.dot(b_q, tl.trans(b_k)) * scale * m_s
    tl.store(A + (i_t * BT + o_i)[:, None] * BT + o_i[None, :], b_A)


# skel: ok nan-safe-masked-exp
@triton.jit
def clamped_decay_mask_multiply(cb_ptr, dA_ptr, out_ptr, BLOCK: tl.constexpr):
    # the exponent clamped to <= 0 first (mamba's numerical-stability patch): at most 1, times 0 is 0
    offs = tl.arange(0, BLOCK)
    dA = tl.load(dA_ptr + offs)
    cb = tl.load(cb_ptr + offs[:, None] * BLOCK + offs[None, :])
    cb = cb * tl.exp(tl.minimum(dA[:, None] - dA[None, :], 0.0)) * (offs[:, None] >= offs[None, :])
    tl.store(out_ptr + offs[:, None] * BLOCK + offs[None, :], cb)


# skel: ok nan-safe-masked-exp
@triton.jit
def silu_masked(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # exp(-x) of no difference: it overflows to inf, but x / (1 + inf) is a clean 0
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    y = x / (1.0 + tl.exp(-x)) * (offs < n)
    tl.store(y_ptr + offs, y, mask=offs < n)
