# Fixtures for row-in-registers: a row read twice by one program (a stored intermediate
# loaded back, a second load of the row, two column passes over a row that fits one block)
# against one load whose registers make the statistics and the output. Written for these
# tests after the shapes of the references (Triton's layer-norm tutorial, the row kernels
# of Liger/FLA/FlagGems); none is copied.
import triton
import triton.language as tl


# skel: match row-in-registers
@triton.jit
def layernorm_centred_roundtrip(x_ptr, w_ptr, b_ptr, y_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    # the centred row goes out to y and comes back for the variance and the output
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    tl.store(y_ptr + row * stride + cols, tl.where(mask, x - mean, 0.0), mask=mask)
    xc = tl.load(y_ptr + row * stride + cols, mask=mask, other=0.0)
    rstd = tl.rsqrt(tl.sum(xc * xc, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(y_ptr + row * stride + cols, xc * rstd * w + b, mask=mask)


# skel: match row-in-registers
@triton.jit
def softmax_exp_scratch(x_ptr, tmp_ptr, out_ptr, stride, N, BLOCK_N: tl.constexpr):
    # exponentials parked in a scratch buffer, then read back to normalise
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK_N)
    m = offs < N
    x = tl.load(x_ptr + pid * stride + offs, mask=m, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tmp_ptrs = tmp_ptr + pid * N + offs
    tl.store(tmp_ptrs, e, mask=m)
    denom = tl.sum(e, axis=0)
    e2 = tl.load(tmp_ptrs, mask=m, other=0.0)
    tl.store(out_ptr + pid * stride + offs, e2 / denom, mask=m)


# skel: match row-in-registers
@triton.jit
def rmsnorm_second_load(X, W, Y, Rstd, stride_x, stride_y, D, eps, BD: tl.constexpr):
    # the row is loaded for the statistic, then loaded again after a store of rstd (a
    # write between: the compiler cannot make the two loads one)
    i_t = tl.program_id(0)
    o_d = tl.arange(0, BD)
    m_d = o_d < D
    p_x = X + i_t * stride_x + o_d
    b_x = tl.load(p_x, mask=m_d, other=0.0).to(tl.float32)
    b_rstd = tl.rsqrt(tl.sum(b_x * b_x, axis=0) / D + eps)
    tl.store(Rstd + i_t, b_rstd)
    b_x = tl.load(p_x, mask=m_d, other=0.0).to(tl.float32)
    b_w = tl.load(W + o_d, mask=m_d, other=0.0)
    tl.store(Y + i_t * stride_y + o_d, b_x * b_rstd * b_w, mask=m_d)


# skel: match row-in-registers
@triton.jit
def layernorm_three_passes(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    # three column loops over the same range, each re-reading X (the launcher sets
    # BLOCK_SIZE = next_power_of_2(N), so each runs once)
    row = tl.program_id(0)
    X += row * stride
    Y += row * stride
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        a = tl.where(cols < N, a - mean, 0.0)
        _var += a * a
    rstd = 1 / tl.sqrt(tl.sum(_var, axis=0) / N + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(Y + cols, (x - mean) * rstd * w + b, mask=mask)


def layernorm_three_passes_launch(x, y, w, b, mean, rstd, eps):
    M, N = x.shape
    BLOCK_SIZE = triton.next_power_of_2(N)
    layernorm_three_passes[(M,)](x, y, w, b, mean, rstd, x.stride(0), N, eps, BLOCK_SIZE=BLOCK_SIZE)


# skel: match row-in-registers
@triton.jit
def swiglu_gate_scratch(a_ptr, b_ptr, c_ptr, stride, n_cols, BLOCK_SIZE: tl.constexpr):
    # the gate silu(a) written to c, read back and overwritten with silu(a) * b
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n_cols
    a = tl.load(a_ptr + row * stride + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(c_ptr + row * stride + offs, a * tl.sigmoid(a), mask=mask)
    b = tl.load(b_ptr + row * stride + offs, mask=mask, other=0.0)
    g = tl.load(c_ptr + row * stride + offs, mask=mask, other=0.0)
    tl.store(c_ptr + row * stride + offs, g * b, mask=mask)


# skel: match row-in-registers
@triton.jit
def rope_qk_table_loaded_twice(Q, K, Cos, Sin, stride_q, stride_k, stride_cs, n_tok, HALF: tl.constexpr,
                               BLOCK_T: tl.constexpr):
    # the cos/sin tile is loaded for q, q is written back in place, then the same tile is
    # loaded again for k: the store between keeps the compiler from reusing the first load
    pid = tl.program_id(0)
    t = pid * BLOCK_T + tl.arange(0, BLOCK_T)
    d = tl.arange(0, HALF)
    m = t[:, None] < n_tok
    cs = t[:, None] * stride_cs + d[None, :]
    c = tl.load(Cos + cs, mask=m, other=0.0)
    s = tl.load(Sin + cs, mask=m, other=0.0)
    q0 = tl.load(Q + t[:, None] * stride_q + d[None, :], mask=m, other=0.0)
    q1 = tl.load(Q + t[:, None] * stride_q + HALF + d[None, :], mask=m, other=0.0)
    tl.store(Q + t[:, None] * stride_q + d[None, :], q0 * c - q1 * s, mask=m)
    tl.store(Q + t[:, None] * stride_q + HALF + d[None, :], q0 * s + q1 * c, mask=m)
    c = tl.load(Cos + cs, mask=m, other=0.0)
    s = tl.load(Sin + cs, mask=m, other=0.0)
    k0 = tl.load(K + t[:, None] * stride_k + d[None, :], mask=m, other=0.0)
    k1 = tl.load(K + t[:, None] * stride_k + HALF + d[None, :], mask=m, other=0.0)
    tl.store(K + t[:, None] * stride_k + d[None, :], k0 * c - k1 * s, mask=m)
    tl.store(K + t[:, None] * stride_k + HALF + d[None, :], k0 * s + k1 * c, mask=m)


# skel: ok row-in-registers
# skel: uses row-in-registers
@triton.jit
def layernorm_one_load(x_ptr, w_ptr, b_ptr, y_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    # the technique: one load, the statistics and the output from the same registers
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    xc = tl.where(mask, x - tl.sum(x, axis=0) / n_cols, 0.0)
    rstd = tl.rsqrt(tl.sum(xc * xc, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(y_ptr + row * stride + cols, xc * rstd * w + b, mask=mask)


# skel: ok row-in-registers
@triton.jit
def rmsnorm_reload_merged_by_compiler(X, W, Y, stride, D, eps, BD: tl.constexpr):
    # the same row loaded twice with no write between: Triton already emits one load
    i_t = tl.program_id(0)
    o_d = tl.arange(0, BD)
    m_d = o_d < D
    b_x = tl.load(X + i_t * stride + o_d, mask=m_d, other=0.0).to(tl.float32)
    b_rstd = tl.rsqrt(tl.sum(b_x * b_x, axis=0) / D + eps)
    b_x = tl.load(X + i_t * stride + o_d, mask=m_d, other=0.0).to(tl.float32)
    b_w = tl.load(W + o_d, mask=m_d, other=0.0)
    tl.store(Y + i_t * stride + o_d, b_x * b_rstd * b_w, mask=m_d)


# skel: ok row-in-registers
@triton.jit
def rmsnorm_bwd_reads_two_tensors(X, DY, W, DX, stride, D, eps, BD: tl.constexpr):
    # the second load reads another tensor (dy after x): nothing is read twice
    i_t = tl.program_id(0)
    o_d = tl.arange(0, BD)
    m_d = o_d < D
    b_x = tl.load(X + i_t * stride + o_d, mask=m_d, other=0.0).to(tl.float32)
    b_rstd = tl.rsqrt(tl.sum(b_x * b_x, axis=0) / D + eps)
    b_dy = tl.load(DY + i_t * stride + o_d, mask=m_d, other=0.0).to(tl.float32)
    b_w = tl.load(W + o_d, mask=m_d, other=0.0)
    b_g = b_dy * b_w
    b_dx = b_rstd * (b_g - b_x * b_rstd * b_rstd * tl.sum(b_g * b_x, axis=0) / D)
    tl.store(DX + i_t * stride + o_d, b_dx, mask=m_d)


# skel: ok row-in-registers
@triton.jit
def logsumexp_wide_row_loops(logits_ptr, lse_ptr, stride, V, BLOCK_V: tl.constexpr):
    # a vocabulary-wide row streamed in column blocks: each loop re-reads it, but the row
    # cannot fit one block (BLOCK_V is capped far below V): the column loops are the design
    row = tl.program_id(0).to(tl.int64)
    m = -float("inf")
    for start in range(0, V, BLOCK_V):
        offs = start + tl.arange(0, BLOCK_V)
        x = tl.load(logits_ptr + row * stride + offs, mask=offs < V, other=-float("inf"))
        m = tl.maximum(m, tl.max(x, axis=0))
    s = 0.0
    for start in range(0, V, BLOCK_V):
        offs = start + tl.arange(0, BLOCK_V)
        x = tl.load(logits_ptr + row * stride + offs, mask=offs < V, other=-float("inf"))
        s += tl.sum(tl.exp(x - m), axis=0)
    tl.store(lse_ptr + row, m + tl.log(s))


# skel: ok row-in-registers
@triton.jit
def softmax_probs_output_reloaded(x_ptr, p_ptr, loss_ptr, t_ptr, stride, N, BLOCK_N: tl.constexpr):
    # the stored probabilities are an output the caller needs: the store stays, so the
    # skeleton's rewrite (drop the round trip) does not apply; only the reload could go
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK_N)
    m = offs < N
    x = tl.load(x_ptr + pid * stride + offs, mask=m, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(p_ptr + pid * stride + offs, e / tl.sum(e, axis=0), mask=m)
    p = tl.load(p_ptr + pid * stride + offs, mask=m, other=0.0)
    t = tl.load(t_ptr + pid * stride + offs, mask=m, other=0.0)
    tl.store(loss_ptr + pid, -tl.sum(t * tl.log(p + 1e-12), axis=0))


# skel: ok row-in-registers
@triton.jit
def add_rmsnorm_inplace_two_passes(X, R, W, Y, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    # the residual sum is written back into X (an output the caller keeps) and read back
    # by the second pass: the store stays, so this is not the round trip to remove
    row = tl.program_id(0)
    X += row * stride
    R += row * stride
    Y += row * stride
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        x += tl.load(R + cols, mask=cols < N, other=0.0).to(tl.float32)
        tl.store(X + cols, x.to(X.dtype.element_ty), mask=cols < N)
        acc += x * x
    rstd = 1 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        w = tl.load(W + cols, mask=cols < N)
        tl.store(Y + cols, x * rstd * w, mask=cols < N)


def add_rmsnorm_inplace_two_passes_launch(x, r, w, y, eps):
    M, N = x.shape
    add_rmsnorm_inplace_two_passes[(M,)](x, r, w, y, x.stride(0), N, eps, BLOCK_SIZE=triton.next_power_of_2(N))


# skel: ok row-in-registers
@triton.jit
def layernorm_loops_capped_block(X, Y, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    # two passes with a block capped below the row (no `raise` for wider rows): the row
    # may not fit one block, and the column loops are the design
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + row * stride + cols, mask=cols < N, other=0.0).to(tl.float32)
        acc += x * x
    rstd = 1 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + row * stride + cols, mask=cols < N, other=0.0).to(tl.float32)
        tl.store(Y + row * stride + cols, x * rstd, mask=cols < N)


def layernorm_loops_capped_block_launch(x, y, eps):
    M, N = x.shape
    BLOCK_SIZE = min(4096, triton.next_power_of_2(N))
    layernorm_loops_capped_block[(M,)](x, y, x.stride(0), N, eps, BLOCK_SIZE=BLOCK_SIZE)


# skel: ok row-in-registers
@triton.jit
def row_sum_then_atomic_reload(x_ptr, workspace, y_ptr, stride, N, BLOCK: tl.constexpr):
    # the reload reads what other programs added (an atomic between): communication
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(x_ptr + pid * stride + offs, mask=m, other=0.0)
    tl.store(workspace + pid * N + offs, x, mask=m)
    tl.atomic_add(workspace + pid * N + offs, x, mask=m)
    total = tl.load(workspace + pid * N + offs, mask=m, other=0.0)
    tl.store(y_ptr + pid * stride + offs, total, mask=m)


# skel: ok row-in-registers
@triton.jit
def chunk_state_dot_reload(q, k, h, o, T, K: tl.constexpr, BT: tl.constexpr):
    # a matmul kernel reading the same tile twice is not a row kernel (a `tl.dot`)
    i_t = tl.program_id(0)
    p_q = tl.make_block_ptr(q, (T, K), (K, 1), (i_t * BT, 0), (BT, K), (1, 0))
    p_h = tl.make_block_ptr(h, (K, K), (K, 1), (0, 0), (K, K), (1, 0))
    b_q = tl.load(p_q, boundary_check=(0, 1))
    b_o = tl.dot(b_q, tl.load(p_h, boundary_check=(0, 1)))
    b_q = tl.load(p_q, boundary_check=(0, 1))
    p_o = tl.make_block_ptr(o, (T, K), (K, 1), (i_t * BT, 0), (BT, K), (1, 0))
    tl.store(p_o, b_o + b_q, boundary_check=(0, 1))


# skel: ok row-in-registers
@triton.jit
def row_blocks_advanced(x_ptr, y_ptr, stride, N, BLOCK: tl.constexpr):
    # the same pointer name, but stepped between the two loads: another part of the row
    row = tl.program_id(0)
    p = x_ptr + row * stride + tl.arange(0, BLOCK)
    a = tl.load(p)
    p += BLOCK
    b = tl.load(p)
    tl.store(y_ptr + row * BLOCK + tl.arange(0, BLOCK), a + b)
