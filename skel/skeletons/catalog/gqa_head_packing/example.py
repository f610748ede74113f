"""gqa-head-packing: GQA decode attention, one program per query head with CUDA-core
vector-matrix scores → one program per KV head whose G query heads share each K/V block
through `tl.dot` on a [BLOCK_H, D] tile.

Harness format: docs/harness.md. The before/after launchers are the template shown.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(B=2, T=37, HQ=8, H=2, D=16),              # T not a multiple of BS; G = 4 padded to 16
    "llama8b": dict(B=32, T=4096, HQ=32, H=8, D=128),      # G = 4 (Llama-3-8B decode, 4k context)
    "llama70b": dict(B=16, T=8192, HQ=64, H=8, D=128),     # G = 8 (Llama-3-70B decode, 8k context)
    "mha": dict(B=32, T=4096, HQ=32, H=32, D=128),         # G = 1: nothing shared, padding wasted
    "huge": dict(B=2, T=1050000, HQ=32, H=8, D=128),       # K/V past 2**31 elements: int64 batch offset
}
CPU_SHAPES = ("tiny",)
GPU_SHAPES = ("llama8b", "llama70b", "mha")
CHECK_ONLY = ("huge",)
DTYPES = ("float16",)  # bf16 tl.dot is garbage in the CPU interpreter
TOLERANCES = {"float16": (4e-3, 4e-3)}  # the packed side rounds the probabilities to fp16 for the MMA
FIXED = ("HQ", "H", "D")  # HQ % H == 0 and a power-of-two head dim
BS = 64


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    B, T, HQ, H, D = (shape[n] for n in ("B", "T", "HQ", "H", "D"))
    q = torch.randn(B, HQ, D, generator=g).to(dtype).to(device)
    k = torch.randn(B, T, H, D, generator=g).to(dtype).to(device)
    v = torch.randn(B, T, H, D, generator=g).to(dtype).to(device)
    return q, k, v


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["B"], shape["HQ"], shape["D"], dtype=dtype, device=device),)


def reference(q, k, v):
    B, HQ, D = q.shape
    H = k.shape[2]
    qg = q.view(B, H, HQ // H, D)
    s = torch.einsum("bhgd,bthd->bhgt", qg, k) * D ** -0.5
    o = torch.einsum("bhgt,bthd->bhgd", torch.softmax(s, dim=-1), v)
    return (o.reshape(B, HQ, D),)


def bytes_moved(shape, dtype):
    es = torch.tensor([], dtype=dtype).element_size()
    kv = 2 * shape["B"] * shape["T"] * shape["H"] * shape["D"]
    return (kv + 2 * shape["B"] * shape["HQ"] * shape["D"]) * es


def flops(shape, dtype):
    return 4 * shape["B"] * shape["HQ"] * shape["T"] * shape["D"]


@triton.jit
def before_kernel(q, k, v, o, T, scale, HQ: tl.constexpr, G: tl.constexpr, D: tl.constexpr, BS: tl.constexpr):
    i_b, i_hq = tl.program_id(0), tl.program_id(1)
    i_h = i_hq // G
    H: tl.constexpr = HQ // G
    o_d = tl.arange(0, D)
    p_k = k + i_b.to(tl.int64) * T * H * D + i_h * D
    p_v = v + i_b.to(tl.int64) * T * H * D + i_h * D
    b_q = tl.load(q + (i_b * HQ + i_hq) * D + o_d).to(tl.float32) * scale
    b_m = float("-inf")
    b_l = 0.0
    b_o = tl.zeros([D], dtype=tl.float32)
    for i_s in range(0, T, BS):
        o_s = i_s + tl.arange(0, BS)
        m_s = o_s < T
        b_k = tl.load(p_k + o_s[:, None] * (H * D) + o_d[None, :], mask=m_s[:, None], other=0.0).to(tl.float32)
        b_v = tl.load(p_v + o_s[:, None] * (H * D) + o_d[None, :], mask=m_s[:, None], other=0.0).to(tl.float32)
        b_s = tl.where(m_s, tl.sum(b_q[None, :] * b_k, 1), float("-inf"))
        b_m_new = tl.maximum(b_m, tl.max(b_s, 0))
        b_r = tl.exp(b_m - b_m_new)
        b_p = tl.exp(b_s - b_m_new)
        b_l = b_l * b_r + tl.sum(b_p, 0)
        b_o = b_o * b_r + tl.sum(b_p[:, None] * b_v, 0)
        b_m = b_m_new
    tl.store(o + (i_b * HQ + i_hq) * D + o_d, (b_o / b_l).to(o.dtype.element_ty))


def before(q, k, v, o):
    B, T, H, D = k.shape
    HQ = q.shape[1]
    before_kernel[(B, HQ)](q, k, v, o, T, D ** -0.5, HQ=HQ, G=HQ // H, D=D, BS=BS, num_warps=4)


@triton.jit
def after_kernel(
        q, k, v, o, T, scale, HQ: tl.constexpr, G: tl.constexpr, D: tl.constexpr, BS: tl.constexpr,
        BLOCK_H: tl.constexpr):
    i_b, i_h = tl.program_id(0), tl.program_id(1)
    H: tl.constexpr = HQ // G
    o_d = tl.arange(0, D)
    p_k = k + i_b.to(tl.int64) * T * H * D + i_h * D
    p_v = v + i_b.to(tl.int64) * T * H * D + i_h * D
    o_hq = i_h * G + tl.arange(0, BLOCK_H)
    m_h = o_hq < (i_h + 1) * G
    b_q = tl.load(q + (i_b * HQ + o_hq[:, None]) * D + o_d[None, :], mask=m_h[:, None], other=0.0)
    b_m = tl.full([BLOCK_H], float("-inf"), dtype=tl.float32)
    b_l = tl.zeros([BLOCK_H], dtype=tl.float32)
    b_o = tl.zeros([BLOCK_H, D], dtype=tl.float32)
    for i_s in range(0, T, BS):
        o_s = i_s + tl.arange(0, BS)
        m_s = o_s < T
        b_k = tl.load(p_k + o_s[:, None] * (H * D) + o_d[None, :], mask=m_s[:, None], other=0.0)
        b_v = tl.load(p_v + o_s[:, None] * (H * D) + o_d[None, :], mask=m_s[:, None], other=0.0)
        b_s = tl.where(m_s[None, :], tl.dot(b_q, tl.trans(b_k)) * scale, float("-inf"))
        b_m_new = tl.maximum(b_m, tl.max(b_s, 1))
        b_r = tl.exp(b_m - b_m_new)
        b_p = tl.exp(b_s - b_m_new[:, None])
        b_l = b_l * b_r + tl.sum(b_p, 1)
        b_o = b_o * b_r[:, None] + tl.dot(b_p.to(b_v.dtype), b_v)
        b_m = b_m_new
    tl.store(o + (i_b * HQ + o_hq[:, None]) * D + o_d[None, :], (b_o / b_l[:, None]).to(o.dtype.element_ty),
             mask=m_h[:, None])


def after(q, k, v, o):
    B, T, H, D = k.shape
    HQ = q.shape[1]
    G = HQ // H
    after_kernel[(B, H)](
        q, k, v, o, T, D ** -0.5, HQ=HQ, G=G, D=D, BS=BS, BLOCK_H=max(16, triton.next_power_of_2(G)), num_warps=4)
