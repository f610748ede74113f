# Fixtures for merged-sibling-launch: one kernel launched twice back to back on sibling
# tensors (q then k, gate then up) against a launch already covering both, a producer and
# its consumer, an in-place chain, launches in exclusive branches and a single launch.
# Written for these tests after the shapes of the references (lmdeploy's and lightllm's
# rotary launchers, sglang/vLLM per-token quant launchers, FLA's keyword launches); none is
# copied.
import torch
import triton
import triton.language as tl
from rope_lib import rope_equal_heads  # the equal-heads launcher, elsewhere (fixture only)


# skel: match merged-sibling-launch
@triton.jit
def apply_rotary_kernel(X, COS, SIN, OUT, seq_len, stride_xs, stride_xh, BLOCK: tl.constexpr,
                        BLOCK_N: tl.constexpr):
    # one tensor's heads on axis 1; the launcher runs it for q, then for k
    seq_block_id = tl.program_id(0)
    head_id = tl.program_id(1)
    pos = seq_block_id * BLOCK + tl.arange(0, BLOCK)
    m = pos[:, None] < seq_len
    feat = tl.arange(0, BLOCK_N)
    c = tl.load(COS + pos[:, None] * BLOCK_N + feat[None, :], mask=m, other=0.0)
    s = tl.load(SIN + pos[:, None] * BLOCK_N + feat[None, :], mask=m, other=0.0)
    p = X + pos[:, None] * stride_xs + head_id * stride_xh + feat[None, :]
    o = OUT + pos[:, None] * stride_xs + head_id * stride_xh + feat[None, :]
    x_l = tl.load(p, mask=m, other=0.0)
    x_h = tl.load(p + BLOCK_N, mask=m, other=0.0)
    tl.store(o, x_l * c - x_h * s, mask=m)
    tl.store(o + BLOCK_N, x_l * s + x_h * c, mask=m)


def apply_rotary(q, k, cos, sin, q_embed, k_embed):
    seq_len = q.size(0)
    BLOCK = 32
    if q.size(1) == k.size(1):
        return rope_equal_heads(q, k, cos, sin, q_embed, k_embed)  # the equal-heads path: another launcher
    else:
        grid_q = [triton.cdiv(seq_len, BLOCK), q.size(1)]
        grid_k = [triton.cdiv(seq_len, BLOCK), k.size(1)]
        apply_rotary_kernel[grid_q](q, cos, sin, q_embed, seq_len, stride_xs=q.stride(0), stride_xh=q.stride(1),
                                    BLOCK=BLOCK, BLOCK_N=q.size(-1) // 2, num_warps=4)
        apply_rotary_kernel[grid_k](k, cos, sin, k_embed, seq_len, stride_xs=k.stride(0), stride_xh=k.stride(1),
                                    BLOCK=BLOCK, BLOCK_N=k.size(-1) // 2, num_warps=4)
    return q_embed, k_embed


# skel: match merged-sibling-launch
@triton.jit
def _per_token_quant_int8(x_ptr, xq_ptr, scale_ptr, stride_x, stride_xq, N, BLOCK: tl.constexpr):
    # a per-token quantiser run on the gate projection, then on the up projection
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    scale = tl.maximum(tl.max(tl.abs(x), axis=0), 1e-10) / 127.0
    tl.store(xq_ptr + row * stride_xq + cols, (x / scale).to(tl.int8), mask=mask)
    tl.store(scale_ptr + row, scale)


def quant_gate_up(gate, up):
    M, N = gate.shape
    gate_q = torch.empty_like(gate, dtype=torch.int8)
    up_q = torch.empty_like(up, dtype=torch.int8)
    gate_s = torch.empty(M, device=gate.device)
    up_s = torch.empty(M, device=up.device)
    BLOCK = triton.next_power_of_2(N)
    _per_token_quant_int8[(M,)](gate, gate_q, gate_s, gate.stride(0), gate_q.stride(0), N, BLOCK=BLOCK)
    _per_token_quant_int8[(M,)](up, up_q, up_s, up.stride(0), up_q.stride(0), N, BLOCK=BLOCK)
    return gate_q, gate_s, up_q, up_s


# skel: match merged-sibling-launch
@triton.jit
def l2norm_fwd_kernel(x, y, T, D: tl.constexpr, BT: tl.constexpr):
    # keyword launches, once for q and once for k
    i_t = tl.program_id(0)
    o_t = i_t * BT + tl.arange(0, BT)
    o_d = tl.arange(0, D)
    m = o_t[:, None] < T
    b_x = tl.load(x + o_t[:, None] * D + o_d[None, :], mask=m, other=0.0).to(tl.float32)
    b_y = b_x * tl.rsqrt(tl.sum(b_x * b_x, 1) + 1e-6)[:, None]
    tl.store(y + o_t[:, None] * D + o_d[None, :], b_y.to(y.dtype.element_ty), mask=m)


def l2norm_qk(q, k):
    T, D = q.shape
    q_out, k_out = torch.empty_like(q), torch.empty_like(k)
    grid = (triton.cdiv(T, 16),)
    l2norm_fwd_kernel[grid](x=q, y=q_out, T=T, D=D, BT=16)
    l2norm_fwd_kernel[grid](x=k, y=k_out, T=T, D=D, BT=16)
    return q_out, k_out


# skel: ok merged-sibling-launch
# skel: uses merged-sibling-launch
@triton.jit
def apply_rotary_qk_kernel(Q, K, COS, SIN, Q_EMB, K_EMB, seq_len, stride_qs, stride_qh, stride_ks, stride_kh,
                           BLOCK: tl.constexpr, BLOCK_QH: tl.constexpr, BLOCK_N: tl.constexpr):
    # the technique: one grid over q's heads then k's, the head id picks the tensor
    seq_block_id = tl.program_id(0)
    head_id = tl.program_id(1)
    pos = seq_block_id * BLOCK + tl.arange(0, BLOCK)
    m = pos[:, None] < seq_len
    feat = tl.arange(0, BLOCK_N)
    c = tl.load(COS + pos[:, None] * BLOCK_N + feat[None, :], mask=m, other=0.0)
    s = tl.load(SIN + pos[:, None] * BLOCK_N + feat[None, :], mask=m, other=0.0)
    if head_id < BLOCK_QH:
        p = Q + pos[:, None] * stride_qs + head_id * stride_qh + feat[None, :]
        o = Q_EMB + pos[:, None] * stride_qs + head_id * stride_qh + feat[None, :]
    else:
        p = K + pos[:, None] * stride_ks + (head_id - BLOCK_QH) * stride_kh + feat[None, :]
        o = K_EMB + pos[:, None] * stride_ks + (head_id - BLOCK_QH) * stride_kh + feat[None, :]
    x_l = tl.load(p, mask=m, other=0.0)
    x_h = tl.load(p + BLOCK_N, mask=m, other=0.0)
    tl.store(o, x_l * c - x_h * s, mask=m)
    tl.store(o + BLOCK_N, x_l * s + x_h * c, mask=m)


def apply_rotary_qk(q, k, cos, sin, q_embed, k_embed):
    seq_len = q.size(0)
    grid = [triton.cdiv(seq_len, 32), q.size(1) + k.size(1)]
    apply_rotary_qk_kernel[grid](q, k, cos, sin, q_embed, k_embed, seq_len, q.stride(0), q.stride(1), k.stride(0),
                                 k.stride(1), BLOCK=32, BLOCK_QH=q.size(1), BLOCK_N=q.size(-1) // 2)


# skel: ok merged-sibling-launch
@triton.jit
def _partial_sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # the second launch reads the first's partial sums: a producer and its consumer
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + pid, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0))


def two_stage_sum(x):
    n = x.numel()
    nb = triton.cdiv(n, 1024)
    partial = torch.empty(nb, device=x.device, dtype=torch.float32)
    out = torch.empty(1, device=x.device, dtype=torch.float32)
    _partial_sum_kernel[(nb,)](x, partial, n, BLOCK=1024)
    _partial_sum_kernel[(1,)](partial, out, nb, BLOCK=triton.next_power_of_2(nb))
    return out


# skel: ok merged-sibling-launch
@triton.jit
def _scale_rows_inplace(x_ptr, s_ptr, stride, N, BLOCK: tl.constexpr):
    # applied twice to the same tensor with two scale vectors: an in-place chain, not siblings
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0)
    tl.store(x_ptr + row * stride + cols, x * tl.load(s_ptr + cols, mask=m, other=0.0), mask=m)


def double_scale(x, s1, s2):
    M, N = x.shape
    _scale_rows_inplace[(M,)](x, s1, x.stride(0), N, BLOCK=triton.next_power_of_2(N))
    _scale_rows_inplace[(M,)](x, s2, x.stride(0), N, BLOCK=triton.next_power_of_2(N))


# skel: ok merged-sibling-launch
@triton.jit
def _cast_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # two launches in exclusive branches: only one runs per call
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def cast_one(q, k, q_out, k_out, use_q):
    if use_q:
        _cast_kernel[(triton.cdiv(q.numel(), 1024),)](q, q_out, q.numel(), BLOCK=1024)
    else:
        _cast_kernel[(triton.cdiv(k.numel(), 1024),)](k, k_out, k.numel(), BLOCK=1024)


# skel: ok merged-sibling-launch
@triton.jit
def _rms_norm_rows(x_ptr, w_ptr, y_ptr, stride, N, eps, BLOCK: tl.constexpr):
    # launched once per call: nothing to merge
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(y_ptr + row * stride + cols, x * rstd * tl.load(w_ptr + cols, mask=m, other=0.0), mask=m)


def rms_norm(x, w, eps):
    y = torch.empty_like(x)
    _rms_norm_rows[(x.shape[0],)](x, w, y, x.stride(0), x.shape[1], eps, BLOCK=triton.next_power_of_2(x.shape[1]))
    return y


# skel: ok merged-sibling-launch
@triton.jit
def _count_then_fill(idx_ptr, counts_ptr, offsets_ptr, out_ptr, n, BLOCK: tl.constexpr, COUNT_ONLY: tl.constexpr):
    # the same tensors twice, a flag apart, with the host's prefix sum between: a count pass
    # then a fill pass, each needing the other's result
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    idx = tl.load(idx_ptr + offs, mask=m, other=0)
    if COUNT_ONLY:
        tl.atomic_add(counts_ptr + idx, 1, mask=m)
    else:
        base = tl.load(offsets_ptr + idx, mask=m, other=0)
        tl.store(out_ptr + base, offs, mask=m)


def build_csr(idx, counts, offsets, out):
    n = idx.numel()
    grid = (triton.cdiv(n, 256),)
    _count_then_fill[grid](idx, counts, offsets, out, n, BLOCK=256, COUNT_ONLY=True)
    offsets[1:] = counts.cumsum(0)
    _count_then_fill[grid](idx, counts, offsets, out, n, BLOCK=256, COUNT_ONLY=False)
