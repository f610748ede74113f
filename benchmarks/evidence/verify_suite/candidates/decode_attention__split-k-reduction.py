"""decode_attention + split-k-reduction: split the KV sequence over a third grid axis (NUM_SPLITS partials with their lse), merged by a second kernel."""

import torch
import triton
import triton.language as tl

from benchmarks.evidence.verify_suite.kernels.decode_attention import *  # noqa: F401,F403  the harness (kernels/decode_attention.py, __all__)


@triton.jit
def decode_attention_kernel(q_ptr, k_ptr, v_ptr, o_part_ptr, lse_part_ptr, S, sm_scale,
                            stride_qb, stride_qh, stride_kb, stride_kh, stride_ks,
                            NUM_SPLITS: tl.constexpr, GROUP: tl.constexpr, D: tl.constexpr, BLOCK_N: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    h = tl.program_id(1)
    split_id = tl.program_id(2)
    HQ = tl.num_programs(1)
    kv_h = h // GROUP
    split_len = tl.cdiv(tl.cdiv(S, NUM_SPLITS), BLOCK_N) * BLOCK_N
    lo = split_id * split_len
    hi = tl.minimum(lo + split_len, S)
    offs_d = tl.arange(0, D)
    offs_n = tl.arange(0, BLOCK_N)
    q = tl.load(q_ptr + b * stride_qb + h * stride_qh + offs_d).to(tl.float32)
    k_base = k_ptr + b * stride_kb + kv_h * stride_kh
    v_base = v_ptr + b * stride_kb + kv_h * stride_kh
    m = float("-inf")
    l = 0.0
    acc = tl.zeros((D,), dtype=tl.float32)
    for start in range(lo, hi, BLOCK_N):
        n = start + offs_n
        mask = n < hi
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
    part = (b * HQ + h) * NUM_SPLITS + split_id
    tl.store(o_part_ptr + part * D + offs_d, acc / tl.maximum(l, 1e-30))
    tl.store(lse_part_ptr + part, m + tl.log(l))


@triton.jit
def decode_attention_merge_kernel(o_part_ptr, lse_part_ptr, o_ptr, stride_ob, stride_oh,
                                  NUM_SPLITS: tl.constexpr, BLOCK_S: tl.constexpr, D: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    h = tl.program_id(1)
    row = b * tl.num_programs(1) + h
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, D)
    lse = tl.load(lse_part_ptr + row * NUM_SPLITS + offs_s, mask=offs_s < NUM_SPLITS, other=float("-inf"))
    w = tl.exp(lse - tl.max(lse, axis=0))
    o = tl.load(o_part_ptr + (row * NUM_SPLITS + offs_s)[:, None] * D + offs_d[None, :],
                mask=(offs_s < NUM_SPLITS)[:, None], other=0.0)
    out = tl.sum(w[:, None] * o, axis=0) / tl.sum(w, axis=0)
    tl.store(o_ptr + b * stride_ob + h * stride_oh + offs_d, out.to(o_ptr.dtype.element_ty))


def _num_sms(device):
    return torch.cuda.get_device_properties(device).multi_processor_count if device.type == "cuda" else 4


def run(q, k, v, o):
    B, HQ, D = q.shape
    HKV, S = k.shape[1], k.shape[2]
    BLOCK_N = 64
    splits = max(1, min(triton.cdiv(S, 4 * BLOCK_N), triton.cdiv(2 * _num_sms(q.device), B * HQ)))
    o_part = torch.empty(B, HQ, splits, D, dtype=torch.float32, device=q.device)
    lse_part = torch.empty(B, HQ, splits, dtype=torch.float32, device=q.device)
    decode_attention_kernel[(B, HQ, splits)](q, k, v, o_part, lse_part, S, D ** -0.5, q.stride(0), q.stride(1),
                                             k.stride(0), k.stride(1), k.stride(2), NUM_SPLITS=splits,
                                             GROUP=HQ // HKV, D=D, BLOCK_N=BLOCK_N)
    decode_attention_merge_kernel[(B, HQ)](o_part, lse_part, o, o.stride(0), o.stride(1), NUM_SPLITS=splits,
                                           BLOCK_S=triton.next_power_of_2(splits), D=D)
