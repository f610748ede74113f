# Fixtures for rope-sincos-in-kernel: rotary embeddings that gather a cos/sin table row per
# token, against ones that compute cos/sin in the kernel, cosine similarities, table builders
# and kernels that only copy table rows. Written for these tests after the shapes of Liger's,
# vLLM/SGLang's and lmdeploy's rope kernels; none is copied.
import triton
import triton.language as tl


# skel: match rope-sincos-in-kernel
@triton.jit
def rope_rows_heads_tile(q_ptr, q_row_stride, k_ptr, k_row_stride, cos, cos_row_stride, sin, sin_row_stride, sl,
                         n_qh: tl.constexpr, n_kh: tl.constexpr, hd: tl.constexpr, pad_n_qh: tl.constexpr,
                         pad_n_kh: tl.constexpr, pad_hd: tl.constexpr):
    # one program a token: the table row of its position, every head as a [heads, hd/2] tile
    pid = tl.program_id(0)
    q_ptr = q_ptr + pid * q_row_stride
    k_ptr = k_ptr + pid * k_row_stride
    cos_row_idx = pid % sl
    cos = cos + cos_row_idx * cos_row_stride
    sin = sin + cos_row_idx * sin_row_stride
    cos_offsets = tl.arange(0, pad_hd // 2)
    cos_mask = cos_offsets < hd // 2
    cos_row = tl.load(cos + cos_offsets, mask=cos_mask, other=0)
    sin_row = tl.load(sin + cos_offsets, mask=cos_mask, other=0)
    first_q = tl.arange(0, pad_n_qh)[:, None] * hd + tl.arange(0, pad_hd // 2)[None, :]
    first_k = tl.arange(0, pad_n_kh)[:, None] * hd + tl.arange(0, pad_hd // 2)[None, :]
    q_mask = (tl.arange(0, pad_n_qh)[:, None] < n_qh) & (tl.arange(0, pad_hd // 2)[None, :] < hd // 2)
    k_mask = (tl.arange(0, pad_n_kh)[:, None] < n_kh) & (tl.arange(0, pad_hd // 2)[None, :] < hd // 2)
    q1 = tl.load(q_ptr + first_q, mask=q_mask, other=0).to(sin_row.dtype)
    q2 = tl.load(q_ptr + first_q + hd // 2, mask=q_mask, other=0).to(sin_row.dtype)
    k1 = tl.load(k_ptr + first_k, mask=k_mask, other=0).to(sin_row.dtype)
    k2 = tl.load(k_ptr + first_k + hd // 2, mask=k_mask, other=0).to(sin_row.dtype)
    tl.store(q_ptr + first_q, q1 * cos_row - q2 * sin_row, mask=q_mask)
    tl.store(q_ptr + first_q + hd // 2, q2 * cos_row + q1 * sin_row, mask=q_mask)
    tl.store(k_ptr + first_k, k1 * cos_row - k2 * sin_row, mask=k_mask)
    tl.store(k_ptr + first_k + hd // 2, k2 * cos_row + k1 * sin_row, mask=k_mask)


# skel: match rope-sincos-in-kernel
@triton.jit
def rope_cos_sin_cache_positions(positions_ptr, query_ptr, key_ptr, cos_sin_cache_ptr, num_tokens, num_heads,
                                 num_kv_heads, stride_qt, stride_kt, rot_dim: tl.constexpr, head_size: tl.constexpr,
                                 BLOCK_T: tl.constexpr):
    # vLLM's layout: one cache, cos in the first half of a row and sin in the second, by position
    HALF: tl.constexpr = rot_dim // 2
    t = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    d = tl.arange(0, HALF)
    mt = t[:, None] < num_tokens
    pos = tl.load(positions_ptr + t, mask=t < num_tokens, other=0)
    row = cos_sin_cache_ptr + pos[:, None] * rot_dim + d[None, :]
    c = tl.load(row, mask=mt, other=0.0).to(tl.float32)
    s = tl.load(row + HALF, mask=mt, other=0.0).to(tl.float32)
    for h in range(num_heads):
        p = query_ptr + t[:, None] * stride_qt + h * head_size + d[None, :]
        x1 = tl.load(p, mask=mt, other=0.0).to(tl.float32)
        x2 = tl.load(p + HALF, mask=mt, other=0.0).to(tl.float32)
        tl.store(p, (x1 * c - x2 * s).to(query_ptr.dtype.element_ty), mask=mt)
        tl.store(p + HALF, (x2 * c + x1 * s).to(query_ptr.dtype.element_ty), mask=mt)
    for h in range(num_kv_heads):
        p = key_ptr + t[:, None] * stride_kt + h * head_size + d[None, :]
        x1 = tl.load(p, mask=mt, other=0.0).to(tl.float32)
        x2 = tl.load(p + HALF, mask=mt, other=0.0).to(tl.float32)
        tl.store(p, (x1 * c - x2 * s).to(key_ptr.dtype.element_ty), mask=mt)
        tl.store(p + HALF, (x2 * c + x1 * s).to(key_ptr.dtype.element_ty), mask=mt)


# skel: ok rope-sincos-in-kernel
# skel: uses rope-sincos-in-kernel
@triton.jit
def rope_computed_from_inv_freq(Q, PositionIds, InvFreq, OutQ, stride_sq, stride_hq, max_seq_len,
                                BLOCK: tl.constexpr, BLOCK_HQ: tl.constexpr, BLOCK_F: tl.constexpr):
    # the technique: cos/sin of position x inv_freq in registers, shared by every head
    s_off = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)[:, None]
    f_off = tl.arange(0, BLOCK_F)[None, :]
    s_mask = s_off < max_seq_len
    inv_freq = tl.load(InvFreq + f_off).to(tl.float32)
    position_ids = tl.load(PositionIds + s_off, mask=s_mask).to(tl.float32)
    pos_freq = position_ids * inv_freq
    cos = tl.cos(pos_freq)
    sin = tl.sin(pos_freq)
    for h in range(BLOCK_HQ):
        q0 = tl.load(Q + s_off * stride_sq + h * stride_hq + f_off, mask=s_mask)
        q1 = tl.load(Q + s_off * stride_sq + h * stride_hq + f_off + BLOCK_F, mask=s_mask)
        tl.store(OutQ + s_off * stride_sq + h * stride_hq + f_off, q0 * cos - q1 * sin, mask=s_mask)
        tl.store(OutQ + s_off * stride_sq + h * stride_hq + f_off + BLOCK_F, q1 * cos + q0 * sin, mask=s_mask)


# skel: ok rope-sincos-in-kernel
@triton.jit
def rope_from_loaded_angles(x_ptr, freqs_ptr, out_ptr, stride_t, T, D: tl.constexpr, BLOCK_T: tl.constexpr):
    # the angles (pos x inv_freq) come from memory, cos/sin are computed here: no table to drop
    HALF: tl.constexpr = D // 2
    t = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    d = tl.arange(0, HALF)
    m = t[:, None] < T
    ang = tl.load(freqs_ptr + t[:, None] * HALF + d[None, :], mask=m, other=0.0)
    c = tl.cos(ang)
    s = tl.sin(ang)
    x1 = tl.load(x_ptr + t[:, None] * stride_t + d[None, :], mask=m, other=0.0)
    x2 = tl.load(x_ptr + t[:, None] * stride_t + HALF + d[None, :], mask=m, other=0.0)
    tl.store(out_ptr + t[:, None] * stride_t + d[None, :], x1 * c - x2 * s, mask=m)
    tl.store(out_ptr + t[:, None] * stride_t + HALF + d[None, :], x2 * c + x1 * s, mask=m)


# skel: ok rope-sincos-in-kernel
@triton.jit
def cosine_similarity_rows(a_ptr, b_ptr, cos_sim_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    # a cosine similarity: a `cos`-named output, no sine table, no rotation
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    a = tl.load(a_ptr + row * stride + cols, mask=m, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + row * stride + cols, mask=m, other=0.0).to(tl.float32)
    dot = tl.sum(a * b, 0)
    norm = tl.sqrt(tl.sum(a * a, 0)) * tl.sqrt(tl.sum(b * b, 0))
    tl.store(cos_sim_ptr + row, dot / tl.maximum(norm, eps))


# skel: ok rope-sincos-in-kernel
@triton.jit
def gather_cos_sin_rows(positions_ptr, cos_cache, sin_cache, cos_out, sin_out, n_tokens, HALF: tl.constexpr,
                        BLOCK_T: tl.constexpr):
    # the table rows copied out per token (for a later kernel): nothing rotated here
    t = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    d = tl.arange(0, HALF)
    m = t[:, None] < n_tokens
    pos = tl.load(positions_ptr + t, mask=t < n_tokens, other=0)
    c = tl.load(cos_cache + pos[:, None] * HALF + d[None, :], mask=m, other=0.0)
    s = tl.load(sin_cache + pos[:, None] * HALF + d[None, :], mask=m, other=0.0)
    tl.store(cos_out + t[:, None] * HALF + d[None, :], c, mask=m)
    tl.store(sin_out + t[:, None] * HALF + d[None, :], s, mask=m)


# skel: ok rope-sincos-in-kernel
@triton.jit
def build_cos_sin_table(inv_freq_ptr, cos_ptr, sin_ptr, max_pos, HALF: tl.constexpr, BLOCK_P: tl.constexpr):
    # the table builder: computes cos/sin and stores them, rotates nothing
    p = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)
    d = tl.arange(0, HALF)
    m = p[:, None] < max_pos
    ang = p.to(tl.float32)[:, None] * tl.load(inv_freq_ptr + d)[None, :]
    tl.store(cos_ptr + p[:, None] * HALF + d[None, :], tl.cos(ang), mask=m)
    tl.store(sin_ptr + p[:, None] * HALF + d[None, :], tl.sin(ang), mask=m)
