"""lowp-dot-fp32-accumulator: fp32 (TF32) dot operands → fp16 operands with an fp32 accumulator.

Harness format: docs/harness.md. The before/after launchers are the template shown.
Sigmoid attention (o = sum_j sigmoid(q.k_j * scale) v_j / sum_j sigmoid(...)), non-causal, over
(batch * heads, T, D) fp16 tensors. The before upcasts the q/k/v tiles to fp32, so both dots run
as TF32 MMAs on fp32 tiles; the after feeds the fp16 tiles (and p cast to fp16) to the MMAs.
Both keep the accumulator, the row sums and the sigmoid in fp32.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(BH=3, T=100, D=64),           # T not a multiple of BM or BN
    "long": dict(BH=32, T=8192, D=128),
    "heads": dict(BH=256, T=2048, D=64),
    "huge": dict(BH=16400, T=1024, D=128),     # past 2**31 elements: i_bh * T * D must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
FIXED = ("D",)
DTYPES = ("float16",)
TOLERANCES = {"float16": (5e-4, 5e-3)}  # p rounded to fp16 (or TF32) once, fp32 sums, fp16 output
BM, BN = 128, 64


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    BH, T, D = shape["BH"], shape["T"], shape["D"]
    q, k, v = (torch.randn(BH, T, D, generator=g, device=device).to(dtype) for _ in range(3))
    return q, k, v


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["BH"], shape["T"], shape["D"], dtype=dtype, device=device),)


def reference(q, k, v):
    o = torch.empty_like(q)
    step = max(1, 2 ** 28 // (q.shape[1] * q.shape[1]))  # bound the (heads, T, T) score tensor
    for i in range(0, q.shape[0], step):
        p = torch.sigmoid(q[i:i + step] @ k[i:i + step].transpose(1, 2) * q.shape[2] ** -0.5)
        o[i:i + step] = (p @ v[i:i + step]) / p.sum(-1, keepdim=True)
    return (o,)


def bytes_moved(shape, dtype):
    return 4 * shape["BH"] * shape["T"] * shape["D"] * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 4 * shape["BH"] * shape["T"] * shape["T"] * shape["D"]


@triton.jit
def before_kernel(q_ptr, k_ptr, v_ptr, o_ptr, T, scale, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    i_m = tl.program_id(0)
    base = tl.program_id(1).to(tl.int64) * T * D
    o_m = i_m * BM + tl.arange(0, BM)
    o_d = tl.arange(0, D)
    q = tl.load(q_ptr + base + o_m[:, None] * D + o_d[None, :], mask=(o_m < T)[:, None], other=0.0).to(tl.float32)
    acc = tl.zeros([BM, D], dtype=tl.float32)
    l_i = tl.zeros([BM], dtype=tl.float32)
    for start in range(0, T, BN):
        o_n = start + tl.arange(0, BN)
        m_n = o_n < T
        k = tl.load(k_ptr + base + o_n[:, None] * D + o_d[None, :], mask=m_n[:, None], other=0.0).to(tl.float32)
        v = tl.load(v_ptr + base + o_n[:, None] * D + o_d[None, :], mask=m_n[:, None], other=0.0).to(tl.float32)
        p = tl.where(m_n[None, :], tl.sigmoid(tl.dot(q, tl.trans(k)) * scale), 0.0)
        l_i += tl.sum(p, 1)
        acc = tl.dot(p, v, acc)
    tl.store(o_ptr + base + o_m[:, None] * D + o_d[None, :], (acc / l_i[:, None]).to(o_ptr.dtype.element_ty),
             mask=(o_m < T)[:, None])


def before(q, k, v, o):
    BH, T, D = q.shape
    before_kernel[(triton.cdiv(T, BM), BH)](q, k, v, o, T, D ** -0.5, D=D, BM=BM, BN=BN, num_warps=8)


@triton.jit
def after_kernel(q_ptr, k_ptr, v_ptr, o_ptr, T, scale, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    i_m = tl.program_id(0)
    base = tl.program_id(1).to(tl.int64) * T * D
    o_m = i_m * BM + tl.arange(0, BM)
    o_d = tl.arange(0, D)
    q = tl.load(q_ptr + base + o_m[:, None] * D + o_d[None, :], mask=(o_m < T)[:, None], other=0.0)
    acc = tl.zeros([BM, D], dtype=tl.float32)
    l_i = tl.zeros([BM], dtype=tl.float32)
    for start in range(0, T, BN):
        o_n = start + tl.arange(0, BN)
        m_n = o_n < T
        k = tl.load(k_ptr + base + o_n[:, None] * D + o_d[None, :], mask=m_n[:, None], other=0.0)
        v = tl.load(v_ptr + base + o_n[:, None] * D + o_d[None, :], mask=m_n[:, None], other=0.0)
        p = tl.where(m_n[None, :], tl.sigmoid(tl.dot(q, tl.trans(k)) * scale), 0.0)
        l_i += tl.sum(p, 1)
        acc = tl.dot(p.to(v.dtype), v, acc)  # fp16 operands, fp32 accumulator
    tl.store(o_ptr + base + o_m[:, None] * D + o_d[None, :], (acc / l_i[:, None]).to(o_ptr.dtype.element_ty),
             mask=(o_m < T)[:, None])


def after(q, k, v, o):
    BH, T, D = q.shape
    after_kernel[(triton.cdiv(T, BM), BH)](q, k, v, o, T, D ** -0.5, D=D, BM=BM, BN=BN, num_warps=8)
