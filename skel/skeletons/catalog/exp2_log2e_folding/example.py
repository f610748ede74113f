"""exp2-log2e-folding: attention forward with `tl.exp` → `tl.exp2` and log2(e) folded into the softmax scale.

The exp is on the critical path in the attention inner loop (one exp per score, next to
a [BLOCK_M, D] x [D, BLOCK_N] tensor-core dot), which is where the saved multiply shows.
Harness format: docs/harness.md. The before/after launchers are the template shown.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(BH=3, T=150, D=16),          # T not a multiple of BLOCK_M / BLOCK_N
    "d64": dict(BH=256, T=4096, D=64),        # B=8, H=32: head dim 64, where exp throughput limits attention
    "d128": dict(BH=128, T=4096, D=128),      # head dim 128: twice the dot work per exp, so less to gain
    "long": dict(BH=32, T=16384, D=64),
    "huge": dict(BH=65535, T=520, D=64),      # past 2**31 elements: the per-head base must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
FIXED = ("D",)
DTYPES = ("float16",)  # bf16 tl.dot is wrong in the CPU interpreter; fp32 dots would run in tf32
TOLERANCES = {"float16": (2e-3, 2e-3)}
BLOCK_M, BLOCK_N = 128, 64


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    q, k, v = (torch.randn(shape["BH"], shape["T"], shape["D"], generator=g).to(dtype).to(device) for _ in range(3))
    return q, k, v, shape["D"] ** -0.5


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["BH"], shape["T"], shape["D"], dtype=dtype, device=device),)


def reference(q, k, v, sm_scale):
    o = torch.empty_like(q)
    step = max(1, 2**26 // q.shape[1] ** 2)  # heads at a time: bounds the [T, T] scores in memory
    for i in range(0, q.shape[0], step):
        s = torch.matmul(q[i:i + step], k[i:i + step].transpose(1, 2)) * sm_scale
        o[i:i + step] = torch.matmul(torch.softmax(s, dim=-1), v[i:i + step])
    return (o,)


def bytes_moved(shape, dtype):
    return 4 * shape["BH"] * shape["T"] * shape["D"] * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 4 * shape["BH"] * shape["T"] ** 2 * shape["D"]


@triton.jit
def before_kernel(q_ptr, k_ptr, v_ptr, o_ptr, sm_scale, T, D: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    base = tl.program_id(1).to(tl.int64) * T * D
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    d = tl.arange(0, D)
    q = tl.load(q_ptr + base + rows[:, None] * D + d[None, :], mask=rows[:, None] < T, other=0.0)
    m = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    for start in range(0, T, BLOCK_N):
        kv = start + cols
        k = tl.load(k_ptr + base + kv[None, :] * D + d[:, None], mask=kv[None, :] < T, other=0.0)
        v = tl.load(v_ptr + base + kv[:, None] * D + d[None, :], mask=kv[:, None] < T, other=0.0)
        qk = tl.where(kv[None, :] < T, tl.dot(q, k) * sm_scale, float("-inf"))
        m_new = tl.maximum(m, tl.max(qk, axis=1))
        p = tl.exp(qk - m_new[:, None])
        alpha = tl.exp(m - m_new)
        l = l * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m = m_new
    o = acc / l[:, None]
    tl.store(o_ptr + base + rows[:, None] * D + d[None, :], o.to(o_ptr.dtype.element_ty), mask=rows[:, None] < T)


def before(q, k, v, sm_scale, o):
    BH, T, D = q.shape
    before_kernel[(triton.cdiv(T, BLOCK_M), BH)](q, k, v, o, sm_scale, T, D=D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                                                 num_warps=4 if D <= 64 else 8, num_stages=3)


@triton.jit
def after_kernel(q_ptr, k_ptr, v_ptr, o_ptr, sm_scale, T, D: tl.constexpr,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    base = tl.program_id(1).to(tl.int64) * T * D
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    d = tl.arange(0, D)
    q = tl.load(q_ptr + base + rows[:, None] * D + d[None, :], mask=rows[:, None] < T, other=0.0)
    qk_scale = sm_scale * 1.4426950408889634  # log2(e) folded into the scale: scores are in log2 units
    m = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    for start in range(0, T, BLOCK_N):
        kv = start + cols
        k = tl.load(k_ptr + base + kv[None, :] * D + d[:, None], mask=kv[None, :] < T, other=0.0)
        v = tl.load(v_ptr + base + kv[:, None] * D + d[None, :], mask=kv[:, None] < T, other=0.0)
        qk = tl.where(kv[None, :] < T, tl.dot(q, k) * qk_scale, float("-inf"))
        m_new = tl.maximum(m, tl.max(qk, axis=1))
        p = tl.exp2(qk - m_new[:, None])
        alpha = tl.exp2(m - m_new)
        l = l * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m = m_new
    o = acc / l[:, None]
    tl.store(o_ptr + base + rows[:, None] * D + d[None, :], o.to(o_ptr.dtype.element_ty), mask=rows[:, None] < T)


def after(q, k, v, sm_scale, o):
    BH, T, D = q.shape
    after_kernel[(triton.cdiv(T, BLOCK_M), BH)](q, k, v, o, sm_scale, T, D=D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                                                num_warps=4 if D <= 64 else 8, num_stages=3)
