"""lowp-intermediate-storage: an fp32 intra-chunk attention matrix → stored in the inputs' fp16.

Harness format: docs/harness.md. The before/after launchers are the template shown.

Chunked linear attention, intra-chunk part, in two kernels: the first writes the causal score
matrix A = tril(q @ k^T) * scale for each chunk of BT steps ([B, T, H, BT]), the second reads
it back and computes o = A @ v. The "before" allocates A in fp32 and stores the accumulator
as is; the second kernel casts it to fp16 for its `tl.dot` anyway. The "after" allocates A in
q's dtype and casts once on the store: the A round trip moves half the bytes, and the value
the second dot sees is the same fp16 rounding as before.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(B=1, T=150, H=3, D=32),          # T not a multiple of the chunk
    "gla": dict(B=8, T=4096, H=16, D=64),         # A is as large as q when D == BT
    "long": dict(B=2, T=32768, H=16, D=128),
    "huge": dict(B=1, T=1050000, H=16, D=128),    # past 2**31 elements: offsets must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
FIXED = ("D",)
DTYPES = ("float16",)                             # bf16 tl.dot is wrong under the CPU interpreter
TOLERANCES = {"float16": (2e-2, 2e-2)}            # A rounded to fp16 before the second dot either way
BT = 64


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    size = (shape["B"], shape["T"], shape["H"], shape["D"])
    return tuple(torch.randn(size, generator=g).to(dtype).to(device) for _ in range(3))


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["B"], shape["T"], shape["H"], shape["D"], dtype=dtype, device=device),)


def reference(q, k, v):
    """Block by block over time (whole chunks at a time): the float64 copies of a past-2**31
    shape leave no room for padded copies of all three inputs at once."""
    B, T, H, D = q.shape
    o = torch.empty(B, T, H, D, dtype=q.dtype, device=q.device)
    tril = torch.ones(BT, BT, dtype=q.dtype, device=q.device).tril()
    step = BT * 1024
    for s in range(0, T, step):
        e = min(s + step, T)
        NT = -(-(e - s) // BT)
        pad = NT * BT - (e - s)
        qc, kc, vc = (torch.nn.functional.pad(x[:, s:e], (0, 0, 0, 0, 0, pad)).view(B, NT, BT, H, D)
                      for x in (q, k, v))
        A = torch.einsum("bnihd,bnjhd->bnhij", qc, kc) * D ** -0.5 * tril
        o[:, s:e] = torch.einsum("bnhij,bnjhd->bnihd", A, vc).reshape(B, NT * BT, H, D)[:, :e - s]
    return (o,)


def bytes_moved(shape, dtype):
    e = torch.tensor([], dtype=dtype).element_size()
    return 4 * e * shape["B"] * shape["T"] * shape["H"] * shape["D"]


def flops(shape, dtype):
    return 4 * shape["B"] * shape["T"] * shape["H"] * shape["D"] * BT


@triton.jit
def before_kernel_A(q, k, A, T, scale, H: tl.constexpr, D: tl.constexpr, BT: tl.constexpr):
    i_t, i_bh = tl.program_id(0), tl.program_id(1)
    i_b, i_h = i_bh // H, i_bh % H
    o_t = i_t * BT + tl.arange(0, BT)
    o_d = tl.arange(0, D)
    m_t = o_t < T
    p = (i_b.to(tl.int64) * T * H + i_h) * D + o_t[:, None].to(tl.int64) * (H * D) + o_d[None, :]
    b_q = tl.load(q + p, mask=m_t[:, None], other=0.0)
    b_k = tl.load(k + p, mask=m_t[:, None], other=0.0)
    b_A = tl.dot(b_q, tl.trans(b_k)) * scale
    b_A = tl.where(o_t[:, None] >= o_t[None, :], b_A, 0.0)
    p_A = A + (i_b.to(tl.int64) * T * H + i_h) * BT + o_t[:, None].to(tl.int64) * (H * BT) + tl.arange(0, BT)[None, :]
    tl.store(p_A, b_A, mask=m_t[:, None])


@triton.jit
def before_kernel_o(A, v, o, T, H: tl.constexpr, D: tl.constexpr, BT: tl.constexpr):
    i_t, i_bh = tl.program_id(0), tl.program_id(1)
    i_b, i_h = i_bh // H, i_bh % H
    o_t = i_t * BT + tl.arange(0, BT)
    o_d = tl.arange(0, D)
    m_t = o_t < T
    p = (i_b.to(tl.int64) * T * H + i_h) * D + o_t[:, None].to(tl.int64) * (H * D) + o_d[None, :]
    p_A = A + (i_b.to(tl.int64) * T * H + i_h) * BT + o_t[:, None].to(tl.int64) * (H * BT) + tl.arange(0, BT)[None, :]
    b_A = tl.load(p_A, mask=m_t[:, None], other=0.0)
    b_v = tl.load(v + p, mask=m_t[:, None], other=0.0)
    b_o = tl.dot(b_A.to(b_v.dtype), b_v)
    tl.store(o + p, b_o.to(o.dtype.element_ty), mask=m_t[:, None])


def before(q, k, v, o):
    B, T, H, D = q.shape
    A = torch.empty(B, T, H, BT, dtype=torch.float32, device=q.device)
    grid = (triton.cdiv(T, BT), B * H)
    before_kernel_A[grid](q, k, A, T, D ** -0.5, H=H, D=D, BT=BT)
    before_kernel_o[grid](A, v, o, T, H=H, D=D, BT=BT)


@triton.jit
def after_kernel_A(q, k, A, T, scale, H: tl.constexpr, D: tl.constexpr, BT: tl.constexpr):
    i_t, i_bh = tl.program_id(0), tl.program_id(1)
    i_b, i_h = i_bh // H, i_bh % H
    o_t = i_t * BT + tl.arange(0, BT)
    o_d = tl.arange(0, D)
    m_t = o_t < T
    p = (i_b.to(tl.int64) * T * H + i_h) * D + o_t[:, None].to(tl.int64) * (H * D) + o_d[None, :]
    b_q = tl.load(q + p, mask=m_t[:, None], other=0.0)
    b_k = tl.load(k + p, mask=m_t[:, None], other=0.0)
    b_A = tl.dot(b_q, tl.trans(b_k)) * scale
    b_A = tl.where(o_t[:, None] >= o_t[None, :], b_A, 0.0)
    p_A = A + (i_b.to(tl.int64) * T * H + i_h) * BT + o_t[:, None].to(tl.int64) * (H * BT) + tl.arange(0, BT)[None, :]
    tl.store(p_A, b_A.to(q.dtype.element_ty), mask=m_t[:, None])


@triton.jit
def after_kernel_o(A, v, o, T, H: tl.constexpr, D: tl.constexpr, BT: tl.constexpr):
    i_t, i_bh = tl.program_id(0), tl.program_id(1)
    i_b, i_h = i_bh // H, i_bh % H
    o_t = i_t * BT + tl.arange(0, BT)
    o_d = tl.arange(0, D)
    m_t = o_t < T
    p = (i_b.to(tl.int64) * T * H + i_h) * D + o_t[:, None].to(tl.int64) * (H * D) + o_d[None, :]
    p_A = A + (i_b.to(tl.int64) * T * H + i_h) * BT + o_t[:, None].to(tl.int64) * (H * BT) + tl.arange(0, BT)[None, :]
    b_A = tl.load(p_A, mask=m_t[:, None], other=0.0)
    b_v = tl.load(v + p, mask=m_t[:, None], other=0.0)
    b_o = tl.dot(b_A, b_v)
    tl.store(o + p, b_o.to(o.dtype.element_ty), mask=m_t[:, None])


def after(q, k, v, o):
    B, T, H, D = q.shape
    A = torch.empty(B, T, H, BT, dtype=q.dtype, device=q.device)
    grid = (triton.cdiv(T, BT), B * H)
    after_kernel_A[grid](q, k, A, T, D ** -0.5, H=H, D=D, BT=BT)
    after_kernel_o[grid](A, v, o, T, H=H, D=D, BT=BT)
