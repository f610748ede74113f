"""merged-sibling-launch: a RoPE kernel launched on q, then on k → one launch over both head sets.

Harness format: docs/harness.md. The before/after launchers are the template shown.
Rotary embedding of `q` `[T, Hq, D]` and `k` `[T, Hk, D]` (written to `q_out`, `k_out`).
The before launches the rotary kernel twice, a grid of `(token blocks, Hq)` then one of
`(token blocks, Hk)`. The after launches once with `(token blocks, Hq + Hk)` programs and
branches on the head program id to pick the tensor. At decode sizes (a few tokens) each
launch is a few programs and its fixed cost is the time: the after should take about half
the before's. At the prefill shape each launch runs many waves and the two sides should
be within noise (the payoff says so).
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(T=5, HQ=4, HK=2, D=16),
    "decode": dict(T=8, HQ=32, HK=8, D=128),         # a decode batch, Llama-3-8B's heads
    "decode64": dict(T=64, HQ=32, HK=8, D=128),
    "prefill16k": dict(T=16384, HQ=32, HK=8, D=128),  # large launches: the merge does not pay
}
CPU_SHAPES = ("tiny",)
FIXED = ("D",)
DTYPES = ("bfloat16", "float32")
TOLERANCES = {"bfloat16": (2e-2, 2e-2), "float32": (1e-5, 1e-5)}
BLOCK_T = 4


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device="cpu").manual_seed(seed)
    T, D = shape["T"], shape["D"]
    q = torch.randn(T, shape["HQ"], D, generator=g).to(dtype).to(device)
    k = torch.randn(T, shape["HK"], D, generator=g).to(dtype).to(device)
    pos = torch.arange(T, dtype=torch.float32)[:, None]
    inv = 10000.0 ** (-torch.arange(0, D // 2, dtype=torch.float32) * 2 / D)
    cos, sin = torch.cos(pos * inv).to(dtype).to(device), torch.sin(pos * inv).to(dtype).to(device)
    return q, k, cos, sin


def make_outputs(shape, dtype, device):
    T, D = shape["T"], shape["D"]
    return (torch.empty(T, shape["HQ"], D, dtype=dtype, device=device),
            torch.empty(T, shape["HK"], D, dtype=dtype, device=device))


def _rotate(x, cos, sin):
    half = x.shape[-1] // 2
    x0, x1 = x[..., :half], x[..., half:]
    c, s = cos[:, None, :], sin[:, None, :]
    return torch.cat([x0 * c - x1 * s, x0 * s + x1 * c], dim=-1)


def reference(q, k, cos, sin):
    return _rotate(q, cos, sin), _rotate(k, cos, sin)


def bytes_moved(shape, dtype):
    # q and k read once and written once, cos and sin read once
    T, D = shape["T"], shape["D"]
    return (2 * T * (shape["HQ"] + shape["HK"]) * D + T * D) * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 6 * shape["T"] * (shape["HQ"] + shape["HK"]) * shape["D"] // 2


@triton.jit
def before_rope_kernel(x_ptr, cos_ptr, sin_ptr, out_ptr, stride_xt, stride_xh, stride_ot, stride_oh, n_tok,
                       HALF: tl.constexpr, BLOCK: tl.constexpr):
    head = tl.program_id(1)
    t = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    d = tl.arange(0, HALF)
    m = t[:, None] < n_tok
    c = tl.load(cos_ptr + t[:, None] * HALF + d[None, :], mask=m, other=0.0).to(tl.float32)
    s = tl.load(sin_ptr + t[:, None] * HALF + d[None, :], mask=m, other=0.0).to(tl.float32)
    src = x_ptr + t[:, None] * stride_xt + head * stride_xh + d[None, :]
    dst = out_ptr + t[:, None] * stride_ot + head * stride_oh + d[None, :]
    x0 = tl.load(src, mask=m, other=0.0).to(tl.float32)
    x1 = tl.load(src + HALF, mask=m, other=0.0).to(tl.float32)
    tl.store(dst, (x0 * c - x1 * s).to(out_ptr.dtype.element_ty), mask=m)
    tl.store(dst + HALF, (x0 * s + x1 * c).to(out_ptr.dtype.element_ty), mask=m)


def before(q, k, cos, sin, q_out, k_out):
    T, HQ, D = q.shape
    HK = k.shape[1]
    nt = triton.cdiv(T, BLOCK_T)
    before_rope_kernel[(nt, HQ)](q, cos, sin, q_out, q.stride(0), q.stride(1), q_out.stride(0), q_out.stride(1), T,
                                 HALF=D // 2, BLOCK=BLOCK_T)
    before_rope_kernel[(nt, HK)](k, cos, sin, k_out, k.stride(0), k.stride(1), k_out.stride(0), k_out.stride(1), T,
                                 HALF=D // 2, BLOCK=BLOCK_T)


@triton.jit
def after_kernel(q_ptr, k_ptr, cos_ptr, sin_ptr, q_out_ptr, k_out_ptr, stride_qt, stride_qh, stride_kt, stride_kh,
                 stride_qot, stride_qoh, stride_kot, stride_koh, n_tok, n_q_heads, HALF: tl.constexpr,
                 BLOCK: tl.constexpr):
    head = tl.program_id(1)
    t = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    d = tl.arange(0, HALF)
    m = t[:, None] < n_tok
    # the head axis covers q's heads, then k's: the branch picks the tensor
    if head < n_q_heads:
        src = q_ptr + t[:, None] * stride_qt + head * stride_qh + d[None, :]
        dst = q_out_ptr + t[:, None] * stride_qot + head * stride_qoh + d[None, :]
    else:
        src = k_ptr + t[:, None] * stride_kt + (head - n_q_heads) * stride_kh + d[None, :]
        dst = k_out_ptr + t[:, None] * stride_kot + (head - n_q_heads) * stride_koh + d[None, :]
    c = tl.load(cos_ptr + t[:, None] * HALF + d[None, :], mask=m, other=0.0).to(tl.float32)
    s = tl.load(sin_ptr + t[:, None] * HALF + d[None, :], mask=m, other=0.0).to(tl.float32)
    x0 = tl.load(src, mask=m, other=0.0).to(tl.float32)
    x1 = tl.load(src + HALF, mask=m, other=0.0).to(tl.float32)
    tl.store(dst, (x0 * c - x1 * s).to(q_out_ptr.dtype.element_ty), mask=m)
    tl.store(dst + HALF, (x0 * s + x1 * c).to(q_out_ptr.dtype.element_ty), mask=m)


def after(q, k, cos, sin, q_out, k_out):
    T, HQ, D = q.shape
    HK = k.shape[1]
    after_kernel[(triton.cdiv(T, BLOCK_T), HQ + HK)](
        q, k, cos, sin, q_out, k_out, q.stride(0), q.stride(1), k.stride(0), k.stride(1), q_out.stride(0),
        q_out.stride(1), k_out.stride(0), k_out.stride(1), T, HQ, HALF=D // 2, BLOCK=BLOCK_T)
