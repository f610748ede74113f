"""rope-sincos-in-kernel: rotary embedding that gathers a cos/sin cache row per token → cos/sin of position x inv_freq in registers.

Harness format: docs/harness.md. The before/after launchers are the template shown.
RoPE (the neox half-split form) over `[T, H, D]` at `T` token positions. The before gathers
the token's row of an fp32 cos/sin cache `[max_pos, D]` (cos in the first half, sin in the
second, the layout vLLM and SGLang keep), `4 D` bytes a token; the after loads the
`[D / 2]` inverse frequencies once a program and computes `cos`/`sin` of `pos x inv_freq`
in fp32. Both take the angle as the fp32 product the cache was built from, so they agree
to the last bit of the angle. The cache is `2 H` times smaller than the bf16 rows of `x` a
token reads and writes only when `H` is small: one head (MLA's shared `k_pe`, 64 dims) makes
the cache as many bytes as `x`; forty heads (a fused Q/K rope) make it 1/40 and the
rewrite does not pay ("qk40": the payoff says so).
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(T=37, H=2, D=16, MAX_POS=64),
    "mla_kpe": dict(T=524288, H=1, D=64, MAX_POS=131072),    # DeepSeek's shared k_pe: one head of 64
    "kv4": dict(T=131072, H=4, D=128, MAX_POS=131072),      # a K-only rope at 4 KV heads
    "qk40": dict(T=16384, H=40, D=128, MAX_POS=131072),     # fused Q/K of an 8B model: does not pay
}
CPU_SHAPES = ("tiny",)
FIXED = ("D",)
DTYPES = ("bfloat16", "float16")
TOLERANCES = {"bfloat16": (2e-2, 2e-2), "float16": (2e-3, 2e-3)}  # the output's own rounding
BASE = 10000.0


def _inv_freq(D):
    return 1.0 / (BASE ** (torch.arange(0, D, 2, dtype=torch.float32) / D))


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device="cpu").manual_seed(seed)
    T, H, D, P = shape["T"], shape["H"], shape["D"], shape["MAX_POS"]
    x = torch.randn(T, H, D, generator=g).to(dtype).to(device)
    pos = torch.randint(0, P, (T,), generator=g).to(device)
    inv_freq = _inv_freq(D)
    ang = torch.arange(P, dtype=torch.float32)[:, None] * inv_freq[None, :]  # the model's table, fp32
    cache = torch.cat([ang.cos(), ang.sin()], dim=-1).to(device)
    return x, pos, cache, inv_freq.to(device)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["T"], shape["H"], shape["D"], dtype=dtype, device=device),)


def reference(x, pos, cache, inv_freq):
    half = x.shape[-1] // 2
    ang = (pos.to(torch.float32)[:, None] * inv_freq.to(torch.float32)[None, :]).double()  # the fp32 angle
    c, s = ang.cos()[:, None, :], ang.sin()[:, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return (torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1),)


def bytes_moved(shape, dtype):
    # the least traffic: x read and written once, the positions read once
    return 2 * shape["T"] * shape["H"] * shape["D"] * torch.tensor([], dtype=dtype).element_size() + 8 * shape["T"]


def flops(shape, dtype):
    return 3 * shape["T"] * shape["H"] * shape["D"]


@triton.jit
def before_kernel(X, Pos, CosSinCache, O, T, H, stride_t, D: tl.constexpr, BLOCK_T: tl.constexpr):
    HALF: tl.constexpr = D // 2
    t = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    d = tl.arange(0, HALF)
    m = t[:, None] < T
    pos = tl.load(Pos + t, mask=t < T, other=0)
    # the token's cache row: cos in [0, D/2), sin in [D/2, D)
    c = tl.load(CosSinCache + pos[:, None] * D + d[None, :], mask=m, other=0.0)
    s = tl.load(CosSinCache + pos[:, None] * D + HALF + d[None, :], mask=m, other=0.0)
    for h in range(H):
        off = t[:, None] * stride_t + h * D + d[None, :]
        x1 = tl.load(X + off, mask=m, other=0.0).to(tl.float32)
        x2 = tl.load(X + off + HALF, mask=m, other=0.0).to(tl.float32)
        tl.store(O + off, (x1 * c - x2 * s).to(O.dtype.element_ty), mask=m)
        tl.store(O + off + HALF, (x2 * c + x1 * s).to(O.dtype.element_ty), mask=m)


def before(x, pos, cache, inv_freq, o):
    T, H, D = x.shape
    BLOCK_T = 32
    before_kernel[(triton.cdiv(T, BLOCK_T),)](x, pos, cache, o, T, H, x.stride(0), D=D, BLOCK_T=BLOCK_T)


@triton.jit
def after_kernel(X, Pos, InvFreq, O, T, H, stride_t, D: tl.constexpr, BLOCK_T: tl.constexpr):
    HALF: tl.constexpr = D // 2
    t = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    d = tl.arange(0, HALF)
    m = t[:, None] < T
    pos = tl.load(Pos + t, mask=t < T, other=0)
    # the same fp32 angle the cache was built from, cos/sin in registers
    ang = pos.to(tl.float32)[:, None] * tl.load(InvFreq + d)[None, :]
    c = tl.cos(ang)
    s = tl.sin(ang)
    for h in range(H):
        off = t[:, None] * stride_t + h * D + d[None, :]
        x1 = tl.load(X + off, mask=m, other=0.0).to(tl.float32)
        x2 = tl.load(X + off + HALF, mask=m, other=0.0).to(tl.float32)
        tl.store(O + off, (x1 * c - x2 * s).to(O.dtype.element_ty), mask=m)
        tl.store(O + off + HALF, (x2 * c + x1 * s).to(O.dtype.element_ty), mask=m)


def after(x, pos, cache, inv_freq, o):
    T, H, D = x.shape
    BLOCK_T = 32
    after_kernel[(triton.cdiv(T, BLOCK_T),)](x, pos, inv_freq, o, T, H, x.stride(0), D=D, BLOCK_T=BLOCK_T)
