"""tensor-core-scan: a `tl.cumsum` along the chunk feeding a projection → `tl.dot(tril_ones, x)`.

Harness format: docs/harness.md. The before/after launchers are the template shown.

A chunk-local prefix sum of 16-bit features followed by a projection, in one kernel: for each
chunk of BT tokens, s = cumsum_t(x) (running sums within the chunk) and o = s @ W. The
"before" scans the upcast tile with `tl.cumsum(axis=0)` (a cross-warp scan on CUDA cores,
then a layout change for the dot). The "after" multiplies the fp16 tile by a constant
lower-triangular ones matrix on the tensor cores with an fp32 accumulator: exact products,
fp32 sums, the same precision as the fp32 scan.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(B=2, T=150, D=32),               # T not a multiple of the chunk
    "tokens": dict(B=8, T=8192, D=128),
    "long": dict(B=2, T=131072, D=64),
    "huge": dict(B=1, T=16800000, D=128),         # past 2**31 elements: offsets must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
FIXED = ("D",)
DTYPES = ("float16",)                             # bf16 tl.dot is wrong under the CPU interpreter
TOLERANCES = {"float16": (3e-2, 1e-2)}            # s rounded to fp16 for the projection on both sides
BT = 64


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(shape["B"], shape["T"], shape["D"], generator=g).to(dtype).to(device)
    w = (torch.randn(shape["D"], shape["D"], generator=g) / (8 * shape["D"] ** 0.5)).to(dtype).to(device)
    return x, w


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["B"], shape["T"], shape["D"], dtype=dtype, device=device),)


def reference(x, w):
    B, T, D = x.shape
    NT = -(-T // BT)
    xs = torch.nn.functional.pad(x, (0, 0, 0, NT * BT - T)).view(B, NT, BT, D).cumsum(dim=2)
    return ((xs.view(B, NT * BT, D)[:, :T]) @ w,)


def bytes_moved(shape, dtype):
    e = torch.tensor([], dtype=dtype).element_size()
    return e * (2 * shape["B"] * shape["T"] * shape["D"] + shape["D"] * shape["D"])


def flops(shape, dtype):
    return 2 * shape["B"] * shape["T"] * shape["D"] * shape["D"]


@triton.jit
def before_kernel(x, w, o, T, D: tl.constexpr, BT: tl.constexpr):
    i_t, i_b = tl.program_id(0), tl.program_id(1)
    o_t = i_t * BT + tl.arange(0, BT)
    o_d = tl.arange(0, D)
    m_t = o_t < T
    p = i_b.to(tl.int64) * T * D + o_t[:, None].to(tl.int64) * D + o_d[None, :]
    b_x = tl.load(x + p, mask=m_t[:, None], other=0.0)
    b_w = tl.load(w + o_d[:, None] * D + o_d[None, :])
    b_s = tl.cumsum(b_x.to(tl.float32), axis=0)
    b_o = tl.dot(b_s.to(b_w.dtype), b_w)
    tl.store(o + p, b_o.to(o.dtype.element_ty), mask=m_t[:, None])


def before(x, w, o):
    B, T, D = x.shape
    before_kernel[(triton.cdiv(T, BT), B)](x, w, o, T, D=D, BT=BT)


@triton.jit
def after_kernel(x, w, o, T, D: tl.constexpr, BT: tl.constexpr):
    i_t, i_b = tl.program_id(0), tl.program_id(1)
    o_i = tl.arange(0, BT)
    o_t = i_t * BT + o_i
    o_d = tl.arange(0, D)
    m_t = o_t < T
    p = i_b.to(tl.int64) * T * D + o_t[:, None].to(tl.int64) * D + o_d[None, :]
    b_x = tl.load(x + p, mask=m_t[:, None], other=0.0)
    b_w = tl.load(w + o_d[:, None] * D + o_d[None, :])
    m_s = tl.where(o_i[:, None] >= o_i[None, :], 1.0, 0.0).to(b_x.dtype)
    b_s = tl.dot(m_s, b_x)  # fp16 x exact ones, fp32 accumulation: the fp32 prefix sum
    b_o = tl.dot(b_s.to(b_w.dtype), b_w)
    tl.store(o + p, b_o.to(o.dtype.element_ty), mask=m_t[:, None])


def after(x, w, o):
    B, T, D = x.shape
    after_kernel[(triton.cdiv(T, BT), B)](x, w, o, T, D=D, BT=BT)
