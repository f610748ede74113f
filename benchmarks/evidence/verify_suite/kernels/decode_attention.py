"""GQA decode attention, naive: one program per (batch, query head), loop over the KV cache in
BLOCK_N blocks with an online softmax; each query head re-reads its KV head's cache.

q [B, HQ, D], k/v [B, HKV, S, D] -> o [B, HQ, D];  o = softmax(q k^T * D**-0.5) v
"""

import torch
import triton
import triton.language as tl

__all__ = ["SHAPES", "CPU_SHAPES", "FIXED", "DTYPES", "CPU_DTYPE", "TOLERANCES", "make_inputs", "make_outputs",
           "reference", "bytes_moved", "flops"]

SHAPES = {
    "tiny": dict(B=2, HQ=8, HKV=2, S=100, D=32),
    "batch": dict(B=32, HQ=32, HKV=4, S=4096, D=128),
    "long": dict(B=2, HQ=32, HKV=4, S=32768, D=128),
}
CPU_SHAPES = ("tiny",)
FIXED = ("D", "HQ", "HKV")
DTYPES = ("bfloat16", "float16", "float32")
CPU_DTYPE = "float32"
TOLERANCES = {"bfloat16": (2e-2, 2e-2), "float16": (2e-3, 2e-3), "float32": (1e-4, 1e-4)}


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device="cpu").manual_seed(seed)
    B, HQ, HKV, S, D = (shape[k] for k in ("B", "HQ", "HKV", "S", "D"))
    q = torch.randn(B, HQ, D, generator=g).to(dtype).to(device)
    k = torch.randn(B, HKV, S, D, generator=g).to(dtype).to(device)
    v = torch.randn(B, HKV, S, D, generator=g).to(dtype).to(device)
    return (q, k, v)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["B"], shape["HQ"], shape["D"], dtype=dtype, device=device),)


def reference(q, k, v):
    B, HQ, D = q.shape
    G = HQ // k.shape[1]
    kk = k.repeat_interleave(G, dim=1)
    vv = v.repeat_interleave(G, dim=1)
    p = torch.softmax(torch.einsum("bhd,bhsd->bhs", q, kk) * D ** -0.5, dim=-1)
    return (torch.einsum("bhs,bhsd->bhd", p, vv),)


def bytes_moved(shape, dtype):
    e = torch.tensor([], dtype=dtype).element_size()
    return e * (2 * shape["B"] * shape["HKV"] * shape["S"] * shape["D"] + 2 * shape["B"] * shape["HQ"] * shape["D"])


def flops(shape, dtype):
    return 4 * shape["B"] * shape["HQ"] * shape["S"] * shape["D"]


@triton.jit
def decode_attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, S, sm_scale,
                            stride_qb, stride_qh, stride_kb, stride_kh, stride_ks, stride_ob, stride_oh,
                            GROUP: tl.constexpr, D: tl.constexpr, BLOCK_N: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    h = tl.program_id(1)
    kv_h = h // GROUP
    offs_d = tl.arange(0, D)
    offs_n = tl.arange(0, BLOCK_N)
    q = tl.load(q_ptr + b * stride_qb + h * stride_qh + offs_d).to(tl.float32)
    k_base = k_ptr + b * stride_kb + kv_h * stride_kh
    v_base = v_ptr + b * stride_kb + kv_h * stride_kh
    m = float("-inf")
    l = 0.0
    acc = tl.zeros((D,), dtype=tl.float32)
    for start in range(0, S, BLOCK_N):
        n = start + offs_n
        mask = n < S
        kv_off = n[:, None].to(tl.int64) * stride_ks + offs_d[None, :]
        k = tl.load(k_base + kv_off, mask=mask[:, None], other=0.0).to(tl.float32)
        s = tl.sum(q[None, :] * k, axis=1) * sm_scale
        s = tl.where(mask, s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=0))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new)
        v = tl.load(v_base + kv_off, mask=mask[:, None], other=0.0).to(tl.float32)
        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
        l = l * alpha + tl.sum(p, axis=0)
        m = m_new
    tl.store(o_ptr + b * stride_ob + h * stride_oh + offs_d, (acc / l).to(o_ptr.dtype.element_ty))


def run(q, k, v, o):
    B, HQ, D = q.shape
    HKV, S = k.shape[1], k.shape[2]
    decode_attention_kernel[(B, HQ)](q, k, v, o, S, D ** -0.5, q.stride(0), q.stride(1), k.stride(0), k.stride(1),
                                     k.stride(2), o.stride(0), o.stride(1), GROUP=HQ // HKV, D=D, BLOCK_N=64)
