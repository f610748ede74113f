# Fixtures for constexpr-model-dimension: a model dimension (head dim, a norm's width, a
# quantization group, a MoE's experts per token) passed as a runtime int and bounding a loop
# or a mask in a loop must match; per-call lengths, dimensions already constexpr or kept
# runtime on purpose, matmul K loops, group norms and straight-line masks must not.
# Written after the shapes of xformers' RMSNorm, unsloth's norms, sglang's MoE reorder and
# per-token-group quant kernels and flash-linear-attention's state kernels (not copied).
import triton
import triton.language as tl


# skel: match constexpr-model-dimension
@triton.jit
def layer_norm_two_pass_kernel(x_ptr, w_ptr, b_ptr, out_ptr, stride_row, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    # a norm's width passed at run time: both column loops have a runtime trip count
    r = tl.program_id(0)
    x_ptr += r * stride_row
    out_ptr += r * stride_row
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, n_cols, BLOCK_SIZE):
        c = off + tl.arange(0, BLOCK_SIZE)
        acc += tl.load(x_ptr + c, mask=c < n_cols, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols
    acc2 = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, n_cols, BLOCK_SIZE):
        c = off + tl.arange(0, BLOCK_SIZE)
        d = tl.where(c < n_cols, tl.load(x_ptr + c, mask=c < n_cols, other=0.0).to(tl.float32) - mean, 0.0)
        acc2 += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc2, axis=0) / n_cols + eps)
    for off in range(0, n_cols, BLOCK_SIZE):
        c = off + tl.arange(0, BLOCK_SIZE)
        m = c < n_cols
        xv = tl.load(x_ptr + c, mask=m, other=0.0).to(tl.float32)
        wv = tl.load(w_ptr + c, mask=m, other=1.0).to(tl.float32)
        bv = tl.load(b_ptr + c, mask=m, other=0.0).to(tl.float32)
        tl.store(out_ptr + c, (xv - mean) * rstd * wv + bv, mask=m)


# skel: match constexpr-model-dimension
@triton.jit
def moe_unpermute_sum_kernel(down_ptr, out_ptr, src2dst_ptr, topk_ids_ptr, topk_weights_ptr, topk, hidden_size,
                             BLOCK_SIZE: tl.constexpr):
    # the experts per token and the hidden size, both fixed by the model, bound the loops
    tok = tl.program_id(0)
    for start in range(0, hidden_size, BLOCK_SIZE):
        offs = start + tl.arange(0, BLOCK_SIZE)
        in_row = offs < hidden_size
        total = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for j in range(topk):
            expert = tl.load(topk_ids_ptr + tok * topk + j)
            if expert >= 0:
                dst = tl.load(src2dst_ptr + tok * topk + j)
                wgt = tl.load(topk_weights_ptr + tok * topk + j)
                total += wgt * tl.load(down_ptr + dst * hidden_size + offs, mask=in_row, other=0.0).to(tl.float32)
        tl.store(out_ptr + tok * hidden_size + offs, total, mask=in_row)


# skel: match constexpr-model-dimension
@triton.jit
def token_group_quant_rows_kernel(x_ptr, q_ptr, s_ptr, group_size, row_stride, eps, fp8_max,
                                  NUM_GROUPS: tl.constexpr, BLOCK: tl.constexpr):
    # one program per token, a loop over its groups; the group size bounds every mask
    row = tl.program_id(0)
    lanes = tl.arange(0, BLOCK)
    in_group = lanes < group_size
    for g in range(NUM_GROUPS):
        base = row * row_stride + g * group_size
        v = tl.load(x_ptr + base + lanes, mask=in_group, other=0.0).to(tl.float32)
        amax = tl.maximum(tl.max(tl.abs(v), axis=0), eps)
        scale = amax / fp8_max
        tl.store(q_ptr + base + lanes, (v / scale).to(q_ptr.dtype.element_ty), mask=in_group)
        tl.store(s_ptr + row * NUM_GROUPS + g, scale)


# skel: match constexpr-model-dimension
@triton.jit
def decode_rope_cache_kernel(q_ptr, k_ptr, cos_ptr, sin_ptr, pos_ptr, n_heads, head_dim, stride_tok, stride_head,
                             BLOCK_D: tl.constexpr):
    # per token, a loop over its heads; the head dim (a model constant) bounds the masks
    tok = tl.program_id(0)
    pos = tl.load(pos_ptr + tok)
    half = head_dim // 2
    o = tl.arange(0, BLOCK_D)
    m = o < half
    c = tl.load(cos_ptr + pos * half + o, mask=m, other=1.0)
    s = tl.load(sin_ptr + pos * half + o, mask=m, other=0.0)
    for h in range(n_heads):
        base = tok * stride_tok + h * stride_head
        x1 = tl.load(q_ptr + base + o, mask=m, other=0.0)
        x2 = tl.load(q_ptr + base + half + o, mask=m, other=0.0)
        tl.store(q_ptr + base + o, x1 * c - x2 * s, mask=m)
        tl.store(q_ptr + base + half + o, x2 * c + x1 * s, mask=m)


# skel: match constexpr-model-dimension
@triton.jit
def conv_state_shift_kernel(state_ptr, x_ptr, dim, state_len, stride_state_b, stride_x_b, BLOCK_D: tl.constexpr):
    # the channel dim of a short-convolution state, walked in blocks
    b = tl.program_id(0)
    for d0 in range(0, dim, BLOCK_D):
        od = d0 + tl.arange(0, BLOCK_D)
        md = od < dim
        for i in range(state_len - 1):
            nxt = tl.load(state_ptr + b * stride_state_b + (i + 1) * dim + od, mask=md, other=0.0)
            tl.store(state_ptr + b * stride_state_b + i * dim + od, nxt, mask=md)
        tl.store(state_ptr + b * stride_state_b + (state_len - 1) * dim + od,
                 tl.load(x_ptr + b * stride_x_b + od, mask=md, other=0.0), mask=md)


# skel: ok constexpr-model-dimension
# skel: uses constexpr-model-dimension
@triton.jit
def rms_norm_constexpr_width_kernel(x_ptr, w_ptr, y_ptr, stride, eps, N_COLS: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    # already done: the width is constexpr, the loops have static trip counts
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N_COLS, BLOCK_SIZE):
        c = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(x_ptr + row * stride + c, mask=c < N_COLS, other=0.0).to(tl.float32)
        acc += a * a
    inv = tl.rsqrt(tl.sum(acc, axis=0) / N_COLS + eps)
    for off in range(0, N_COLS, BLOCK_SIZE):
        c = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(x_ptr + row * stride + c, mask=c < N_COLS, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + c, mask=c < N_COLS, other=0.0)
        tl.store(y_ptr + row * stride + c, a * inv * w, mask=c < N_COLS)


# skel: ok constexpr-model-dimension
@triton.jit
def masked_softmax_seq_kernel(s_ptr, out_ptr, seq_len, stride_row, BLOCK: tl.constexpr):
    # the row is an attention row: its length changes with every request (a per-call length)
    row = tl.program_id(0)
    m = float("-inf")
    for start in range(0, seq_len, BLOCK):
        o = start + tl.arange(0, BLOCK)
        m = tl.maximum(m, tl.max(tl.load(s_ptr + row * stride_row + o, mask=o < seq_len, other=float("-inf")), 0))
    z = 0.0
    for start in range(0, seq_len, BLOCK):
        o = start + tl.arange(0, BLOCK)
        z += tl.sum(tl.exp(tl.load(s_ptr + row * stride_row + o, mask=o < seq_len, other=float("-inf")) - m), 0)
    for start in range(0, seq_len, BLOCK):
        o = start + tl.arange(0, BLOCK)
        v = tl.load(s_ptr + row * stride_row + o, mask=o < seq_len, other=float("-inf"))
        tl.store(out_ptr + row * stride_row + o, tl.exp(v - m) / z, mask=o < seq_len)


# skel: ok constexpr-model-dimension
@triton.jit
def logits_ce_loss_kernel(logits_ptr, target_ptr, loss_ptr, stride, n_cols, BLOCK_V: tl.constexpr):
    # `n_cols` outside a norm: here a vocabulary (tens of thousands of columns), not a small width
    row = tl.program_id(0)
    y = tl.load(target_ptr + row)
    m = float("-inf")
    d = 0.0
    for i in range(0, n_cols, BLOCK_V):
        o = i + tl.arange(0, BLOCK_V)
        x = tl.load(logits_ptr + row * stride + o, mask=o < n_cols, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, 0))
        d = d * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), 0)
        m = m_new
    xy = tl.load(logits_ptr + row * stride + y).to(tl.float32)
    tl.store(loss_ptr + row, tl.log(d) + m - xy)


# skel: ok constexpr-model-dimension
@triton.jit(do_not_specialize=["hidden_size"])
def scatter_rows_kept_runtime_kernel(src_ptr, dst_ptr, idx_ptr, hidden_size, BLOCK: tl.constexpr):
    # the authors keep the width runtime on purpose (one binary for every model of a service)
    tok = tl.program_id(0)
    dst = tl.load(idx_ptr + tok)
    for start in range(0, hidden_size, BLOCK):
        o = start + tl.arange(0, BLOCK)
        v = tl.load(src_ptr + tok * hidden_size + o, mask=o < hidden_size)
        tl.store(dst_ptr + dst * hidden_size + o, v, mask=o < hidden_size)


# skel: ok constexpr-model-dimension
@triton.jit
def rms_norm_one_block_kernel(X, Y, W, x_stride, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    # a runtime width, but only in a straight-line mask of a row that fits one block: no loop
    # to unroll, and Triton vectorises a mask whose bound is a multiple of 16 already
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(X + row * x_stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(W + cols, mask=mask, other=0.0)
    inv = tl.math.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(Y + row * x_stride + cols, x * inv * w, mask=mask)


# skel: ok constexpr-model-dimension
@triton.jit
def proj_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, hidden_size, stride_am, stride_bk, stride_cm,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # the hidden size is the K of a matmul: its masked ragged tile is an EVEN_K flag's business
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in range(0, hidden_size, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < hidden_size), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * stride_bk + rn[None, :],
                    mask=((k + rk)[:, None] < hidden_size) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


# skel: ok constexpr-model-dimension
@triton.jit
def sample_top_k_kernel(probs_ptr, sorted_ids_ptr, out_ptr, top_k, stride, BLOCK: tl.constexpr):
    # `top_k` of sampling is a per-request setting, not a MoE's experts per token
    row = tl.program_id(0)
    best = 0.0
    for j in range(top_k):
        tid = tl.load(sorted_ids_ptr + row * stride + j)
        best = tl.maximum(best, tl.load(probs_ptr + row * stride + tid))
    tl.store(out_ptr + row, best)


# skel: ok constexpr-model-dimension
@triton.jit
def group_norm_stats_kernel(x_ptr, mean_ptr, rstd_ptr, channels, spatial_size, group_size, eps,
                            BLOCK_SIZE: tl.constexpr):
    # a group norm's "group" is channels x pixels: it changes with the image size
    g = tl.program_id(0)
    n = tl.program_id(1)
    base = n * channels * spatial_size + g * group_size
    s1 = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    s2 = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, group_size, BLOCK_SIZE):
        o = off + tl.arange(0, BLOCK_SIZE)
        v = tl.load(x_ptr + base + o, mask=o < group_size, other=0.0).to(tl.float32)
        s1 += v
        s2 += v * v
    mean = tl.sum(s1, axis=0) / group_size
    tl.store(mean_ptr + n * 32 + g, mean)
    tl.store(rstd_ptr + n * 32 + g, tl.rsqrt(tl.sum(s2, axis=0) / group_size - mean * mean + eps))


# skel: ok constexpr-model-dimension
@triton.jit
def chunk_state_kernel(k_ptr, v_ptr, h_ptr, T, D, BT: tl.constexpr, BD: tl.constexpr):
    # D is only a stride here; the loop and its masks are bounded by the sequence length T
    i_bh = tl.program_id(0)
    o_d = tl.arange(0, BD)
    h = tl.zeros([BD], dtype=tl.float32)
    for i_t in range(0, T, BT):
        o_t = i_t + tl.arange(0, BT)
        b_k = tl.load(k_ptr + i_bh * T * D + o_t[:, None] * D + o_d[None, :], mask=o_t[:, None] < T, other=0.0)
        b_v = tl.load(v_ptr + i_bh * T + o_t, mask=o_t < T, other=0.0)
        h += tl.sum(b_k * b_v[:, None], axis=0)
    tl.store(h_ptr + i_bh * D + o_d, h)
