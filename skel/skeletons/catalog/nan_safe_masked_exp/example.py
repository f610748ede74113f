"""nan-safe-masked-exp: intra-chunk gated scores masked by `* (o_i >= j)` → masked with `tl.where`.

Harness format: docs/harness.md. The before/after launchers are the template shown.
The intra-chunk scores of gated linear attention (GLA, RWKV-6/7, the sub-chunk kernels of
flash-linear-attention): q, k `[BH, T, K]` and a per-channel log-decay g `[BH, T, K]`
(fp32), cumulative inside each chunk of BT = 64 tokens, so it falls along the chunk. Per
chunk, A[i, j] = sum_k q[i, k] k[j, k] exp(g[i, k] - g[j, k]) for j <= i, else 0; A is
`[BH, T, BT]`. One program per (chunk, head) builds A one column j at a time.

A correctness fix at no cost: both sides compute the same exponentials and differ only in
how they zero the non-causal half (the timed shapes measure that the select is free). There
g[i] - g[j] > 0 and grows with the chunk's total decay; with strong gates ("strong", a
per-step log-decay near -16, the gate normaliser flash-linear-attention's stress tests use)
it passes 88 and fp32 exp gives inf. The before multiplies by the float mask: 0 * inf = NaN
in every score above the diagonal, so A is NaN there (and in any `tl.dot` it would feed).
The after selects with `tl.where`: the inf is discarded and A is right.
"""

import torch
import triton
import triton.language as tl

BT = 64
SHAPES = {
    "tiny": dict(BH=2, T=80, K=16, NORM=1.0),          # T not a multiple of the chunk
    "gla": dict(BH=32, T=4096, K=128, NORM=1.0),       # 32 heads x 4K tokens, mild gates
    "long": dict(BH=16, T=16384, K=128, NORM=1.0),
    "strong": dict(BH=8, T=4096, K=128, NORM=0.05),    # strong gates: exp(g_i - g_j) overflows
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("strong",)
FIXES = ("strong",)             # where the before is wrong (NaN above the diagonal): the evidence
FIXED = ("K",)
DTYPES = ("bfloat16",)
TOLERANCES = {"bfloat16": (1e-3, 1e-3)}  # q, k are exact bf16 values; the arithmetic is fp32


def make_inputs(shape, dtype, seed, device):
    gen = torch.Generator(device="cpu").manual_seed(seed)
    BH, T, K = shape["BH"], shape["T"], shape["K"]
    q = (torch.randn(BH, T, K, generator=gen) * K ** -0.5).to(dtype)
    k = torch.randn(BH, T, K, generator=gen).to(dtype)
    # per-step log-decays logsigmoid(x) / NORM, summed inside each chunk
    step = torch.nn.functional.logsigmoid(torch.randn(BH, T, K, generator=gen)) / shape["NORM"]
    g = torch.empty_like(step)
    for s in range(0, T, BT):
        g[:, s:s + BT] = step[:, s:s + BT].cumsum(1)
    return q.to(device), k.to(device), g.to(device)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["BH"], shape["T"], BT, dtype=torch.float32, device=device),)


def reference(q, k, g):
    BH, T, K = q.shape
    a = torch.zeros(BH, T, BT, dtype=q.dtype, device=q.device)
    for s in range(0, T, BT):
        n = min(BT, T - s)
        qs, ks, gs = q[:, s:s + n], k[:, s:s + n], g[:, s:s + n]
        d = gs[:, :, None, :] - gs[:, None, :, :]                       # [BH, i, j, K]
        causal = torch.ones(n, n, dtype=torch.bool, device=q.device).tril()
        d = d.masked_fill(~causal[None, :, :, None], float("-inf"))     # exp(-inf) = 0 above the diagonal
        a[:, s:s + n, :n] = (qs[:, :, None, :] * ks[:, None, :, :] * d.exp()).sum(-1)
    return (a,)


def bytes_moved(shape, dtype):
    e = torch.tensor([], dtype=dtype).element_size()
    BH, T, K = shape["BH"], shape["T"], shape["K"]
    return BH * T * K * (2 * e + 4) + BH * T * BT * 4


def flops(shape, dtype):
    return 4 * shape["BH"] * shape["T"] * BT * shape["K"]


@triton.jit
def before_kernel(q, k, g, A, T, K: tl.constexpr, BT: tl.constexpr):
    i_t, i_bh = tl.program_id(0), tl.program_id(1)
    o_i = tl.arange(0, BT)
    o_k = tl.arange(0, K)
    rows = i_t * BT + o_i
    m_t = rows < T
    p = i_bh * T * K + rows[:, None] * K + o_k[None, :]
    b_q = tl.load(q + p, mask=m_t[:, None], other=0.).to(tl.float32)
    b_g = tl.load(g + p, mask=m_t[:, None], other=0.)
    for j in range(0, BT):
        m_j = i_t * BT + j < T
        b_kj = tl.load(k + i_bh * T * K + (i_t * BT + j) * K + o_k, mask=m_j, other=0.).to(tl.float32)
        b_gj = tl.load(g + i_bh * T * K + (i_t * BT + j) * K + o_k, mask=m_j, other=0.)
        m_s = (o_i >= j).to(tl.float32)
        b_A = tl.sum(b_q * b_kj[None, :] * tl.exp(b_g - b_gj[None, :]), 1) * m_s  # 0 * inf = NaN above the diagonal
        tl.store(A + (i_bh * T + rows) * BT + j, b_A, mask=m_t)


def before(q, k, g, A):
    BH, T, K = q.shape
    before_kernel[(triton.cdiv(T, BT), BH)](q, k, g, A, T, K=K, BT=BT, num_warps=4)


@triton.jit
def after_kernel(q, k, g, A, T, K: tl.constexpr, BT: tl.constexpr):
    i_t, i_bh = tl.program_id(0), tl.program_id(1)
    o_i = tl.arange(0, BT)
    o_k = tl.arange(0, K)
    rows = i_t * BT + o_i
    m_t = rows < T
    p = i_bh * T * K + rows[:, None] * K + o_k[None, :]
    b_q = tl.load(q + p, mask=m_t[:, None], other=0.).to(tl.float32)
    b_g = tl.load(g + p, mask=m_t[:, None], other=0.)
    for j in range(0, BT):
        m_j = i_t * BT + j < T
        b_kj = tl.load(k + i_bh * T * K + (i_t * BT + j) * K + o_k, mask=m_j, other=0.).to(tl.float32)
        b_gj = tl.load(g + i_bh * T * K + (i_t * BT + j) * K + o_k, mask=m_j, other=0.)
        b_A = tl.sum(b_q * b_kj[None, :] * tl.exp(b_g - b_gj[None, :]), 1)
        b_A = tl.where(o_i >= j, b_A, 0.)  # selects: the inf above the diagonal is discarded
        tl.store(A + (i_bh * T + rows) * BT + j, b_A, mask=m_t)


def after(q, k, g, A):
    BH, T, K = q.shape
    after_kernel[(triton.cdiv(T, BT), BH)](q, k, g, A, T, K=K, BT=BT, num_warps=4)
