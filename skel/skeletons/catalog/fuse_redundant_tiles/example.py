"""fuse-redundant-tiles: a KDA-like recurrent decode step tiled over V, where every V-tile
program redoes the fp32 l2-normalisation of q/k and the gating (softplus, exp, sigmoid)
→ one program per (sequence, head) that does that work once and loops over the V tiles.

One step of gated delta rule with a per-channel decay (Kimi Delta Attention):
    q, k = l2norm(q) * K**-0.5, l2norm(k);  g = -exp(A_log) * softplus(g + dt_bias);  b = sigmoid(beta)
    h = h0 * exp(g)[:, None];  v' = b * (v - k @ h);  h += k[:, None] * v'[None, :];  o = q @ h

Harness format: docs/harness.md. The before/after launchers are the template shown.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(N=2, H=3, K=20, V=40),                # K, V not powers of two, V not a multiple of BV
    "decode_b64": dict(N=64, H=32, K=128, V=128),      # batched decode, 2048 heads: fills the SMs either way
    "decode_b256": dict(N=256, H=32, K=128, V=128),
    "decode_b1": dict(N=1, H=16, K=128, V=128),        # 16 heads: splitting V is what fills the GPU
    "huge": dict(N=4100, H=32, K=128, V=128),          # state past 2**31 elements: int64 state offset
}
CPU_SHAPES = ("tiny",)
GPU_SHAPES = ("decode_b64", "decode_b256", "decode_b1")
CHECK_ONLY = ("huge",)
DTYPES = ("bfloat16", "float32")
TOLERANCES = {"bfloat16": (1e-2, 1e-2), "float32": (1e-4, 1e-4)}  # state and math in fp32 either way
FIXED = ("K",)
BV = 32


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    N, H, K, V = (shape[n] for n in ("N", "H", "K", "V"))
    q = torch.randn(N, H, K, generator=g).to(dtype).to(device)
    k = torch.randn(N, H, K, generator=g).to(dtype).to(device)
    v = torch.randn(N, H, V, generator=g).to(dtype).to(device)
    gk = torch.randn(N, H, K, generator=g).to(dtype).to(device)
    beta = torch.randn(N, H, generator=g).to(dtype).to(device)
    A_log = (torch.rand(H, generator=g) * 2 - 1).to(device)
    dt_bias = (torch.randn(H * K, generator=g) * 0.5).to(device)
    h0 = (torch.randn(N, H, K, V, generator=g) * 0.1).to(device)
    return q, k, v, gk, beta, A_log, dt_bias, h0


def make_outputs(shape, dtype, device):
    N, H, K, V = (shape[n] for n in ("N", "H", "K", "V"))
    return (torch.empty(N, H, V, dtype=dtype, device=device),
            torch.empty(N, H, K, V, dtype=torch.float32, device=device))


def reference(q, k, v, gk, beta, A_log, dt_bias, h0):
    N, H, K = q.shape
    V = v.shape[-1]
    q = q * torch.rsqrt((q * q).sum(-1, keepdim=True) + 1e-6) * K ** -0.5
    k = k * torch.rsqrt((k * k).sum(-1, keepdim=True) + 1e-6)
    gate = -A_log.exp()[:, None] * torch.nn.functional.softplus(gk + dt_bias.view(H, K))
    h = (h0 * gate.exp()[..., None]).view(N * H, K, V)
    v_new = torch.sigmoid(beta)[..., None] * (v - torch.einsum("nhk,nhkv->nhv", k, h.view(N, H, K, V)))
    h.baddbmm_(k.reshape(N * H, K, 1), v_new.reshape(N * H, 1, V))  # in place: the huge state is 17 GB in fp64
    return torch.einsum("nhk,nhkv->nhv", q, h.view(N, H, K, V)), h.view(N, H, K, V)


def bytes_moved(shape, dtype):
    N, H, K, V = (shape[n] for n in ("N", "H", "K", "V"))
    es = torch.tensor([], dtype=dtype).element_size()
    return N * H * (2 * K * V * 4 + (3 * K + 2 * V + 1) * es)


def flops(shape, dtype):
    N, H, K, V = (shape[n] for n in ("N", "H", "K", "V"))
    return N * H * (8 * K * V + 20 * K)


@triton.jit
def before_kernel(
        q, k, v, gk, beta, A_log, dt_bias, h0, o, ht, scale, H: tl.constexpr, K: tl.constexpr, V: tl.constexpr,
        BK: tl.constexpr, BV: tl.constexpr):
    i_nh, i_v = tl.program_id(0), tl.program_id(1)  # (sequence, head) on axis 0: up to 2**31-1 programs
    i_h = i_nh % H
    o_k = tl.arange(0, BK)
    o_v = i_v * BV + tl.arange(0, BV)
    m_k = o_k < K
    b_q = tl.load(q + i_nh * K + o_k, mask=m_k, other=0.0).to(tl.float32)
    b_k = tl.load(k + i_nh * K + o_k, mask=m_k, other=0.0).to(tl.float32)
    b_q = b_q * tl.rsqrt(tl.sum(b_q * b_q) + 1e-6) * scale
    b_k = b_k * tl.rsqrt(tl.sum(b_k * b_k) + 1e-6)
    b_g = tl.load(gk + i_nh * K + o_k, mask=m_k, other=0.0).to(tl.float32) + tl.load(dt_bias + i_h * K + o_k,
                                                                                      mask=m_k, other=0.0)
    b_g = -tl.exp(tl.load(A_log + i_h)) * tl.where(b_g > 20.0, b_g, tl.log(1.0 + tl.exp(b_g)))
    b_decay = tl.exp(b_g)
    b_beta = tl.sigmoid(tl.load(beta + i_nh).to(tl.float32))
    m_v = o_v < V
    b_v = tl.load(v + i_nh * V + o_v, mask=m_v, other=0.0).to(tl.float32)
    p_h = i_nh.to(tl.int64) * K * V + o_k[:, None] * V + o_v[None, :]
    m_h = m_k[:, None] & m_v[None, :]
    b_h = tl.load(h0 + p_h, mask=m_h, other=0.0) * b_decay[:, None]
    b_v = b_beta * (b_v - tl.sum(b_h * b_k[:, None], 0))
    b_h += b_k[:, None] * b_v[None, :]
    tl.store(ht + p_h, b_h, mask=m_h)
    tl.store(o + i_nh * V + o_v, tl.sum(b_h * b_q[:, None], 0).to(o.dtype.element_ty), mask=m_v)


def before(q, k, v, gk, beta, A_log, dt_bias, h0, o, ht):
    N, H, K = q.shape
    V = v.shape[-1]
    before_kernel[(N * H, triton.cdiv(V, BV))](
        q, k, v, gk, beta, A_log, dt_bias, h0, o, ht, K ** -0.5, H=H, K=K, V=V, BK=triton.next_power_of_2(K), BV=BV,
        num_warps=4)


@triton.jit
def after_kernel(
        q, k, v, gk, beta, A_log, dt_bias, h0, o, ht, scale, H: tl.constexpr, K: tl.constexpr, V: tl.constexpr,
        BK: tl.constexpr, BV: tl.constexpr):
    i_nh = tl.program_id(0)
    i_h = i_nh % H
    o_k = tl.arange(0, BK)
    m_k = o_k < K
    b_q = tl.load(q + i_nh * K + o_k, mask=m_k, other=0.0).to(tl.float32)
    b_k = tl.load(k + i_nh * K + o_k, mask=m_k, other=0.0).to(tl.float32)
    b_q = b_q * tl.rsqrt(tl.sum(b_q * b_q) + 1e-6) * scale
    b_k = b_k * tl.rsqrt(tl.sum(b_k * b_k) + 1e-6)
    b_g = tl.load(gk + i_nh * K + o_k, mask=m_k, other=0.0).to(tl.float32) + tl.load(dt_bias + i_h * K + o_k,
                                                                                      mask=m_k, other=0.0)
    b_g = -tl.exp(tl.load(A_log + i_h)) * tl.where(b_g > 20.0, b_g, tl.log(1.0 + tl.exp(b_g)))
    b_decay = tl.exp(b_g)
    b_beta = tl.sigmoid(tl.load(beta + i_nh).to(tl.float32))
    for i_v in range(tl.cdiv(V, BV)):
        o_v = i_v * BV + tl.arange(0, BV)
        m_v = o_v < V
        b_v = tl.load(v + i_nh * V + o_v, mask=m_v, other=0.0).to(tl.float32)
        p_h = i_nh.to(tl.int64) * K * V + o_k[:, None] * V + o_v[None, :]
        m_h = m_k[:, None] & m_v[None, :]
        b_h = tl.load(h0 + p_h, mask=m_h, other=0.0) * b_decay[:, None]
        b_v = b_beta * (b_v - tl.sum(b_h * b_k[:, None], 0))
        b_h += b_k[:, None] * b_v[None, :]
        tl.store(ht + p_h, b_h, mask=m_h)
        tl.store(o + i_nh * V + o_v, tl.sum(b_h * b_q[:, None], 0).to(o.dtype.element_ty), mask=m_v)


def after(q, k, v, gk, beta, A_log, dt_bias, h0, o, ht):
    N, H, K = q.shape
    V = v.shape[-1]
    after_kernel[(N * H,)](
        q, k, v, gk, beta, A_log, dt_bias, h0, o, ht, K ** -0.5, H=H, K=K, V=V, BK=triton.next_power_of_2(K), BV=BV,
        num_warps=4)
