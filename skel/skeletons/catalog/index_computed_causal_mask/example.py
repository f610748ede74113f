"""index-computed-causal-mask: an fp32 `triu(-inf)` mask tile added every key step → the row and column indices compared.

Harness format: docs/harness.md. The before/after launchers are the template shown.
Causal attention forward over `[BH, L, D]`. The before launcher passes the additive mask a
model builds once and every layer reuses (`torch.triu(torch.full((L, L), -inf), 1)`, fp32,
one `[L, L]` tensor broadcast over the heads; cached here as it would be across layers, so
building it is not timed); the kernel loads a `[BLOCK_M, BLOCK_N]` fp32 tile of it each key
step and adds it to the scores. The after kernel has no mask argument and selects the scores
with `offs_m[:, None] >= cols[None, :]`. Both loop over every key block (skipping the blocks
above the diagonal is `tile-skipping`, left out so the timing shows the mask alone). At
`BLOCK_M = 128, BLOCK_N = 64, D = 128` the fp32 mask tile is 32 KB a step beside 32 KB of K/V;
its rows differ for every query tile and are read again for every head (64 MB a head at 4K).
"""

import functools

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(BH=2, L=72, D=16),             # L not a multiple of the blocks
    "l2k_h64_d128": dict(BH=64, L=2048, D=128),  # a 16 MB mask: mostly L2-resident on an H100
    "l4k_h32_d128": dict(BH=32, L=4096, D=128),  # a 64 MB mask read for each of 32 heads
    "l8k_h16_d64": dict(BH=16, L=8192, D=64),    # a 256 MB mask
}
CPU_SHAPES = ("tiny",)
FIXED = ("D",)
DTYPES = ("float16",)  # the interpreter's bf16 tl.dot is wrong; fp16 runs on both
TOLERANCES = {"float16": (2e-3, 2e-3)}


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device="cpu").manual_seed(seed)
    bh, L, D = shape["BH"], shape["L"], shape["D"]
    q = torch.randn(bh, L, D, generator=g).to(dtype).to(device)
    k = torch.randn(bh, L, D, generator=g).to(dtype).to(device)
    v = torch.randn(bh, L, D, generator=g).to(dtype).to(device)
    return q, k, v, D ** -0.5


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["BH"], shape["L"], shape["D"], dtype=dtype, device=device),)


def reference(q, k, v, scale):
    L = q.shape[1]
    s = torch.einsum("bmd,bnd->bmn", q.float(), k.float()) * scale
    s = s.masked_fill(~torch.ones(L, L, dtype=torch.bool, device=q.device).tril(), float("-inf"))
    return (torch.einsum("bmn,bnd->bmd", torch.softmax(s, dim=-1), v.float()),)


def bytes_moved(shape, dtype):
    # the least traffic: q, k, v read and o written once, no mask
    return 4 * shape["BH"] * shape["L"] * shape["D"] * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 4 * shape["BH"] * shape["L"] * shape["L"] * shape["D"]


@functools.lru_cache(maxsize=4)
def before_causal_mask(L, device):
    # built once and reused by every layer, as a model's forward does
    return torch.triu(torch.full((L, L), float("-inf"), device=device), diagonal=1)


@triton.jit
def before_kernel(Q, K, V, Mask, O, L, scale, D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    m_rows = offs_m < L
    q = tl.load(Q + bh * L * D + offs_m[:, None] * D + offs_d[None, :], mask=m_rows[:, None], other=0.0)
    m_i = tl.full([BLOCK_M], -1e30, dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    for start_n in range(0, L, BLOCK_N):
        cols = start_n + offs_n
        m_cols = cols < L
        k = tl.load(K + bh * L * D + cols[None, :] * D + offs_d[:, None], mask=m_cols[None, :], other=0.0)
        qk = tl.dot(q, k) * scale
        # an fp32 (query, key) tile of 0 / -inf, the same for every head
        qk += tl.load(Mask + offs_m[:, None] * L + cols[None, :], mask=m_rows[:, None] & m_cols[None, :],
                      other=float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + bh * L * D + cols[:, None] * D + offs_d[None, :], mask=m_cols[:, None], other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(O + bh * L * D + offs_m[:, None] * D + offs_d[None, :], acc.to(O.dtype.element_ty), mask=m_rows[:, None])


def before(q, k, v, scale, o):
    BH, L, D = q.shape
    mask = before_causal_mask(L, q.device)
    BLOCK_M, BLOCK_N = 128, 64
    grid = (triton.cdiv(L, BLOCK_M), BH)
    before_kernel[grid](q, k, v, mask, o, L, scale, D=D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, num_warps=8, num_stages=2)


@triton.jit
def after_kernel(Q, K, V, O, L, scale, D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    m_rows = offs_m < L
    q = tl.load(Q + bh * L * D + offs_m[:, None] * D + offs_d[None, :], mask=m_rows[:, None], other=0.0)
    m_i = tl.full([BLOCK_M], -1e30, dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    for start_n in range(0, L, BLOCK_N):
        cols = start_n + offs_n
        m_cols = cols < L
        k = tl.load(K + bh * L * D + cols[None, :] * D + offs_d[:, None], mask=m_cols[None, :], other=0.0)
        qk = tl.dot(q, k) * scale
        # the same mask from the indices: one integer compare a score, no bytes
        qk = tl.where((offs_m[:, None] >= cols[None, :]) & m_cols[None, :], qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + bh * L * D + cols[:, None] * D + offs_d[None, :], mask=m_cols[:, None], other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(O + bh * L * D + offs_m[:, None] * D + offs_d[None, :], acc.to(O.dtype.element_ty), mask=m_rows[:, None])


def after(q, k, v, scale, o):
    BH, L, D = q.shape
    BLOCK_M, BLOCK_N = 128, 64
    grid = (triton.cdiv(L, BLOCK_M), BH)
    after_kernel[grid](q, k, v, o, L, scale, D=D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, num_warps=8, num_stages=2)
