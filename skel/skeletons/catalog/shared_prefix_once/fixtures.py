# Fixtures for shared-prefix-once: kernels whose every program walks the same small array
# (expert counts, a sorted-id list, other blocks' partial sums) to find its own offset,
# against per-program loops over the program's own data, a prefix computed in registers in one
# step, a persistent walk, a single-program prefix kernel and a table read. Written for these
# tests after the shapes of the references (lightllm's grouped GEMM, lmdeploy's MoE start/end
# kernel, two-pass scans); none is copied.
import triton
import triton.language as tl


# skel: match shared-prefix-once
@triton.jit
def grouped_rows_walk_experts(x_ptr, out_ptr, counts_ptr, token_idx_ptr, stride_e, num_experts, D,
                              BLOCK_M: tl.constexpr, BLOCK_D: tl.constexpr):
    # one program per m-block of any expert: each walks every expert's count to find its own
    tile = tl.program_id(0)
    start = 0
    expert = -1
    m_blk = 0
    for e in range(num_experts):
        n = tl.load(counts_ptr + e)
        t = tl.cdiv(n, BLOCK_M)
        if tile >= start and tile < start + t:
            expert = e
            m_blk = tile - start
        start += t
    if expert >= 0:
        n_e = tl.load(counts_ptr + expert)
        o_m = m_blk * BLOCK_M + tl.arange(0, BLOCK_M)
        o_d = tl.arange(0, BLOCK_D)
        rows = tl.load(token_idx_ptr + expert * stride_e + o_m, mask=o_m < n_e, other=0)
        m = (o_m[:, None] < n_e) & (o_d[None, :] < D)
        v = tl.load(x_ptr + rows[:, None] * D + o_d[None, :], mask=m)
        tl.store(out_ptr + (tile * BLOCK_M + tl.arange(0, BLOCK_M))[:, None] * D + o_d[None, :], v, mask=m)


# skel: match shared-prefix-once
@triton.jit
def expert_start_scan_sorted(topk_ids, sorted_idx, exp_start, exp_end, n_sorted, num_experts: tl.constexpr,
                             BLOCK: tl.constexpr):
    # one program per expert: each scans the whole sorted list to count its entries and find its start
    exp_id = tl.program_id(0)
    first = -1
    cnt = 0
    offs = tl.arange(0, BLOCK)
    for s in range(0, n_sorted, BLOCK):
        o = s + offs
        sid = tl.load(sorted_idx + o, mask=o < n_sorted, other=0)
        eid = tl.load(topk_ids + sid, mask=o < n_sorted, other=num_experts)
        hit = eid == exp_id
        cnt += tl.sum(hit.to(tl.int32))
        if cnt > 0 and first < 0:
            first = s + tl.argmax(hit, axis=0)
    first = tl.maximum(first, 0)
    tl.store(exp_start + exp_id, first)
    tl.store(exp_end + exp_id, first + cnt)


# skel: match shared-prefix-once
@triton.jit
def scan_add_previous_blocks(x_ptr, partials_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # second pass of a two-pass scan: each block sums every earlier block's total itself
    pid = tl.program_id(0)
    base = 0.0
    for i in range(0, pid):
        base += tl.load(partials_ptr + i)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + offs, tl.cumsum(x, axis=0) + base, mask=offs < n)


# skel: ok shared-prefix-once
@triton.jit
def row_scan_carry(x_ptr, out_ptr, stride, N, BLOCK: tl.constexpr):
    # a carried sum over the program's own row: every load is indexed by the program id
    row = tl.program_id(0)
    carry = 0.0
    for start in range(0, N, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + offs, mask=offs < N, other=0.0)
        tl.store(out_ptr + row * stride + offs, tl.cumsum(x, axis=0) + carry, mask=offs < N)
        carry += tl.sum(x, axis=0)


# skel: ok shared-prefix-once
@triton.jit
def expert_block_starts_in_registers(counts_ptr, block_expert_ptr, num_experts, BLOCK_M: tl.constexpr,
                                     BLOCK_E: tl.constexpr):
    # the prefix in one step, in registers: one tile of counts, a parallel tl.cumsum, no walk
    expert = tl.program_id(0)
    o_e = tl.arange(0, BLOCK_E)
    counts = tl.load(counts_ptr + o_e, mask=o_e < num_experts, other=0)
    blocks = tl.cdiv(counts, BLOCK_M)
    starts = tl.cumsum(blocks, axis=0) - blocks
    start = tl.sum(tl.where(o_e == expert, starts, 0), axis=0)
    n_blk = tl.sum(tl.where(o_e == expert, blocks, 0), axis=0)
    for j in range(0, n_blk):
        tl.store(block_expert_ptr + start + j, expert)


# skel: ok shared-prefix-once
@triton.jit
def persistent_grouped_walk(a_ptr, c_ptr, m_sizes, G, N, NUM_SMS: tl.constexpr, BLOCK_M: tl.constexpr,
                            BLOCK_N: tl.constexpr):
    # a persistent grid: each of NUM_SMS programs walks the groups once and strides over their tiles
    tidx = tl.program_id(0)
    m_end = 0
    done = 0
    for g in range(G):
        m_start = m_end
        m = tl.load(m_sizes + g)
        m_end = m_start + m
        tiles = tl.cdiv(m, BLOCK_M) * tl.cdiv(N, BLOCK_N)
        while tidx >= done and tidx < done + tiles:
            t = tidx - done
            o_m = m_start + (t // tl.cdiv(N, BLOCK_N)) * BLOCK_M + tl.arange(0, BLOCK_M)
            o_n = (t % tl.cdiv(N, BLOCK_N)) * BLOCK_N + tl.arange(0, BLOCK_N)
            msk = (o_m[:, None] < m_end) & (o_n[None, :] < N)
            v = tl.load(a_ptr + o_m[:, None] * N + o_n[None, :], mask=msk)
            tl.store(c_ptr + o_m[:, None] * N + o_n[None, :], v * 2, mask=msk)
            tidx += NUM_SMS
        done += tiles


# skel: ok shared-prefix-once
@triton.jit
def gemv_shared_weight(w_ptr, x_ptr, y_ptr, K, BK: tl.constexpr):
    # every program reads the same weight vector, but what it carries is its output, not an offset
    pid = tl.program_id(0)
    acc = 0.0
    for k in range(0, K, BK):
        o = k + tl.arange(0, BK)
        w = tl.load(w_ptr + o, mask=o < K, other=0.0)
        x = tl.load(x_ptr + pid * K + o, mask=o < K, other=0.0)
        acc += tl.sum(w * x, axis=0)
    tl.store(y_ptr + pid, acc)


# skel: ok shared-prefix-once
@triton.jit
def expert_offsets_single_program(counts_ptr, offsets_ptr, num_experts):
    # the prefix computed once, by one program (no program id): the technique's first half
    run = 0
    for e in range(num_experts):
        tl.store(offsets_ptr + e, run)
        run += tl.load(counts_ptr + e)
    tl.store(offsets_ptr + num_experts, run)


# skel: ok shared-prefix-once
# skel: uses shared-prefix-once
@triton.jit
def grouped_rows_table(x_ptr, out_ptr, counts_ptr, token_idx_ptr, mblock_to_expert, mblock_to_m, stride_e, D,
                       BLOCK_M: tl.constexpr, BLOCK_D: tl.constexpr):
    # the technique: the (expert, m-block) of this tile read from tables computed once
    tile = tl.program_id(0)
    expert = tl.load(mblock_to_expert + tile)
    if expert >= 0:
        m_blk = tl.load(mblock_to_m + tile)
        n_e = tl.load(counts_ptr + expert)
        o_m = m_blk * BLOCK_M + tl.arange(0, BLOCK_M)
        o_d = tl.arange(0, BLOCK_D)
        rows = tl.load(token_idx_ptr + expert * stride_e + o_m, mask=o_m < n_e, other=0)
        m = (o_m[:, None] < n_e) & (o_d[None, :] < D)
        v = tl.load(x_ptr + rows[:, None] * D + o_d[None, :], mask=m)
        tl.store(out_ptr + (tile * BLOCK_M + tl.arange(0, BLOCK_M))[:, None] * D + o_d[None, :], v, mask=m)
