# Fixtures for fused-kv-cache-write-quant: KV-cache write kernels whose launcher quantises in
# a separate pass (before: the rows arrive 8-bit; after: the staged cache is quantised) against
# write kernels that quantise in registers, static-scale writes, bf16 caches and cache readers.
# Written for these tests after the shapes of vLLM's reshape_and_cache, sglang's
# out_cache_loc writes and lmdeploy's fill_kv_cache; none is copied.
import torch
import triton
import triton.language as tl


# skel: match fused-kv-cache-write-quant
@triton.jit
def store_kv_slots_kernel(k_q_ptr, v_q_ptr, k_s_ptr, v_s_ptr, k_cache, v_cache, k_scale_cache, v_scale_cache,
                          slot_mapping, stride_t, H: tl.constexpr, D: tl.constexpr):
    # copies rows that a host quantiser already made 8-bit (and their scales) into the slots
    t = tl.program_id(0)
    slot = tl.load(slot_mapping + t).to(tl.int64)
    o_h = tl.arange(0, H)
    o_hd = o_h[:, None] * D + tl.arange(0, D)[None, :]
    tl.store(k_cache + slot * stride_t + o_hd, tl.load(k_q_ptr + t * stride_t + o_hd))
    tl.store(v_cache + slot * stride_t + o_hd, tl.load(v_q_ptr + t * stride_t + o_hd))
    tl.store(k_scale_cache + slot * H + o_h, tl.load(k_s_ptr + t * H + o_h))
    tl.store(v_scale_cache + slot * H + o_h, tl.load(v_s_ptr + t * H + o_h))


def per_token_head_quant_fp8(x):
    """Stands for the library quantiser the launcher calls first: one pass of its own."""
    s = x.float().abs().amax(-1).clamp_min(1e-8) / 448.0
    return (x.float() / s[..., None]).to(torch.float8_e4m3fn), s


def write_kv_fp8(k, v, k_cache, v_cache, k_scale_cache, v_scale_cache, slot_mapping):
    T, H, D = k.shape
    k_q, k_s = per_token_head_quant_fp8(k)
    v_q, v_s = per_token_head_quant_fp8(v)
    store_kv_slots_kernel[(T,)](k_q, v_q, k_s, v_s, k_cache, v_cache, k_scale_cache, v_scale_cache, slot_mapping,
                                H * D, H=H, D=D)


# skel: match fused-kv-cache-write-quant
@triton.jit
def fill_paged_kv_kernel(KStates, VStates, KCaches, VCaches, BlockOffsets, QStartLoc, stride_ks, stride_kcn,
                         stride_kcb, stride_boff, BLOCK: tl.constexpr, BLOCK_H: tl.constexpr,
                         BLOCK_D: tl.constexpr):
    # a paged write through the block table: bf16 rows staged in the cache, quantised after
    batch_id = tl.program_id(0)
    block_id = tl.program_id(1)
    start = tl.load(QStartLoc + batch_id)
    block_off = tl.load(BlockOffsets + batch_id * stride_boff + block_id)
    o_h = tl.arange(0, BLOCK_H)
    o_d = tl.arange(0, BLOCK_D)
    for i in range(BLOCK):
        src = (start + block_id * BLOCK + i) * stride_ks + o_h[:, None] * BLOCK_D + o_d[None, :]
        dst = block_off * stride_kcn + i * stride_kcb + o_h[:, None] * BLOCK_D + o_d[None, :]
        tl.store(KCaches + dst, tl.load(KStates + src))
        tl.store(VCaches + dst, tl.load(VStates + src))


def quantize_kv_cache_int8(cache):
    """Stands for a second pass over the staged cache."""
    s = cache.float().abs().amax(-1, keepdim=True).clamp_min(1e-8) / 127.0
    return (cache.float() / s).round().to(torch.int8), s


def fill_kv_cache_int8(k, v, k_caches, v_caches, block_offsets, q_start_loc, block_size):
    B, nblocks = block_offsets.shape
    fill_paged_kv_kernel[(B, nblocks)](k, v, k_caches, v_caches, block_offsets, q_start_loc, k.stride(0),
                                       k_caches.stride(0), k_caches.stride(1), block_offsets.stride(0),
                                       BLOCK=block_size, BLOCK_H=k.shape[1], BLOCK_D=k.shape[2])
    return quantize_kv_cache_int8(k_caches), quantize_kv_cache_int8(v_caches)


# skel: ok fused-kv-cache-write-quant
# skel: uses fused-kv-cache-write-quant
@triton.jit
def store_kv_quant_fp8_kernel(k_ptr, v_ptr, k_cache, v_cache, k_scale_cache, v_scale_cache, out_cache_loc,
                              stride_t, H: tl.constexpr, D: tl.constexpr, FP8_MAX: tl.constexpr):
    # the technique: per-head absmax scales from the registers, 8-bit rows stored to the slot
    t = tl.program_id(0)
    loc = tl.load(out_cache_loc + t).to(tl.int64)
    o_h = tl.arange(0, H)
    o_hd = o_h[:, None] * D + tl.arange(0, D)[None, :]
    k = tl.load(k_ptr + t * stride_t + o_hd).to(tl.float32)
    v = tl.load(v_ptr + t * stride_t + o_hd).to(tl.float32)
    k_s = tl.maximum(tl.max(tl.abs(k), 1), 1e-8) / FP8_MAX
    v_s = tl.maximum(tl.max(tl.abs(v), 1), 1e-8) / FP8_MAX
    tl.store(k_cache + loc * stride_t + o_hd, (k / k_s[:, None]).to(k_cache.dtype.element_ty))
    tl.store(v_cache + loc * stride_t + o_hd, (v / v_s[:, None]).to(v_cache.dtype.element_ty))
    tl.store(k_scale_cache + loc * H + o_h, k_s)
    tl.store(v_scale_cache + loc * H + o_h, v_s)


@triton.jit
def _quant_int8_asym(val):
    val_min = tl.min(val, 1)
    val_max = tl.max(val, 1)
    scales = (val_max - val_min) / 255
    zeros = -val_min / scales
    return (val / scales[:, None] + zeros[:, None] + 0.5).to(tl.uint8), scales, zeros


# skel: ok fused-kv-cache-write-quant
# skel: uses fused-kv-cache-write-quant
@triton.jit
def fill_kv_int8_asym_kernel(KStates, KCaches, KScalesZeros, slot_mapping, stride_ks, stride_kc,
                             BLOCK_H: tl.constexpr, BLOCK_D: tl.constexpr):
    # the technique through a jit helper: min/max per head, scale and zero point
    t = tl.program_id(0)
    slot = tl.load(slot_mapping + t)
    o_h = tl.arange(0, BLOCK_H)
    o_d = tl.arange(0, BLOCK_D)
    k = tl.load(KStates + t * stride_ks + o_h[:, None] * BLOCK_D + o_d[None, :]).to(tl.float32)
    q, scales, zeros = _quant_int8_asym(k)
    tl.store(KCaches + slot * stride_kc + o_h[:, None] * BLOCK_D + o_d[None, :], q)
    tl.store(KScalesZeros + slot * BLOCK_H * 2 + o_h * 2, scales)
    tl.store(KScalesZeros + slot * BLOCK_H * 2 + o_h * 2 + 1, zeros)


# skel: ok fused-kv-cache-write-quant
@triton.jit
def reshape_and_cache_static_fp8(key_ptr, key_cache_ptr, slot_mapping_ptr, k_scale, stride_key_tok,
                                 stride_cache_slot, n: tl.constexpr, FP8_KV_CACHE: tl.constexpr,
                                 TILE: tl.constexpr):
    # a calibrated per-tensor scale (a bare pointer): quantisation is fused already, no scale to compute
    token_idx = tl.program_id(0)
    slot_idx = tl.load(slot_mapping_ptr + token_idx).to(tl.int64)
    if slot_idx < 0:
        return
    offs = tl.arange(0, TILE)
    x = tl.load(key_ptr + token_idx * stride_key_tok + offs, mask=offs < n)
    if FP8_KV_CACHE:
        x = x / tl.load(k_scale)
    tl.store(key_cache_ptr + slot_idx * stride_cache_slot + offs, x.to(key_cache_ptr.dtype.element_ty),
             mask=offs < n)


def reshape_and_cache(key, key_cache, slot_mapping, k_scale, fp8):
    T, n = key.shape
    reshape_and_cache_static_fp8[(T,)](key, key_cache, slot_mapping, k_scale, key.stride(0), key_cache.stride(0),
                                       n=n, FP8_KV_CACHE=fp8, TILE=triton.next_power_of_2(n))


# skel: ok fused-kv-cache-write-quant
@triton.jit
def set_kv_buffer_bf16(cache_k, cache_v, k_buffer, v_buffer, loc_ptr, stride_t, stride_buf, D: tl.constexpr):
    # a bf16 cache and nothing quantises it: an 8-bit cache is a change of numerics, not this rewrite
    t = tl.program_id(0)
    loc = tl.load(loc_ptr + t)
    o_d = tl.arange(0, D)
    tl.store(k_buffer + loc * stride_buf + o_d, tl.load(cache_k + t * stride_t + o_d))
    tl.store(v_buffer + loc * stride_buf + o_d, tl.load(cache_v + t * stride_t + o_d))


def set_kv_buffer(cache_k, cache_v, k_buffer, v_buffer, loc):
    T, D = cache_k.shape
    set_kv_buffer_bf16[(T,)](cache_k, cache_v, k_buffer, v_buffer, loc, cache_k.stride(0), k_buffer.stride(0), D=D)
    return k_buffer, v_buffer


# skel: ok fused-kv-cache-write-quant
@triton.jit
def per_token_quant_int8_kernel(x_ptr, xq_ptr, scale_ptr, stride_x, N, BLOCK: tl.constexpr):
    # a per-token quantiser with no cache scatter (no slot table): fp8-group-quant's ground
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride_x + cols, mask=cols < N, other=0.0).to(tl.float32)
    s = tl.maximum(tl.max(tl.abs(x), 0), 1e-8) / 127.0
    tl.store(xq_ptr + row * stride_x + cols, (x / s + 0.5).to(tl.int8), mask=cols < N)
    tl.store(scale_ptr + row, s)


# skel: ok fused-kv-cache-write-quant
@triton.jit
def paged_decode_int8_kv(q_ptr, k_cache, k_scales, block_table, out_ptr, stride_bt, stride_kb, seq_len,
                         BLOCK_N: tl.constexpr, D: tl.constexpr):
    # reads the 8-bit cache and dequantises it: the consumer, nothing written to the cache
    pid = tl.program_id(0)
    o_d = tl.arange(0, D)
    q = tl.load(q_ptr + pid * D + o_d).to(tl.float32)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, seq_len, BLOCK_N):
        o_n = start + tl.arange(0, BLOCK_N)
        blk = tl.load(block_table + pid * stride_bt + o_n // BLOCK_N)
        k = tl.load(k_cache + blk[:, None] * stride_kb + (o_n % BLOCK_N)[:, None] * D + o_d[None, :])
        s = tl.load(k_scales + blk * BLOCK_N + o_n % BLOCK_N)
        acc += tl.sum(k.to(tl.float32) * s[:, None] * q[None, :], 1)
    tl.store(out_ptr + pid * BLOCK_N + tl.arange(0, BLOCK_N), acc)


def decode(q, k_cache, k_scales, block_table, seq_len):
    out = torch.empty(q.shape[0], 64, device=q.device)
    q8, qs = per_token_head_quant_fp8(q)
    paged_decode_int8_kv[(q.shape[0],)](q8, k_cache, k_scales, block_table, out, block_table.stride(0),
                                        k_cache.stride(0), seq_len, BLOCK_N=64, D=q.shape[-1])
    return out


# skel: ok fused-kv-cache-write-quant
@triton.jit
def fill_kv_bf16_kernel(KStates, KCaches, BlockOffsets, stride_ks, stride_kcn, BLOCK_D: tl.constexpr):
    # the bf16 branch of a launcher that picks a quantising write kernel for other modes: an alternative
    t = tl.program_id(0)
    block_off = tl.load(BlockOffsets + t)
    o_d = tl.arange(0, BLOCK_D)
    tl.store(KCaches + block_off * stride_kcn + o_d, tl.load(KStates + t * stride_ks + o_d))


def fill_kv(k_states, k_caches, k_scales, block_offsets, quant_policy):
    T, D = k_states.shape
    if quant_policy == 0:
        fill_kv_bf16_kernel[(T,)](k_states, k_caches, block_offsets, k_states.stride(0), k_caches.stride(0),
                                  BLOCK_D=D)
    else:
        _fill_kv_quant_kernel[(T,)](k_states, k_caches, k_scales, block_offsets, k_states.stride(0),
                                    k_caches.stride(0), BLOCK_D=D)


# skel: ok fused-kv-cache-write-quant
# skel: uses fused-kv-cache-write-quant
@triton.jit
def _fill_kv_quant_kernel(KStates, KCaches, KScales, BlockOffsets, stride_ks, stride_kcn, BLOCK_D: tl.constexpr):
    t = tl.program_id(0)
    block_off = tl.load(BlockOffsets + t)
    o_d = tl.arange(0, BLOCK_D)
    k = tl.load(KStates + t * stride_ks + o_d).to(tl.float32)
    s = tl.maximum(tl.max(tl.abs(k), 0), 1e-8) / 127.0
    tl.store(KCaches + block_off * stride_kcn + o_d, (k / s + 0.5).to(tl.int8))
    tl.store(KScales + block_off, s)
