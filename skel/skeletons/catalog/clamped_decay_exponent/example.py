"""clamped-decay-exponent: intra-chunk `dv` with `exp(g_i - g_j)` → with `exp(tl.minimum(g_i - g_j, 0))`.

Harness format: docs/harness.md. The before/after launchers are the template shown.
The intra-chunk part of a gated linear attention's value gradient (simple GLA, Gated
DeltaNet, Mamba-2's `dx`): q, k, do `[BH, T, 128]` (fp16) and a scalar log-decay per token
g `[BH, T]` (fp32), cumulative inside each chunk of BT = 64 tokens. Per chunk,
dv[j] = sum_{i >= j} (q_i . k_j) exp(g_i - g_j) do_i. One program per (chunk, head):
A = k q^T * exp(g_i - g_j), a causal `tl.where`, then dv = A do with `tl.dot`.

A correctness fix for one `min` per score (the timed shapes, whole chunks and mild gates,
measure what it costs). The rows of the last chunk past T load q = 0, do = 0 and g = 0: for a
valid j, exponent 0 - g_j is the chunk's decay so far. With strong gates ("strong": a
per-step log-decay near -16, the gate normaliser flash-linear-attention's stress tests use,
and T = 4136, a last chunk of 40 tokens) it passes 88: exp gives inf, the score is 0 * inf = NaN,
the causal mask keeps it (i > j), and the `tl.dot` turns it into NaN in every valid dv row of
that chunk. The after clamps the exponent to <= 0: the padded scores are 0 * 1 = 0.
"""

import torch
import triton
import triton.language as tl

BT = 64
SHAPES = {
    "tiny": dict(BH=2, T=80, K=16, NORM=1.0),           # a partial last chunk, mild gates
    "gla": dict(BH=32, T=8192, K=128, NORM=1.0),        # 32 heads x 8K tokens
    "long": dict(BH=16, T=32768, K=128, NORM=1.0),
    "strong": dict(BH=8, T=4136, K=128, NORM=0.05),     # strong gates, a last chunk of 40 tokens: padded lanes overflow
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("strong",)
FIXES = ("strong",)             # where the before is wrong (NaN in the last chunk's dv): the evidence
FIXED = ("K",)
DTYPES = ("float16",)  # bf16 tl.dot is wrong in the CPU interpreter (Triton 3.7)
TOLERANCES = {"float16": (1e-2, 1e-2)}  # A is rounded to fp16 for the second tl.dot


def make_inputs(shape, dtype, seed, device):
    gen = torch.Generator(device="cpu").manual_seed(seed)
    BH, T, K = shape["BH"], shape["T"], shape["K"]
    q = (torch.randn(BH, T, K, generator=gen) * K ** -0.5).to(dtype)
    k = torch.randn(BH, T, K, generator=gen).to(dtype)
    do = torch.randn(BH, T, K, generator=gen).to(dtype)
    # per-step log-decays logsigmoid(x) / NORM, summed inside each chunk
    step = torch.nn.functional.logsigmoid(torch.randn(BH, T, generator=gen)) / shape["NORM"]
    g = torch.empty_like(step)
    for s in range(0, T, BT):
        g[:, s:s + BT] = step[:, s:s + BT].cumsum(1)
    return q.to(device), k.to(device), do.to(device), g.to(device)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["BH"], shape["T"], shape["K"], dtype=dtype, device=device),)


def reference(q, k, do, g):
    BH, T, K = q.shape
    dv = torch.zeros_like(do)
    for s in range(0, T, BT):
        n = min(BT, T - s)
        qs, ks, dos, gs = q[:, s:s + n], k[:, s:s + n], do[:, s:s + n], g[:, s:s + n]
        d = gs[:, None, :] - gs[:, :, None]                              # [BH, j, i]: g_i - g_j
        upper = torch.ones(n, n, dtype=torch.bool, device=q.device).triu()  # i >= j
        a = (ks @ qs.transpose(1, 2)) * d.masked_fill(~upper, float("-inf")).exp()
        dv[:, s:s + n] = a @ dos
    return (dv,)


def bytes_moved(shape, dtype):
    e = torch.tensor([], dtype=dtype).element_size()
    BH, T, K = shape["BH"], shape["T"], shape["K"]
    return BH * T * (4 * K * e + 4)


def flops(shape, dtype):
    return 4 * shape["BH"] * shape["T"] * BT * shape["K"]


@triton.jit
def before_kernel(q, k, do, g, dv, T, K: tl.constexpr, BT: tl.constexpr):
    i_t, i_bh = tl.program_id(0), tl.program_id(1)
    o_t = i_t * BT + tl.arange(0, BT)
    o_k = tl.arange(0, K)
    m_t = o_t < T
    p = i_bh * T * K + o_t[:, None] * K + o_k[None, :]
    b_q = tl.load(q + p, mask=m_t[:, None], other=0.)
    b_k = tl.load(k + p, mask=m_t[:, None], other=0.)
    b_do = tl.load(do + p, mask=m_t[:, None], other=0.)
    b_g = tl.load(g + i_bh * T + o_t, mask=m_t, other=0.)
    b_A = tl.dot(b_k, tl.trans(b_q)) * tl.exp(b_g[None, :] - b_g[:, None])  # inf where i is padded
    b_A = tl.where(o_t[:, None] <= o_t[None, :], b_A, 0.)                     # causal only: keeps them
    b_dv = tl.dot(b_A.to(b_do.dtype), b_do)
    tl.store(dv + p, b_dv.to(dv.dtype.element_ty), mask=m_t[:, None])


def before(q, k, do, g, dv):
    BH, T, K = q.shape
    before_kernel[(triton.cdiv(T, BT), BH)](q, k, do, g, dv, T, K=K, BT=BT, num_warps=4)


@triton.jit
def after_kernel(q, k, do, g, dv, T, K: tl.constexpr, BT: tl.constexpr):
    i_t, i_bh = tl.program_id(0), tl.program_id(1)
    o_t = i_t * BT + tl.arange(0, BT)
    o_k = tl.arange(0, K)
    m_t = o_t < T
    p = i_bh * T * K + o_t[:, None] * K + o_k[None, :]
    b_q = tl.load(q + p, mask=m_t[:, None], other=0.)
    b_k = tl.load(k + p, mask=m_t[:, None], other=0.)
    b_do = tl.load(do + p, mask=m_t[:, None], other=0.)
    b_g = tl.load(g + i_bh * T + o_t, mask=m_t, other=0.)
    # the exponent clamped to <= 0: at most 1 on every lane, exact on the causal half
    b_A = tl.dot(b_k, tl.trans(b_q)) * tl.exp(tl.minimum(b_g[None, :] - b_g[:, None], 0.))
    b_A = tl.where(o_t[:, None] <= o_t[None, :], b_A, 0.)
    b_dv = tl.dot(b_A.to(b_do.dtype), b_do)
    tl.store(dv + p, b_dv.to(dv.dtype.element_ty), mask=m_t[:, None])


def after(q, k, do, g, dv):
    BH, T, K = q.shape
    after_kernel[(triton.cdiv(T, BT), BH)](q, k, do, g, dv, T, K=K, BT=BT, num_warps=4)
