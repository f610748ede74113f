"""tile-skipping: causal attention that visits every key block and masks → only the blocks up to the
diagonal, unmasked below it and masked on it (the Triton tutorial's STAGE split).

Harness format: docs/harness.md. The before/after launchers are the template shown.
"""

import math

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(BH=3, T=100, D=16),          # T not a multiple of BLOCK_M or BLOCK_N
    "prefill4k": dict(BH=32, T=4096, D=64),
    "long16k": dict(BH=8, T=16384, D=128),
    "short": dict(BH=8192, T=128, D=64),      # does not apply: one query tile, every block is diagonal
    "huge": dict(BH=16640, T=1024, D=128),    # past 2**31 elements: head * T * D must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
FIXED = ("D",)
DTYPES = ("float16",)                         # the interpreter's bf16 tl.dot is wrong; fp16 runs on both
TOLERANCES = {"float16": (2e-3, 2e-2)}
BLOCK_M, BLOCK_N = 128, 64


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    q, k, v = (torch.randn(shape["BH"], shape["T"], shape["D"], generator=g).to(dtype).to(device) for _ in range(3))
    return q, k, v


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["BH"], shape["T"], shape["D"], dtype=dtype, device=device),)


def reference(q, k, v):
    out = torch.empty_like(q)
    heads = max(1, 2**26 // (q.shape[1] * q.shape[1]))  # bound the score matrices' memory
    for h in range(0, q.shape[0], heads):
        out[h:h + heads] = torch.nn.functional.scaled_dot_product_attention(
            q[h:h + heads], k[h:h + heads], v[h:h + heads], is_causal=True, scale=1 / math.sqrt(q.shape[-1]))
    return (out,)


def bytes_moved(shape, dtype):
    return 4 * shape["BH"] * shape["T"] * shape["D"] * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 2 * shape["BH"] * shape["T"] * shape["T"] * shape["D"]  # the causal half of 4 * T * T * D


def _launch(kernel, q, k, v, o):
    BH, T, D = q.shape
    grid = (triton.cdiv(T, BLOCK_M), BH)
    kernel[grid](q, k, v, o, T, 1 / math.sqrt(D), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, D=D,
                 num_warps=8 if D >= 128 else 4, num_stages=3)


@triton.jit
def before_attn_inner(acc, l_i, m_i, q, k_ptr, v_ptr, offs_m, lo, hi, T, qk_scale,
                      BLOCK_N: tl.constexpr, D: tl.constexpr):
    offs_d = tl.arange(0, D)
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + offs_n[None, :] * D + offs_d[:, None], mask=offs_n[None, :] < T, other=0.0)
        v = tl.load(v_ptr + offs_n[:, None] * D + offs_d[None, :], mask=offs_n[:, None] < T, other=0.0)
        s = tl.dot(q, k) * qk_scale
        s = tl.where(offs_m[:, None] >= offs_n[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def before_attn_fwd(q_ptr, k_ptr, v_ptr, o_ptr, T, sm_scale,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, D: tl.constexpr):
    start_m = tl.program_id(0)
    base = tl.program_id(1).to(tl.int64) * T * D
    q_ptr += base
    k_ptr += base
    v_ptr += base
    o_ptr += base
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, D)
    q = tl.load(q_ptr + offs_m[:, None] * D + offs_d[None, :], mask=offs_m[:, None] < T, other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    qk_scale = sm_scale * 1.4426950408889634  # exp(x) = exp2(x * log2(e))
    # every key block; the causal mask empties the ones past the diagonal
    acc, l_i, m_i = before_attn_inner(acc, l_i, m_i, q, k_ptr, v_ptr, offs_m, 0, T, T, qk_scale, BLOCK_N, D)
    o = acc / l_i[:, None]
    tl.store(o_ptr + offs_m[:, None] * D + offs_d[None, :], o.to(o_ptr.dtype.element_ty), mask=offs_m[:, None] < T)


def before(q, k, v, o):
    _launch(before_attn_fwd, q, k, v, o)


@triton.jit
def after_attn_inner(acc, l_i, m_i, q, k_ptr, v_ptr, offs_m, lo, hi, T, qk_scale,
                     BLOCK_N: tl.constexpr, D: tl.constexpr, STAGE: tl.constexpr):
    offs_d = tl.arange(0, D)
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + offs_n[None, :] * D + offs_d[:, None], mask=offs_n[None, :] < T, other=0.0)
        v = tl.load(v_ptr + offs_n[:, None] * D + offs_d[None, :], mask=offs_n[:, None] < T, other=0.0)
        s = tl.dot(q, k) * qk_scale
        if STAGE == 2:  # the diagonal blocks only
            s = tl.where(offs_m[:, None] >= offs_n[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def after_attn_fwd(q_ptr, k_ptr, v_ptr, o_ptr, T, sm_scale,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, D: tl.constexpr):
    start_m = tl.program_id(0)
    base = tl.program_id(1).to(tl.int64) * T * D
    q_ptr += base
    k_ptr += base
    v_ptr += base
    o_ptr += base
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, D)
    q = tl.load(q_ptr + offs_m[:, None] * D + offs_d[None, :], mask=offs_m[:, None] < T, other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    qk_scale = sm_scale * 1.4426950408889634  # exp(x) = exp2(x * log2(e))
    # blocks strictly below the diagonal need no mask (BLOCK_M is a multiple of BLOCK_N) ...
    acc, l_i, m_i = after_attn_inner(acc, l_i, m_i, q, k_ptr, v_ptr, offs_m, 0, start_m * BLOCK_M, T, qk_scale,
                                     BLOCK_N, D, 1)
    # ... the diagonal blocks are masked, and the blocks past them are never visited
    acc, l_i, m_i = after_attn_inner(acc, l_i, m_i, q, k_ptr, v_ptr, offs_m, start_m * BLOCK_M,
                                     tl.minimum((start_m + 1) * BLOCK_M, T), T, qk_scale, BLOCK_N, D, 2)
    o = acc / l_i[:, None]
    tl.store(o_ptr + offs_m[:, None] * D + offs_d[None, :], o.to(o_ptr.dtype.element_ty), mask=offs_m[:, None] < T)


def after(q, k, v, o):
    _launch(after_attn_fwd, q, k, v, o)
