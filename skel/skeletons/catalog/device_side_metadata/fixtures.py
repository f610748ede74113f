# Fixtures for device-side-metadata: varlen and paged kernels whose launchers read a device
# tensor back to the host (`.tolist()`, `.item()`, `.cpu()`) and upload a table built from it,
# against launchers that build the table on the device, read back only a size, or start from
# host data. Written for these tests after the shapes of the references (lightllm's window
# info, lmdeploy's fill_kv_cache, fla's varlen helpers); none is copied.
import torch
import triton
import triton.language as tl


# skel: match device-side-metadata
@triton.jit
def segment_sum_kernel(x_ptr, starts_ptr, lens_ptr, y_ptr, D, BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    # one program per sequence of a packed [T, D] tensor: its start and length from tables
    i_n = tl.program_id(0)
    bos = tl.load(starts_ptr + i_n)
    n = tl.load(lens_ptr + i_n)
    o_d = tl.arange(0, BLOCK_D)
    acc = tl.zeros([BLOCK_D], dtype=tl.float32)
    for t in range(0, n, BLOCK_T):
        o_t = t + tl.arange(0, BLOCK_T)
        m = (o_t[:, None] < n) & (o_d[None, :] < D)
        x = tl.load(x_ptr + (bos + o_t[:, None]) * D + o_d[None, :], mask=m, other=0.0)
        acc += tl.sum(x.to(tl.float32), axis=0)
    tl.store(y_ptr + i_n * D + o_d, acc, mask=o_d < D)


def segment_sum(x, seq_lens, y):
    # the starts are a running sum over lengths read back to the host, then uploaded
    lens = seq_lens.tolist()
    starts, total = [], 0
    for n in lens:
        starts.append(total)
        total += n
    starts_t = torch.tensor(starts, dtype=torch.int32, device=x.device)
    segment_sum_kernel[(len(lens),)](x, starts_t, seq_lens, y, x.shape[1], BLOCK_T=16,
                                     BLOCK_D=triton.next_power_of_2(x.shape[1]))


# skel: match device-side-metadata
@triton.jit
def fill_cache_blocks_kernel(k_ptr, cache_ptr, state_start, state_len, cache_start, block_ids, stride_t,
                             stride_cb, BLOCK: tl.constexpr, HEAD: tl.constexpr):
    # one program per cache block to fill: where to copy from and to comes from four tables
    pid = tl.program_id(0)
    src = tl.load(state_start + pid)
    n = tl.load(state_len + pid)
    dst = tl.load(cache_start + pid)
    blk = tl.load(block_ids + pid)
    o_t = tl.arange(0, BLOCK)
    o_h = tl.arange(0, HEAD)
    m = o_t[:, None] < n
    kv = tl.load(k_ptr + (src + o_t[:, None]) * stride_t + o_h[None, :], mask=m)
    tl.store(cache_ptr + blk * stride_cb + (dst + o_t[:, None]) * HEAD + o_h[None, :], kv, mask=m)


def fill_cache_blocks(k, cache, q_lens, history, block_table, block_size):
    # first and last block of each sequence read back, the block list sliced per sequence
    first = (history // block_size).cpu()
    last = ((history + q_lens + block_size - 1) // block_size).cpu()
    block_ids = torch.cat([row[f:e] for row, f, e in zip(block_table, first, last)])
    n_blocks = block_ids.numel()
    state_start = torch.zeros(n_blocks, dtype=torch.int32, device=k.device)
    state_len = torch.full((n_blocks,), block_size, dtype=torch.int32, device=k.device)
    cache_start = torch.zeros(n_blocks, dtype=torch.int32, device=k.device)
    fill_cache_blocks_kernel[(n_blocks,)](k, cache, state_start, state_len, cache_start, block_ids, k.stride(0),
                                          cache.stride(0), BLOCK=block_size, HEAD=k.shape[1])


# skel: match device-side-metadata
@triton.jit
def chunk_local_cumsum_kernel(g, o, cu_seqlens, chunk_indices, H, BT: tl.constexpr):
    # one program per (sequence, chunk) pair of a varlen batch, read from a table
    i_t, i_h = tl.program_id(0), tl.program_id(1)
    i_n = tl.load(chunk_indices + i_t * 2).to(tl.int32)
    i_c = tl.load(chunk_indices + i_t * 2 + 1).to(tl.int32)
    bos = tl.load(cu_seqlens + i_n).to(tl.int32)
    eos = tl.load(cu_seqlens + i_n + 1).to(tl.int32)
    o_t = i_c * BT + tl.arange(0, BT)
    m = o_t < eos - bos
    b_g = tl.load(g + (bos + o_t) * H + i_h, mask=m, other=0.0).to(tl.float32)
    tl.store(o + (bos + o_t) * H + i_h, tl.cumsum(b_g, axis=0), mask=m)


def chunk_local_cumsum(g, cu_seqlens, BT=64):
    # (sequence, chunk) pairs from chunk counts read back with a chained `.tolist()`
    counts = triton.cdiv(cu_seqlens[1:] - cu_seqlens[:-1], BT)
    pairs = [(i, c) for i, n in enumerate(counts.tolist()) for c in range(n)]
    chunk_indices = torch.tensor(pairs, dtype=torch.int32, device=g.device)
    o = torch.empty_like(g)
    chunk_local_cumsum_kernel[(len(pairs), g.shape[1])](g, o, cu_seqlens, chunk_indices, g.shape[1], BT=BT)
    return o


# skel: ok device-side-metadata
# skel: uses device-side-metadata
@triton.jit
def segment_sum_device_starts(x_ptr, starts_ptr, lens_ptr, y_ptr, D, BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    # the technique: the starts come from `torch.cumsum` on the device, no read-back
    i_n = tl.program_id(0)
    bos = tl.load(starts_ptr + i_n)
    n = tl.load(lens_ptr + i_n)
    o_d = tl.arange(0, BLOCK_D)
    acc = tl.zeros([BLOCK_D], dtype=tl.float32)
    for t in range(0, n, BLOCK_T):
        o_t = t + tl.arange(0, BLOCK_T)
        m = (o_t[:, None] < n) & (o_d[None, :] < D)
        x = tl.load(x_ptr + (bos + o_t[:, None]) * D + o_d[None, :], mask=m, other=0.0)
        acc += tl.sum(x.to(tl.float32), axis=0)
    tl.store(y_ptr + i_n * D + o_d, acc, mask=o_d < D)


def segment_sum_device(x, seq_lens, y):
    starts = torch.cumsum(seq_lens, 0) - seq_lens
    segment_sum_device_starts[(seq_lens.numel(),)](x, starts, seq_lens, y, x.shape[1], BLOCK_T=16,
                                                   BLOCK_D=triton.next_power_of_2(x.shape[1]))


# skel: ok device-side-metadata
@triton.jit
def varlen_copy_sized_on_host(x_ptr, cu_seqlens, out_ptr, D: tl.constexpr, BLOCK_T: tl.constexpr):
    # the host reads back only the total length, to allocate the output: nothing is uploaded
    i_n = tl.program_id(0)
    bos = tl.load(cu_seqlens + i_n)
    eos = tl.load(cu_seqlens + i_n + 1)
    o_d = tl.arange(0, D)
    for t in range(bos, eos, BLOCK_T):
        o_t = t + tl.arange(0, BLOCK_T)
        m = o_t[:, None] < eos
        v = tl.load(x_ptr + o_t[:, None] * D + o_d[None, :], mask=m)
        tl.store(out_ptr + o_t[:, None] * D + o_d[None, :], v, mask=m)


def varlen_copy(x, cu_seqlens):
    total = cu_seqlens[-1].item()
    out = torch.empty(total, x.shape[1], dtype=x.dtype, device=x.device)
    varlen_copy_sized_on_host[(cu_seqlens.numel() - 1,)](x, cu_seqlens, out, D=x.shape[1], BLOCK_T=32)
    return out


# skel: ok device-side-metadata
@triton.jit
def paged_gather_host_lists(cache_ptr, block_table, out_ptr, stride_bt, HEAD: tl.constexpr, BLOCK: tl.constexpr):
    # the block table comes from the scheduler's Python lists: uploaded, never read back
    i_b, i_j = tl.program_id(0), tl.program_id(1)
    blk = tl.load(block_table + i_b * stride_bt + i_j)
    o = tl.arange(0, BLOCK)[:, None] * HEAD + tl.arange(0, HEAD)[None, :]
    tl.store(out_ptr + (i_b * stride_bt + i_j) * BLOCK * HEAD + o, tl.load(cache_ptr + blk * BLOCK * HEAD + o))


def paged_gather(cache, block_lists, out, max_blocks):
    rows = [blocks + [0] * (max_blocks - len(blocks)) for blocks in block_lists]
    table = torch.tensor(rows, dtype=torch.int32, device=cache.device)
    paged_gather_host_lists[(len(rows), max_blocks)](cache, table, out, table.stride(0), HEAD=cache.shape[-1],
                                                      BLOCK=cache.shape[1])


# skel: ok device-side-metadata
@triton.jit
def scale_by_host_amax(x_ptr, scale_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # a value read back and uploaded as a scalar tensor: a sync, but no per-program table
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    s = tl.load(scale_ptr)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, (x / s).to(tl.float8e4nv), mask=offs < n)


def scale_by_amax(x, y):
    amax = x.abs().max().item()
    scale = torch.tensor([amax / 448.0], device=x.device)
    scale_by_host_amax[(triton.cdiv(x.numel(), 1024),)](x, scale, y, x.numel(), BLOCK=1024)


# skel: ok device-side-metadata
@triton.jit
def varlen_loss_read_back_after(logits, cu_seqlens, weights, loss_ptr, V: tl.constexpr):
    # the table is uploaded from host lists and the only read-back is the loss, after the launch
    i_n = tl.program_id(0)
    bos = tl.load(cu_seqlens + i_n)
    w = tl.load(weights + i_n)
    x = tl.load(logits + bos * V + tl.arange(0, V)).to(tl.float32)
    tl.atomic_add(loss_ptr, w * tl.max(x, axis=0))


def varlen_loss(logits, lens_list):
    cu = torch.tensor([0] + lens_list, device=logits.device).cumsum(0)
    weights = torch.ones(len(lens_list), device=logits.device)
    loss = torch.zeros(1, device=logits.device)
    varlen_loss_read_back_after[(len(lens_list),)](logits, cu, weights, loss, V=logits.shape[1])
    return loss.item()
