"""flash-decoding-two-stage: one program per (batch, head) decode attention → split-KV stage 1 + an lse combine.

Harness format: docs/harness.md. The before/after launchers are the template shown.
Single-query (decode) softmax attention over a (batch * heads, T, D) KV cache. The before
runs one program per (batch, head) over the whole sequence; the after splits the sequence
over about two programs per SM (from the SM count and the grid, never more splits than
BS-token blocks), each writing a normalised partial output and its log-sum-exp, and a
second kernel merges the splits. A split that gets no tokens (T short against the split
count) writes lse = -inf and a zero output, so the merge gives it zero weight, never NaN.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(BH=3, T=1000, D=64),         # on the CPU: 5 splits of 256 tokens, the last one empty
    "short": dict(BH=2, T=100, D=64),         # T < 2 * BS: 2 splits, the second one partial
    "long": dict(BH=8, T=131072, D=128),      # decode, few heads, long cache: 8 programs for 132 SMs
    "heads": dict(BH=32, T=32768, D=128),
    "batch": dict(BH=1024, T=4096, D=128),    # does not apply: the unsplit grid already fills the GPU
    "huge": dict(BH=64, T=270000, D=128),     # past 2**31 elements: i_bh * T * D must be int64
}
CPU_SHAPES = ("tiny", "short")
CHECK_ONLY = ("huge",)
FIXED = ("D",)
DTYPES = ("bfloat16", "float16")
TOLERANCES = {"bfloat16": (1e-4, 8e-3), "float16": (1e-5, 1e-3)}  # fp32 softmax, one rounding of o
BS = 64


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    BH, T, D = shape["BH"], shape["T"], shape["D"]
    q = torch.randn(BH, D, generator=g, device=device).to(dtype)
    k = torch.randn(BH, T, D, generator=g, device=device).to(dtype)
    v = torch.randn(BH, T, D, generator=g, device=device).to(dtype)
    return q, k, v


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["BH"], shape["D"], dtype=dtype, device=device),)


def reference(q, k, v):
    p = torch.softmax(torch.einsum("bd,btd->bt", q, k) * q.shape[-1] ** -0.5, dim=-1)
    return (torch.einsum("bt,btd->bd", p, v),)


def bytes_moved(shape, dtype):
    BH, T, D = shape["BH"], shape["T"], shape["D"]
    return (2 * BH * T * D + 2 * BH * D) * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 4 * shape["BH"] * shape["T"] * shape["D"]


@triton.jit
def before_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq_len, scale, D: tl.constexpr, BS: tl.constexpr):
    i_bh = tl.program_id(0).to(tl.int64)
    o_d = tl.arange(0, D)
    b_q = tl.load(q_ptr + i_bh * D + o_d).to(tl.float32) * scale
    b_m = float("-inf")
    b_l = 0.0
    b_o = tl.zeros([D], dtype=tl.float32)
    for i_s in range(0, seq_len, BS):
        o_s = i_s + tl.arange(0, BS)
        m_s = o_s < seq_len
        b_k = tl.load(k_ptr + i_bh * seq_len * D + o_s[:, None] * D + o_d[None, :], mask=m_s[:, None], other=0.0)
        b_v = tl.load(v_ptr + i_bh * seq_len * D + o_s[:, None] * D + o_d[None, :], mask=m_s[:, None], other=0.0)
        b_s = tl.where(m_s, tl.sum(b_q[None, :] * b_k, 1), float("-inf"))
        b_m_new = tl.maximum(b_m, tl.max(b_s, 0))
        b_r = tl.exp(b_m - b_m_new)
        b_p = tl.exp(b_s - b_m_new)
        b_l = b_l * b_r + tl.sum(b_p, 0)
        b_o = b_o * b_r + tl.sum(b_p[:, None] * b_v, 0)
        b_m = b_m_new
    tl.store(o_ptr + i_bh * D + o_d, (b_o / b_l).to(o_ptr.dtype.element_ty))


def before(q, k, v, o):
    BH, T, D = k.shape
    before_kernel[(BH,)](q, k, v, o, T, D ** -0.5, D=D, BS=BS)


@triton.jit
def after_kernel(q_ptr, k_ptr, v_ptr, o_part_ptr, lse_part_ptr, seq_len, scale, num_splits,
                 D: tl.constexpr, BS: tl.constexpr):
    # grid = (batch * heads, num_splits); after_merge combines the num_splits partials by their lse
    i_bh = tl.program_id(0).to(tl.int64)
    split_id = tl.program_id(1)
    split_len = tl.cdiv(tl.cdiv(seq_len, num_splits), BS) * BS
    start = split_id * split_len
    end = tl.minimum(start + split_len, seq_len)
    o_d = tl.arange(0, D)
    b_q = tl.load(q_ptr + i_bh * D + o_d).to(tl.float32) * scale
    b_m = float("-inf")
    b_l = 0.0
    b_o = tl.zeros([D], dtype=tl.float32)
    for i_s in range(start, end, BS):
        o_s = i_s + tl.arange(0, BS)
        m_s = o_s < end
        b_k = tl.load(k_ptr + i_bh * seq_len * D + o_s[:, None] * D + o_d[None, :], mask=m_s[:, None], other=0.0)
        b_v = tl.load(v_ptr + i_bh * seq_len * D + o_s[:, None] * D + o_d[None, :], mask=m_s[:, None], other=0.0)
        b_s = tl.where(m_s, tl.sum(b_q[None, :] * b_k, 1), float("-inf"))
        b_m_new = tl.maximum(b_m, tl.max(b_s, 0))
        b_r = tl.exp(b_m - b_m_new)
        b_p = tl.exp(b_s - b_m_new)
        b_l = b_l * b_r + tl.sum(b_p, 0)
        b_o = b_o * b_r + tl.sum(b_p[:, None] * b_v, 0)
        b_m = b_m_new
    part = i_bh * num_splits + split_id
    b_l = tl.where(b_l > 0, b_l, 1.0)  # a split past the end of T: o = 0, lse = -inf, zero weight in the merge
    tl.store(o_part_ptr + part * D + o_d, b_o / b_l)
    tl.store(lse_part_ptr + part, b_m + tl.log(b_l))


@triton.jit
def after_merge(o_part_ptr, lse_part_ptr, o_ptr, num_splits, D: tl.constexpr, BLOCK_SPLITS: tl.constexpr):
    i_bh = tl.program_id(0).to(tl.int64)
    o_p = tl.arange(0, BLOCK_SPLITS)
    m_p = o_p < num_splits
    o_d = tl.arange(0, D)
    lse = tl.load(lse_part_ptr + i_bh * num_splits + o_p, mask=m_p, other=float("-inf"))
    w = tl.exp(lse - tl.max(lse, 0))
    b_o = tl.load(o_part_ptr + (i_bh * num_splits + o_p)[:, None] * D + o_d[None, :], mask=m_p[:, None], other=0.0)
    tl.store(o_ptr + i_bh * D + o_d, (tl.sum(w[:, None] * b_o, 0) / tl.sum(w, 0)).to(o_ptr.dtype.element_ty))


def after(q, k, v, o):
    BH, T, D = k.shape
    sms = torch.cuda.get_device_properties(q.device).multi_processor_count if q.is_cuda else 8
    num_splits = max(1, min(triton.cdiv(T, BS), 2 * sms // BH))
    o_part = torch.empty(BH, num_splits, D, dtype=torch.float32, device=q.device)
    lse_part = torch.empty(BH, num_splits, dtype=torch.float32, device=q.device)
    after_kernel[(BH, num_splits)](q, k, v, o_part, lse_part, T, D ** -0.5, num_splits, D=D, BS=BS)
    after_merge[(BH,)](o_part, lse_part, o, num_splits, D=D, BLOCK_SPLITS=triton.next_power_of_2(num_splits))
