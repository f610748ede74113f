"""bitpacked-attention-mask: a custom mask read one byte a (query, key) pair → 32 keys a word, unpacked with shifts.

Harness format: docs/harness.md. The before/after launchers are the template shown.
Attention forward over `[BH, L, D]` with a per-head custom mask (a document/tree mask that
every layer of a forward reuses: the caller packs it once, so both forms are inputs). The
before loads a `[BLOCK_M, BLOCK_N]` tile of the `bool` mask each key step, `BLOCK_M x
BLOCK_N` bytes; the after loads `[BLOCK_M, BLOCK_N // 32]` int32 words, 1/8 of those bytes,
and unpacks them with `>>` and `& 1`. At `BLOCK_M = 128, D = 64` the byte mask is half a
step's K/V bytes (`BLOCK_M / (4 D)`); over a sequence the per-head mask is `L^2` bytes a
head (256 MB at 16 heads x 4K) against 2 MB of K/V a head.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(BH=2, L=72, D=16),            # L not a multiple of the block nor of 32
    "l2k_h32": dict(BH=32, L=2048, D=64),      # 128 MB of byte mask against 16 MB of K/V
    "l4k_h16": dict(BH=16, L=4096, D=64),      # 256 MB of byte mask
    "l4k_h16_d128": dict(BH=16, L=4096, D=128),
}
CPU_SHAPES = ("tiny",)
FIXED = ("D",)
DTYPES = ("float16",)  # the interpreter's bf16 tl.dot is wrong; fp16 runs on both
TOLERANCES = {"float16": (2e-3, 2e-3)}


def _pack_bits(mask):
    """[BH, L, L] bool → [BH, L, ceil(L / 32)] int32: key j of a row in bit j % 32 of word j // 32."""
    bh, lq, lk = mask.shape
    words = triton.cdiv(lk, 32)
    padded = torch.zeros(bh, lq, words * 32, dtype=torch.int64, device=mask.device)
    padded[:, :, :lk] = mask.to(torch.int64)
    shifts = torch.arange(32, device=mask.device, dtype=torch.int64)
    packed = (padded.view(bh, lq, words, 32) << shifts).sum(-1)  # 0 .. 2**32 - 1
    return torch.where(packed >= 2**31, packed - 2**32, packed).to(torch.int32).contiguous()


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device="cpu").manual_seed(seed)
    bh, L, D = shape["BH"], shape["L"], shape["D"]
    q = torch.randn(bh, L, D, generator=g).to(dtype).to(device)
    k = torch.randn(bh, L, D, generator=g).to(dtype).to(device)
    v = torch.randn(bh, L, D, generator=g).to(dtype).to(device)
    # a random mask with the diagonal kept, so that no row is fully masked
    keep = torch.rand(bh, L, L, generator=g) < 0.5
    keep |= torch.eye(L, dtype=torch.bool)
    keep = keep.to(device)
    return q, k, v, keep, _pack_bits(keep), D ** -0.5


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["BH"], shape["L"], shape["D"], dtype=dtype, device=device),)


def reference(q, k, v, keep, bits, scale):
    s = torch.einsum("bmd,bnd->bmn", q, k) * scale
    s = s.masked_fill(~keep, float("-inf"))
    return (torch.einsum("bmn,bnd->bmd", torch.softmax(s, dim=-1), v),)


def bytes_moved(shape, dtype):
    # the least traffic: q, k, v read and o written once, and the mask as bits
    bh, L, D = shape["BH"], shape["L"], shape["D"]
    return 4 * bh * L * D * torch.tensor([], dtype=dtype).element_size() + bh * L * triton.cdiv(L, 32) * 4


def flops(shape, dtype):
    return 4 * shape["BH"] * shape["L"] * shape["L"] * shape["D"]


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
        # one byte a (query, key) pair
        keep = tl.load(Mask + bh * L * L + offs_m[:, None] * L + cols[None, :],
                       mask=m_rows[:, None] & m_cols[None, :], other=0)
        qk = tl.where(keep != 0, qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + bh * L * D + cols[:, None] * D + offs_d[None, :], mask=m_cols[:, None], other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(O + bh * L * D + offs_m[:, None] * D + offs_d[None, :], acc.to(O.dtype.element_ty), mask=m_rows[:, None])


def before(q, k, v, keep, bits, scale, o):
    BH, L, D = q.shape
    BLOCK_M, BLOCK_N = 128, 64
    grid = (triton.cdiv(L, BLOCK_M), BH)
    before_kernel[grid](q, k, v, keep, o, L, scale, D=D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, num_warps=8,
                        num_stages=2)


@triton.jit
def after_kernel(Q, K, V, Bits, O, L, W, scale, D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_w = tl.arange(0, BLOCK_N // 32)
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
        # 32 keys a word: BLOCK_N // 32 words a row, unpacked with shifts (padding bits are 0)
        words = start_n // 32 + offs_w
        w = tl.load(Bits + bh * L * W + offs_m[:, None] * W + words[None, :],
                    mask=m_rows[:, None] & (words[None, :] < W), other=0)
        bit = (w[:, :, None] >> tl.arange(0, 32)[None, None, :]) & 1
        keep = tl.reshape(bit, (BLOCK_M, BLOCK_N))
        qk = tl.where(keep != 0, qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + bh * L * D + cols[:, None] * D + offs_d[None, :], mask=m_cols[:, None], other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(O + bh * L * D + offs_m[:, None] * D + offs_d[None, :], acc.to(O.dtype.element_ty), mask=m_rows[:, None])


def after(q, k, v, keep, bits, scale, o):
    BH, L, D = q.shape
    BLOCK_M, BLOCK_N = 128, 64
    grid = (triton.cdiv(L, BLOCK_M), BH)
    after_kernel[grid](q, k, v, bits, o, L, bits.shape[-1], scale, D=D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                       num_warps=8, num_stages=2)
