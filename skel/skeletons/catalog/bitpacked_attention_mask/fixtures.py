# Fixtures for bitpacked-attention-mask: attention key loops that read a (query, key) mask
# tile element by element to select the scores, against packed bits, computed masks, additive
# biases, key-padding vectors and row kernels. Written for these tests after the shapes of
# SGLang/aiter's extend attention and the FlashAttention tutorial; none is copied.
import triton
import triton.language as tl


# skel: match bitpacked-attention-mask
@triton.jit
def extend_attn_custom_mask(Q, K, V, O, mask_ptr, mask_indptr, seq_lens, stride_qt, stride_kt, stride_ot, sm_scale,
                            D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # one byte a (query, key) pair, loaded as a tile each key step (SGLang's extend attention)
    cur_seq = tl.program_id(0)
    cur_block_m = tl.program_id(1)
    seq_len = tl.load(seq_lens + cur_seq)
    mask_start = tl.load(mask_indptr + cur_seq)
    offs_m = cur_block_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    mask_m = offs_m < seq_len
    q = tl.load(Q + offs_m[:, None] * stride_qt + offs_d[None, :], mask=mask_m[:, None], other=0.0)
    e_max = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    deno = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    for start_n in range(0, seq_len, BLOCK_N):
        mask_n = (start_n + offs_n) < seq_len
        k = tl.load(K + (start_n + offs_n[None, :]) * stride_kt + offs_d[:, None], mask=mask_n[None, :], other=0.0)
        qk = tl.dot(q, k)
        qk *= sm_scale
        custom_mask = tl.load(mask_ptr + mask_start + offs_m[:, None] * seq_len + start_n + offs_n[None, :],
                              mask=(mask_m[:, None] & mask_n[None, :]), other=0)
        custom_mask &= mask_m[:, None] & mask_n[None, :]
        qk = tl.where(custom_mask, qk, float("-inf"))
        n_e_max = tl.maximum(tl.max(qk, 1), e_max)
        re_scale = tl.exp(e_max - n_e_max)
        p = tl.exp(qk - n_e_max[:, None])
        deno = deno * re_scale + tl.sum(p, 1)
        v = tl.load(V + (start_n + offs_n[:, None]) * stride_kt + offs_d[None, :], mask=mask_n[:, None], other=0.0)
        acc = acc * re_scale[:, None] + tl.dot(p.to(v.dtype), v)
        e_max = n_e_max
    tl.store(O + offs_m[:, None] * stride_ot + offs_d[None, :], acc / deno[:, None], mask=mask_m[:, None])


# skel: match bitpacked-attention-mask
@triton.jit
def attn_fwd_float_mask(Q, K, V, M, O, stride_h, stride_m, stride_mm, L, scale,
                        HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # an fp32 0/1 mask per head, compared with 0 to select the scores
    start_m = tl.program_id(0)
    off_h = tl.program_id(1)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + off_h * stride_h + offs_m[:, None] * stride_m + offs_d[None, :])
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    mask_ptrs = M + off_h * L * L + offs_m[:, None] * stride_mm + offs_n[None, :]
    for start_n in range(0, L, BLOCK_N):
        k = tl.load(K + off_h * stride_h + (start_n + offs_n)[None, :] * stride_m + offs_d[:, None])
        qk = tl.dot(q, k) * scale
        allowed = tl.load(mask_ptrs + start_n)
        qk = tl.where(allowed > 0.5, qk, -1.0e6)
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_ij[:, None])
        alpha = tl.exp(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + off_h * stride_h + (start_n + offs_n)[:, None] * stride_m + offs_d[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_ij
    tl.store(O + off_h * stride_h + offs_m[:, None] * stride_m + offs_d[None, :], acc / l_i[:, None])


def attn_fwd_float_mask_launch(q, k, v, mask, o, scale):
    H, L, D = q.shape
    grid = (triton.cdiv(L, 128), H)
    attn_fwd_float_mask[grid](q, k, v, mask, o, q.stride(0), q.stride(1), mask.stride(1), L, scale,
                              HEAD_DIM=D, BLOCK_M=128, BLOCK_N=64)


# skel: ok bitpacked-attention-mask
# skel: uses bitpacked-attention-mask
@triton.jit
def attn_fwd_packed_mask(Q, K, V, Bits, O, L, W, scale, D: tl.constexpr, BLOCK_M: tl.constexpr,
                         BLOCK_N: tl.constexpr):
    # the technique: 32 keys a word, unpacked with shifts
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_w = tl.arange(0, BLOCK_N // 32)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + bh * L * D + offs_m[:, None] * D + offs_d[None, :])
    m_i = tl.full([BLOCK_M], -1e30, dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    for start_n in range(0, L, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(K + bh * L * D + cols[None, :] * D + offs_d[:, None])
        qk = tl.dot(q, k) * scale
        w = tl.load(Bits + bh * L * W + offs_m[:, None] * W + (start_n // 32 + offs_w)[None, :])
        keep = tl.reshape((w[:, :, None] >> tl.arange(0, 32)[None, None, :]) & 1, (BLOCK_M, BLOCK_N))
        qk = tl.where(keep != 0, qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + bh * L * D + cols[:, None] * D + offs_d[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    tl.store(O + bh * L * D + offs_m[:, None] * D + offs_d[None, :], acc / l_i[:, None])


# skel: ok bitpacked-attention-mask
@triton.jit
def attn_fwd_causal(Q, K, V, O, L, scale, D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # a causal mask computed from the indices: no mask bytes to pack
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + bh * L * D + offs_m[:, None] * D + offs_d[None, :])
    m_i = tl.full([BLOCK_M], -1e30, dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    for start_n in range(0, (pid_m + 1) * BLOCK_M, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(K + bh * L * D + cols[None, :] * D + offs_d[:, None])
        qk = tl.dot(q, k) * scale
        qk = tl.where(offs_m[:, None] >= cols[None, :], qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + bh * L * D + cols[:, None] * D + offs_d[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    tl.store(O + bh * L * D + offs_m[:, None] * D + offs_d[None, :], acc / l_i[:, None])


# skel: ok bitpacked-attention-mask
@triton.jit
def attn_fwd_additive_bias(Q, K, V, Bias, O, L, scale, D: tl.constexpr, BLOCK_M: tl.constexpr,
                           BLOCK_N: tl.constexpr):
    # an additive bias tile (relative positions, ALiBi): values, not 0/1 — bits cannot hold them
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + bh * L * D + offs_m[:, None] * D + offs_d[None, :])
    m_i = tl.full([BLOCK_M], -1e30, dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    for start_n in range(0, L, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(K + bh * L * D + cols[None, :] * D + offs_d[:, None])
        qk = tl.dot(q, k) * scale
        qk += tl.load(Bias + bh * L * L + offs_m[:, None] * L + cols[None, :]).to(tl.float32)
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + bh * L * D + cols[:, None] * D + offs_d[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    tl.store(O + bh * L * D + offs_m[:, None] * D + offs_d[None, :], acc / l_i[:, None])


# skel: ok bitpacked-attention-mask
@triton.jit
def attn_fwd_key_padding(Q, K, V, KeyPad, O, L, scale, D: tl.constexpr, BLOCK_M: tl.constexpr,
                         BLOCK_N: tl.constexpr):
    # one flag a key (a padding mask): BLOCK_N bytes a step, nothing beside K/V
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + bh * L * D + offs_m[:, None] * D + offs_d[None, :])
    m_i = tl.full([BLOCK_M], -1e30, dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    for start_n in range(0, L, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(K + bh * L * D + cols[None, :] * D + offs_d[:, None])
        qk = tl.dot(q, k) * scale
        valid = tl.load(KeyPad + bh * L + cols)
        qk = tl.where(valid[None, :] != 0, qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + bh * L * D + cols[:, None] * D + offs_d[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    tl.store(O + bh * L * D + offs_m[:, None] * D + offs_d[None, :], acc / l_i[:, None])


# skel: ok bitpacked-attention-mask
@triton.jit
def masked_softmax_rows(x_ptr, mask_ptr, out_ptr, stride, n_rows, n_cols, BLOCK_R: tl.constexpr,
                        BLOCK_C: tl.constexpr):
    # a masked softmax over rows, no scores from a `tl.dot`: the mask is read once with the data
    pid = tl.program_id(0)
    rows = pid * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_C)
    inb = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    for r in range(0, 1):
        x = tl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=inb, other=float("-inf"))
        keep = tl.load(mask_ptr + rows[:, None] * stride + cols[None, :], mask=inb, other=0)
        x = tl.where(keep != 0, x, float("-inf"))
        e = tl.exp(x - tl.max(x, 1)[:, None])
        tl.store(out_ptr + rows[:, None] * stride + cols[None, :], e / tl.sum(e, 1)[:, None], mask=inb)


# skel: ok bitpacked-attention-mask
@triton.jit
def chunk_attn_tile_select(q_ptr, k_ptr, m_ptr, o_ptr, T, BT: tl.constexpr, D: tl.constexpr):
    # a mask tile selects a tile loaded from memory, not the `tl.dot` scores (a gated update)
    i_t = tl.program_id(0)
    o_i = tl.arange(0, BT)
    o_d = tl.arange(0, D)
    b_o = tl.zeros([BT, BT], dtype=tl.float32)
    for i_s in range(0, T, BT):
        b_q = tl.load(q_ptr + (i_t * BT + o_i)[:, None] * D + o_d[None, :])
        b_k = tl.load(k_ptr + (i_s + o_i)[:, None] * D + o_d[None, :])
        b_m = tl.load(m_ptr + (i_t * BT + o_i)[:, None] * D + o_d[None, :])
        b_q = tl.where(b_m != 0, b_q, 0.0)
        b_o += tl.dot(b_q, tl.trans(b_k)).to(tl.float32)
    tl.store(o_ptr + (i_t * BT + o_i)[:, None] * T + o_i[None, :], b_o)


# skel: ok bitpacked-attention-mask
@triton.jit
def attn_fwd_window_finite_pivot(q, k, v, o, T, W, scale, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr,
                                 BS: tl.constexpr):
    # a sliding window computed from indices, and a `tl.where` that tests the running max of
    # the scores (the K tile reaches it only through the `tl.dot`): no mask tile is loaded
    i_t = tl.program_id(0)
    o_q = i_t * BT + tl.arange(0, BT)
    o_d = tl.arange(0, K)
    o_v = tl.arange(0, V)
    b_q = tl.load(q + o_q[:, None] * K + o_d[None, :], mask=o_q[:, None] < T, other=0.0)
    b_o = tl.zeros([BT, V], dtype=tl.float32)
    b_m = tl.full([BT], float("-inf"), dtype=tl.float32)
    b_acc = tl.zeros([BT], dtype=tl.float32)
    for i_s in range(0, i_t * BT, BS):
        o_k = i_s + tl.arange(0, BS)
        m_k = o_k < T
        b_k = tl.load(k + o_d[:, None] + o_k[None, :] * K, mask=m_k[None, :], other=0.0)
        b_v = tl.load(v + o_k[:, None] * V + o_v[None, :], mask=m_k[:, None], other=0.0)
        b_s = tl.dot(b_q, b_k) * scale
        b_s = tl.where((o_q[:, None] - o_k[None, :] < W) & m_k[None, :], b_s, float("-inf"))
        b_m, b_mp = tl.maximum(b_m, tl.max(b_s, 1)), b_m
        b_mw = tl.where(b_m == float("-inf"), 0., b_m)
        b_r = tl.exp(b_mp - b_mw)
        b_p = tl.exp(b_s - b_mw[:, None])
        b_acc = b_acc * b_r + tl.sum(b_p, 1)
        b_o = b_o * b_r[:, None] + tl.dot(b_p.to(b_q.dtype), b_v)
    tl.store(o + o_q[:, None] * V + o_v[None, :], b_o / b_acc[:, None], mask=o_q[:, None] < T)
