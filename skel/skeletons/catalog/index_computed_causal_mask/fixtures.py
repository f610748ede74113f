# Fixtures for index-computed-causal-mask: attention key loops that load a (query, key) mask
# tile their own launcher builds from positions (`tril`, `triu`, a band), against the same
# loops fed a caller's, tree or random mask, a key-padding vector, a kernel that already
# compares the indices and one launched elsewhere. Written for these tests after the shapes of
# lightllm's context attention, xformers' fused softmax and the FlashAttention tutorial; none
# is copied.
import functools

import torch
import triton
import triton.language as tl


@triton.jit
def _masked_step(q, K, V, mask_ptrs, start_n, offs_n, offs_d, L, m_i, l_i, acc, scale):
    # one key step: K/V tiles and the mask tile, the scores selected by the mask
    cols = start_n + offs_n
    k = tl.load(K + cols[None, :] * L + offs_d[:, None], mask=cols[None, :] < L, other=0.0)
    qk = tl.dot(q, k) * scale
    keep = tl.load(mask_ptrs + start_n, mask=cols[None, :] < L, other=0)
    qk = tl.where(keep != 0, qk, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(qk, 1))
    p = tl.exp(qk - m_new[:, None])
    alpha = tl.exp(m_i - m_new)
    v = tl.load(V + cols[:, None] * L + offs_d[None, :], mask=cols[:, None] < L, other=0.0)
    return m_new, l_i * alpha + tl.sum(p, 1), acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)


# skel: match index-computed-causal-mask
# a mask built from positions is not for packing but for computing: bitpacked-attention-mask steps aside
# skel: ok bitpacked-attention-mask
@triton.jit
def context_attn_bool_mask(Q, K, V, Mask, O, b_start_loc, b_seq_len, stride_qbs, stride_qh, stride_mm, sm_scale,
                           BLOCK_M: tl.constexpr, BLOCK_DMODEL: tl.constexpr, BLOCK_N: tl.constexpr):
    # a bool mask tile selects the scores each key step; the launcher builds it with torch.tril
    cur_batch = tl.program_id(0)
    cur_head = tl.program_id(1)
    start_m = tl.program_id(2)
    seq_len = tl.load(b_seq_len + cur_batch)
    start = tl.load(b_start_loc + cur_batch)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_DMODEL)
    q = tl.load(Q + (start + offs_m[:, None]) * stride_qbs + cur_head * stride_qh + offs_d[None, :],
                mask=offs_m[:, None] < seq_len, other=0.0)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_DMODEL], dtype=tl.float32)
    mask_ptrs = Mask + offs_m[:, None] * stride_mm + offs_n[None, :]
    for start_n in range(0, seq_len, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = tl.load(K + (start + start_n + offs_n[None, :]) * stride_qbs + cur_head * stride_qh + offs_d[:, None],
                    mask=(start_n + offs_n[None, :]) < seq_len, other=0.0)
        qk = tl.dot(q, k) * sm_scale
        keep = tl.load(mask_ptrs + start_n, mask=(offs_m[:, None] < seq_len) & ((start_n + offs_n[None, :]) < seq_len),
                       other=0)
        qk = tl.where(keep, qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_ij[:, None])
        alpha = tl.exp(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + (start + start_n + offs_n[:, None]) * stride_qbs + cur_head * stride_qh + offs_d[None, :],
                    mask=(start_n + offs_n[:, None]) < seq_len, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_ij
    tl.store(O + (start + offs_m[:, None]) * stride_qbs + cur_head * stride_qh + offs_d[None, :],
             acc / l_i[:, None], mask=offs_m[:, None] < seq_len)


def context_attention_fwd(q, k, v, o, b_start_loc, b_seq_len, max_input_len):
    BLOCK = 64
    batch, head = b_seq_len.shape[0], q.shape[1]
    mask = torch.tril(torch.ones(max_input_len, max_input_len, dtype=torch.bool, device=q.device))
    grid = (batch, head, triton.cdiv(max_input_len, BLOCK))
    context_attn_bool_mask[grid](q, k, v, mask, o, b_start_loc, b_seq_len, q.stride(0), q.stride(1),
                                 mask.stride(0), q.shape[-1] ** -0.5, BLOCK_M=BLOCK, BLOCK_DMODEL=q.shape[-1],
                                 BLOCK_N=BLOCK, num_warps=4, num_stages=1)


# skel: match index-computed-causal-mask
@triton.jit
def attn_fwd_additive_triu(Q, K, V, Bias, O, L, scale, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                           BLOCK_N: tl.constexpr):
    # an fp32 tile of 0 / -inf added to the scores; the launcher writes torch.triu at the launch
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + bh * L * HEAD_DIM + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
    m_i = tl.full([BLOCK_M], -1e30, dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    for start_n in range(0, L, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(K + bh * L * HEAD_DIM + cols[None, :] * HEAD_DIM + offs_d[:, None])
        qk = tl.dot(q, k) * scale
        qk += tl.load(Bias + offs_m[:, None] * L + cols[None, :])
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + bh * L * HEAD_DIM + cols[:, None] * HEAD_DIM + offs_d[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    tl.store(O + bh * L * HEAD_DIM + offs_m[:, None] * HEAD_DIM + offs_d[None, :], acc / l_i[:, None])


def causal_attention(q, k, v):
    BH, L, D = q.shape
    o = torch.empty_like(q)
    grid = (triton.cdiv(L, 128), BH)
    attn_fwd_additive_triu[grid](q, k, v, torch.triu(torch.full((L, L), float("-inf"), device=q.device), diagonal=1),
                                 o, L, D ** -0.5, HEAD_DIM=D, BLOCK_M=128, BLOCK_N=64, num_warps=8)
    return o


# skel: match index-computed-causal-mask
@triton.jit
def swa_attn_fwd_band(Q, K, V, Mask, O, L, scale, D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # a sliding-window band read through a helper's key step; the band comes from a cached builder
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + bh * L * D + offs_m[:, None] * D + offs_d[None, :])
    m_i = tl.full([BLOCK_M], -1e30, dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    mask_ptrs = Mask + offs_m[:, None] * L + offs_n[None, :]
    for start_n in range(0, L, BLOCK_N):
        m_i, l_i, acc = _masked_step(q, K + bh * L * D, V + bh * L * D, mask_ptrs, start_n, offs_n, offs_d, L,
                                     m_i, l_i, acc, scale)
    tl.store(O + bh * L * D + offs_m[:, None] * D + offs_d[None, :], acc / l_i[:, None])


@functools.lru_cache(maxsize=8)
def _band(L, window, device):
    return torch.ones(L, L, dtype=torch.bool, device=device).tril().triu(-window + 1)


def sliding_window_attention(q, k, v, window):
    BH, L, D = q.shape
    band = _band(L, window, q.device)
    o = torch.empty_like(q)
    swa_attn_fwd_band[(triton.cdiv(L, 64), BH)](q, k, v, band, o, L, D ** -0.5, D=D, BLOCK_M=64, BLOCK_N=64)
    return o


# skel: ok index-computed-causal-mask
@triton.jit
def attn_fwd_caller_mask(Q, K, V, Mask, O, L, scale, D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # the same loop, fed the mask the caller passes (a document or tree mask): nothing to compute
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
        keep = tl.load(Mask + bh * L * L + offs_m[:, None] * L + cols[None, :])
        qk = tl.where(keep != 0, qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + bh * L * D + cols[:, None] * D + offs_d[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    tl.store(O + bh * L * D + offs_m[:, None] * D + offs_d[None, :], acc / l_i[:, None])


def masked_attention(q, k, v, mask):
    BH, L, D = q.shape
    o = torch.empty_like(q)
    attn_fwd_caller_mask[(triton.cdiv(L, 64), BH)](q, k, v, mask, o, L, D ** -0.5, D=D, BLOCK_M=64, BLOCK_N=64)
    return o


# skel: ok index-computed-causal-mask
@triton.jit
def tree_attn_fwd(Q, K, V, Mask, O, L, scale, D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # a speculative-decoding tree mask intersected with a triangle: the tree is not in the indices
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + bh * L * D + offs_m[:, None] * D + offs_d[None, :])
    m_i = tl.full([BLOCK_M], -1e30, dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    mask_ptrs = Mask + offs_m[:, None] * L + offs_n[None, :]
    for start_n in range(0, L, BLOCK_N):
        m_i, l_i, acc = _masked_step(q, K + bh * L * D, V + bh * L * D, mask_ptrs, start_n, offs_n, offs_d, L,
                                     m_i, l_i, acc, scale)
    tl.store(O + bh * L * D + offs_m[:, None] * D + offs_d[None, :], acc / l_i[:, None])


def tree_attention(q, k, v, tree_mask):
    BH, L, D = q.shape
    mask = tree_mask & torch.tril(torch.ones(L, L, dtype=torch.bool, device=q.device))
    o = torch.empty_like(q)
    tree_attn_fwd[(triton.cdiv(L, 64), BH)](q, k, v, mask, o, L, D ** -0.5, D=D, BLOCK_M=64, BLOCK_N=64)
    return o


# skel: ok index-computed-causal-mask
@triton.jit
def attn_fwd_random_mask_test(Q, K, V, Mask, O, L, scale, D: tl.constexpr, BLOCK_M: tl.constexpr,
                              BLOCK_N: tl.constexpr):
    # a test's launcher: a random mask with the diagonal kept (tril only ensures a key a row)
    pid_m = tl.program_id(0)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + offs_m[:, None] * D + offs_d[None, :])
    m_i = tl.full([BLOCK_M], -1e30, dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    mask_ptrs = Mask + offs_m[:, None] * L + offs_n[None, :]
    for start_n in range(0, L, BLOCK_N):
        m_i, l_i, acc = _masked_step(q, K, V, mask_ptrs, start_n, offs_n, offs_d, L, m_i, l_i, acc, scale)
    tl.store(O + offs_m[:, None] * D + offs_d[None, :], acc / l_i[:, None])


def test_random_mask(L=256, D=64):
    q, k, v = (torch.randn(L, D, device="cuda", dtype=torch.float16) for _ in range(3))
    keep = torch.rand(L, L, device="cuda") < 0.5
    keep = keep | torch.eye(L, dtype=torch.bool, device="cuda")
    keep = keep.tril()
    o = torch.empty_like(q)
    attn_fwd_random_mask_test[(triton.cdiv(L, 64),)](q, k, v, keep, o, L, D ** -0.5, D=D, BLOCK_M=64, BLOCK_N=64)
    return o


# skel: ok index-computed-causal-mask
@triton.jit
def attn_fwd_key_padding(Q, K, V, KeyValid, O, L, scale, D: tl.constexpr, BLOCK_M: tl.constexpr,
                         BLOCK_N: tl.constexpr):
    # one flag a key built from arange at the launch: a [None, :] vector, BLOCK_N bytes a step
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
        valid = tl.load(KeyValid + cols)
        qk = tl.where(valid[None, :] != 0, qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + bh * L * D + cols[:, None] * D + offs_d[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    tl.store(O + bh * L * D + offs_m[:, None] * D + offs_d[None, :], acc / l_i[:, None])


def padded_attention(q, k, v, n_valid):
    BH, L, D = q.shape
    o = torch.empty_like(q)
    attn_fwd_key_padding[(triton.cdiv(L, 64), BH)](q, k, v, torch.arange(L, device=q.device) < n_valid, o, L,
                                                   D ** -0.5, D=D, BLOCK_M=64, BLOCK_N=64)
    return o


# skel: ok index-computed-causal-mask
# skel: uses index-computed-causal-mask
@triton.jit
def attn_fwd_causal_window(Q, K, V, O, L, window, scale, D: tl.constexpr, BLOCK_M: tl.constexpr,
                           BLOCK_N: tl.constexpr):
    # the technique: the causal band compared from the indices, the window a scalar
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
        keep = (offs_m[:, None] >= cols[None, :]) & (offs_m[:, None] - cols[None, :] < window)
        qk = tl.where(keep, qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + bh * L * D + cols[:, None] * D + offs_d[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    tl.store(O + bh * L * D + offs_m[:, None] * D + offs_d[None, :], acc / l_i[:, None])


def windowed_attention(q, k, v, window):
    BH, L, D = q.shape
    o = torch.empty_like(q)
    attn_fwd_causal_window[(triton.cdiv(L, 64), BH)](q, k, v, o, L, window, D ** -0.5, D=D, BLOCK_M=64, BLOCK_N=64)
    return o


# skel: ok index-computed-causal-mask
@triton.jit
def library_attn_fwd_mask(Q, K, V, Mask, O, L, scale, D: tl.constexpr, BLOCK_M: tl.constexpr,
                          BLOCK_N: tl.constexpr):
    # never launched in this file: where its mask comes from is out of sight
    pid_m = tl.program_id(0)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + offs_m[:, None] * D + offs_d[None, :])
    m_i = tl.full([BLOCK_M], -1e30, dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    mask_ptrs = Mask + offs_m[:, None] * L + offs_n[None, :]
    for start_n in range(0, L, BLOCK_N):
        m_i, l_i, acc = _masked_step(q, K, V, mask_ptrs, start_n, offs_n, offs_d, L, m_i, l_i, acc, scale)
    tl.store(O + offs_m[:, None] * D + offs_d[None, :], acc / l_i[:, None])
