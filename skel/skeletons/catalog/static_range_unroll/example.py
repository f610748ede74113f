"""static-range-unroll: a depthwise causal conv1d (Mamba / Canon short convolution) whose
loop over the W = 4 taps is a plain `range` → `tl.static_range`.

x is [B, T, D], the weight [D, W], y[b, t, d] = silu(bias[d] + sum_i w[d, i] * x[b, t - W + 1 + i, d]).
Harness format: docs/harness.md. The before/after launchers are the template shown.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(B=2, T=37, D=100, W=4),          # T, D not multiples of the blocks
    "mamba": dict(B=8, T=4096, D=4096, W=4),      # Mamba-2 / GDN short conv over d_inner
    "long": dict(B=1, T=65536, D=2048, W=4),
    "huge": dict(B=1, T=540000, D=4096, W=4),     # past 2**31 elements: offsets must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
FIXED = ("W",)
DTYPES = ("bfloat16", "float32")
TOLERANCES = {"bfloat16": (2e-2, 2e-2), "float32": (1e-5, 1e-5)}
BT, BD = 64, 128


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device="cpu").manual_seed(seed)
    B, T, D, W = shape["B"], shape["T"], shape["D"], shape["W"]
    x = torch.randn(B, T, D, generator=g).to(dtype).to(device)
    w = (torch.randn(D, W, generator=g) / W ** 0.5).to(dtype).to(device)
    b = torch.randn(D, generator=g).to(dtype).to(device)
    return x, w, b


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["B"], shape["T"], shape["D"], dtype=dtype, device=device),)


def reference(x, w, b):
    T, D, W = x.shape[1], x.shape[2], w.shape[1]
    y = torch.empty_like(x)
    for d in range(0, D, 256):  # channels are independent: chunks keep the CHECK_ONLY shape's temporaries small
        xc = x[:, :, d:d + 256].transpose(1, 2)
        yc = torch.nn.functional.conv1d(xc, w[d:d + 256].unsqueeze(1), b[d:d + 256], padding=W - 1, groups=xc.shape[1])
        y[:, :, d:d + 256] = torch.nn.functional.silu(yc[..., :T]).transpose(1, 2)
    return (y,)


def bytes_moved(shape, dtype):
    e = torch.tensor([], dtype=dtype).element_size()
    return 2 * shape["B"] * shape["T"] * shape["D"] * e + shape["D"] * (shape["W"] + 1) * e


def flops(shape, dtype):
    return shape["B"] * shape["T"] * shape["D"] * (2 * shape["W"] + 4)


@triton.jit
def before_kernel(x_ptr, w_ptr, b_ptr, y_ptr, T, D, W: tl.constexpr, BT: tl.constexpr, BD: tl.constexpr):
    i_d, i_t, i_b = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    o_d = i_d * BD + tl.arange(0, BD)
    o_t = i_t * BT + tl.arange(0, BT)
    m_d = o_d < D
    base = i_b.to(tl.int64) * T * D
    acc = tl.zeros([BT, BD], dtype=tl.float32)
    for i_w in range(W):
        t_src = o_t - (W - 1) + i_w
        m = (t_src[:, None] >= 0) & (t_src[:, None] < T) & m_d[None, :]
        b_x = tl.load(x_ptr + base + t_src[:, None].to(tl.int64) * D + o_d[None, :], mask=m, other=0.0)
        b_w = tl.load(w_ptr + o_d * W + i_w, mask=m_d, other=0.0)
        acc += b_x.to(tl.float32) * b_w.to(tl.float32)[None, :]
    acc += tl.load(b_ptr + o_d, mask=m_d, other=0.0).to(tl.float32)[None, :]
    acc = acc * tl.sigmoid(acc)
    m_y = (o_t[:, None] < T) & m_d[None, :]
    tl.store(y_ptr + base + o_t[:, None].to(tl.int64) * D + o_d[None, :], acc.to(y_ptr.dtype.element_ty), mask=m_y)


def before(x, w, b, y):
    B, T, D = x.shape
    before_kernel[(triton.cdiv(D, BD), triton.cdiv(T, BT), B)](x, w, b, y, T, D, W=w.shape[1], BT=BT, BD=BD)


@triton.jit
def after_kernel(x_ptr, w_ptr, b_ptr, y_ptr, T, D, W: tl.constexpr, BT: tl.constexpr, BD: tl.constexpr):
    i_d, i_t, i_b = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    o_d = i_d * BD + tl.arange(0, BD)
    o_t = i_t * BT + tl.arange(0, BT)
    m_d = o_d < D
    base = i_b.to(tl.int64) * T * D
    acc = tl.zeros([BT, BD], dtype=tl.float32)
    for i_w in tl.static_range(W):  # unrolled: the W shifted loads issue back to back
        t_src = o_t - (W - 1) + i_w
        m = (t_src[:, None] >= 0) & (t_src[:, None] < T) & m_d[None, :]
        b_x = tl.load(x_ptr + base + t_src[:, None].to(tl.int64) * D + o_d[None, :], mask=m, other=0.0)
        b_w = tl.load(w_ptr + o_d * W + i_w, mask=m_d, other=0.0)
        acc += b_x.to(tl.float32) * b_w.to(tl.float32)[None, :]
    acc += tl.load(b_ptr + o_d, mask=m_d, other=0.0).to(tl.float32)[None, :]
    acc = acc * tl.sigmoid(acc)
    m_y = (o_t[:, None] < T) & m_d[None, :]
    tl.store(y_ptr + base + o_t[:, None].to(tl.int64) * D + o_d[None, :], acc.to(y_ptr.dtype.element_ty), mask=m_y)


def after(x, w, b, y):
    B, T, D = x.shape
    after_kernel[(triton.cdiv(D, BD), triton.cdiv(T, BT), B)](x, w, b, y, T, D, W=w.shape[1], BT=BT, BD=BD)
