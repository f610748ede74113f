"""decode_attention + expert: GQA head packing (one program per KV head, its query heads as a tl.dot tile: KV read once), KV split over programs, exp2."""

import torch
import triton
import triton.language as tl

from benchmarks.evidence.verify_suite.kernels.decode_attention import *  # noqa: F401,F403  the harness (kernels/decode_attention.py, __all__)


@triton.jit
def decode_attention_kernel(q_ptr, k_ptr, v_ptr, o_part_ptr, lse_part_ptr, S, qk_scale,
                            stride_qb, stride_qh, stride_kb, stride_kh, stride_ks, HQ,
                            NUM_SPLITS: tl.constexpr, GROUP: tl.constexpr, BLOCK_H: tl.constexpr, D: tl.constexpr,
                            BLOCK_N: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    kv_h = tl.program_id(1)
    split_id = tl.program_id(2)
    split_len = tl.cdiv(tl.cdiv(S, NUM_SPLITS), BLOCK_N) * BLOCK_N
    lo = split_id * split_len
    hi = tl.minimum(lo + split_len, S)
    heads = kv_h * GROUP + tl.arange(0, BLOCK_H)
    m_h = tl.arange(0, BLOCK_H) < GROUP
    offs_d = tl.arange(0, D)
    offs_n = tl.arange(0, BLOCK_N)
    q = tl.load(q_ptr + b * stride_qb + heads[:, None] * stride_qh + offs_d[None, :], mask=m_h[:, None], other=0.0)
    k_base = k_ptr + b * stride_kb + kv_h * stride_kh
    v_base = v_ptr + b * stride_kb + kv_h * stride_kh
    m = tl.full((BLOCK_H,), float("-inf"), dtype=tl.float32)
    l = tl.zeros((BLOCK_H,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_H, D), dtype=tl.float32)
    for start in range(lo, hi, BLOCK_N):
        n = start + offs_n
        mask = n < hi
        kv_off = n[:, None].to(tl.int64) * stride_ks + offs_d[None, :]
        k = tl.load(k_base + kv_off, mask=mask[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k)) * qk_scale  # [BLOCK_H, BLOCK_N], log2 units
        s = tl.where(mask[None, :], s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        alpha = tl.exp2(m - m_new)
        p = tl.exp2(s - m_new[:, None])
        v = tl.load(v_base + kv_off, mask=mask[:, None], other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        l = l * alpha + tl.sum(p, axis=1)
        m = m_new
    part = (b * HQ + heads) * NUM_SPLITS + split_id
    tl.store(o_part_ptr + part[:, None] * D + offs_d[None, :], acc / tl.maximum(l, 1e-30)[:, None], mask=m_h[:, None])
    tl.store(lse_part_ptr + part, m + tl.log2(l), mask=m_h)  # log2 units


@triton.jit
def decode_attention_merge_kernel(o_part_ptr, lse_part_ptr, o_ptr, stride_ob, stride_oh,
                                  NUM_SPLITS: tl.constexpr, BLOCK_S: tl.constexpr, D: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    h = tl.program_id(1)
    row = b * tl.num_programs(1) + h
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, D)
    lse = tl.load(lse_part_ptr + row * NUM_SPLITS + offs_s, mask=offs_s < NUM_SPLITS, other=float("-inf"))
    w = tl.exp2(lse - tl.max(lse, axis=0))
    o = tl.load(o_part_ptr + (row * NUM_SPLITS + offs_s)[:, None] * D + offs_d[None, :],
                mask=(offs_s < NUM_SPLITS)[:, None], other=0.0)
    out = tl.sum(w[:, None] * o, axis=0) / tl.sum(w, axis=0)
    tl.store(o_ptr + b * stride_ob + h * stride_oh + offs_d, out.to(o_ptr.dtype.element_ty))


def _num_sms(device):
    return torch.cuda.get_device_properties(device).multi_processor_count if device.type == "cuda" else 4


def run(q, k, v, o):
    B, HQ, D = q.shape
    HKV, S = k.shape[1], k.shape[2]
    GROUP = HQ // HKV
    BLOCK_N = 64
    splits = max(1, min(triton.cdiv(S, 8 * BLOCK_N), triton.cdiv(2 * _num_sms(q.device), B * HKV)))
    o_part = torch.empty(B, HQ, splits, D, dtype=torch.float32, device=q.device)
    lse_part = torch.empty(B, HQ, splits, dtype=torch.float32, device=q.device)
    decode_attention_kernel[(B, HKV, splits)](q, k, v, o_part, lse_part, S, D ** -0.5 * 1.4426950408889634,
                                              q.stride(0), q.stride(1), k.stride(0), k.stride(1), k.stride(2), HQ,
                                              NUM_SPLITS=splits, GROUP=GROUP, BLOCK_H=max(16, GROUP), D=D,
                                              BLOCK_N=BLOCK_N, num_warps=4, num_stages=3)
    decode_attention_merge_kernel[(B, HQ)](o_part, lse_part, o, o.stride(0), o.stride(1), NUM_SPLITS=splits,
                                           BLOCK_S=triton.next_power_of_2(splits), D=D)
