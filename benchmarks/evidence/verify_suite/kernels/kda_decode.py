"""KDA-like gated delta-rule decode step, naive: grid over (V tiles, batch*heads); every V-tile
program redoes the FP32 L2 normalisation of q and k and the per-channel gate (exp, softplus).

Per (b, h):  q, k <- l2norm(q), l2norm(k);  g = -exp(A_log[h]) * softplus(a + dt_bias[h]);
S <- S * exp(g)[:, None];  u = sigmoid(beta) * (v - k^T S);  S <- S + k u^T;  o = (q * K**-0.5)^T S
"""

import torch
import triton
import triton.language as tl

__all__ = ["SHAPES", "CPU_SHAPES", "FIXED", "DTYPES", "TOLERANCES", "make_inputs", "make_outputs", "reference",
           "bytes_moved", "flops"]

SHAPES = {
    "tiny": dict(B=2, H=3, K=32, V=64),
    "batch": dict(B=128, H=32, K=128, V=128),
}
CPU_SHAPES = ("tiny",)
FIXED = ("K", "V")
DTYPES = ("bfloat16", "float32")
TOLERANCES = {"bfloat16": (2e-2, 2e-2), "float32": (1e-4, 1e-4)}


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device="cpu").manual_seed(seed)
    B, H, K, V = (shape[n] for n in ("B", "H", "K", "V"))
    q = torch.randn(B, H, K, generator=g).to(dtype).to(device)
    k = torch.randn(B, H, K, generator=g).to(dtype).to(device)
    v = torch.randn(B, H, V, generator=g).to(dtype).to(device)
    a = torch.randn(B, H, K, generator=g).to(dtype).to(device)
    beta = torch.randn(B, H, generator=g).to(dtype).to(device)
    A_log = (torch.rand(H, generator=g) * 2 - 3).to(device)  # fp32 parameters
    dt_bias = (torch.randn(H, K, generator=g) * 0.5).to(device)
    state = (torch.randn(B, H, K, V, generator=g) * 0.1).to(device)
    return (q, k, v, a, beta, A_log, dt_bias, state)


def make_outputs(shape, dtype, device):
    B, H, K, V = (shape[n] for n in ("B", "H", "K", "V"))
    return (torch.empty(B, H, V, dtype=dtype, device=device),
            torch.empty(B, H, K, V, dtype=torch.float32, device=device))


def reference(q, k, v, a, beta, A_log, dt_bias, state):
    K = q.shape[-1]
    q = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6)
    k = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
    g = -torch.exp(A_log)[None, :, None] * torch.nn.functional.softplus(a + dt_bias[None])
    S = state * torch.exp(g)[..., None]
    u = torch.sigmoid(beta)[..., None] * (v - torch.einsum("bhk,bhkv->bhv", k, S))
    S = S + k[..., None] * u[..., None, :]
    o = torch.einsum("bhk,bhkv->bhv", q * K ** -0.5, S)
    return (o, S)


def bytes_moved(shape, dtype):
    B, H, K, V = (shape[n] for n in ("B", "H", "K", "V"))
    return 2 * 4 * B * H * K * V


def flops(shape, dtype):
    B, H, K, V = (shape[n] for n in ("B", "H", "K", "V"))
    return 7 * B * H * K * V


@triton.jit
def kda_decode_kernel(q_ptr, k_ptr, v_ptr, a_ptr, beta_ptr, A_log_ptr, dt_bias_ptr, s_ptr, o_ptr, s_out_ptr, H,
                      scale, K: tl.constexpr, V: tl.constexpr, BV: tl.constexpr):
    i_v = tl.program_id(0)
    i_bh = tl.program_id(1).to(tl.int64)
    i_h = i_bh % H
    offs_k = tl.arange(0, K)
    offs_v = i_v * BV + tl.arange(0, BV)
    # per-(b, h) work that every V tile repeats
    q = tl.load(q_ptr + i_bh * K + offs_k).to(tl.float32)
    k = tl.load(k_ptr + i_bh * K + offs_k).to(tl.float32)
    q = q / tl.sqrt(tl.sum(q * q, axis=0) + 1e-6)
    k = k / tl.sqrt(tl.sum(k * k, axis=0) + 1e-6)
    a = tl.load(a_ptr + i_bh * K + offs_k).to(tl.float32) + tl.load(dt_bias_ptr + i_h * K + offs_k)
    softplus = tl.where(a > 20.0, a, tl.log(1.0 + tl.exp(a)))
    g = -tl.exp(tl.load(A_log_ptr + i_h)) * softplus
    beta = tl.sigmoid(tl.load(beta_ptr + i_bh).to(tl.float32))
    # this V tile
    s_off = i_bh * K * V + offs_k[:, None] * V + offs_v[None, :]
    S = tl.load(s_ptr + s_off) * tl.exp(g)[:, None]
    v = tl.load(v_ptr + i_bh * V + offs_v).to(tl.float32)
    u = beta * (v - tl.sum(k[:, None] * S, axis=0))
    S = S + k[:, None] * u[None, :]
    o = tl.sum((q * scale)[:, None] * S, axis=0)
    tl.store(s_out_ptr + s_off, S)
    tl.store(o_ptr + i_bh * V + offs_v, o.to(o_ptr.dtype.element_ty))


def run(q, k, v, a, beta, A_log, dt_bias, state, o, state_out):
    B, H, K = q.shape
    V = v.shape[-1]
    BV = min(32, V)
    kda_decode_kernel[(triton.cdiv(V, BV), B * H)](q, k, v, a, beta, A_log, dt_bias, state, o, state_out, H,
                                                   K ** -0.5, K=K, V=V, BV=BV)
