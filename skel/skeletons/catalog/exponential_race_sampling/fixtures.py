# Fixtures for exponential-race-sampling: inverse-CDF samplers (a uniform draw compared with a
# running sum of sorted probabilities) against races, binary searches over a CDF built once,
# top-p thresholds and dropout beside a scan. Written for these tests after the shapes of
# lmdeploy's and FlagGems' samplers; none is copied.
import triton
import triton.language as tl


# skel: match exponential-race-sampling
@triton.jit
def multinomial_sorted_rows(Scores, Seeds, Offsets, Indices, Outputs, stride_sb, stride_st, stride_ib, stride_it,
                            num_batchs, num_tokens, BLOCK: tl.constexpr, BLOCK_N: tl.constexpr):
    # BLOCK rows a program walk their sorted scores with a running sum until it passes the draw
    batch_block_id = tl.program_id(0)
    off = batch_block_id * BLOCK + tl.arange(0, BLOCK)
    n_off = tl.arange(0, BLOCK_N)
    off_mask = off < num_batchs
    seed = tl.load(Seeds + off, mask=off_mask)
    offset = tl.load(Offsets + off, mask=off_mask).to(tl.int32)
    samp = tl.rand(seed, offset)[:, None]
    acc = tl.zeros((BLOCK, ), dtype=tl.float32)
    output = tl.load(Indices + off * stride_ib, mask=off_mask)
    for b_idx in range(0, num_tokens, BLOCK_N):
        s_off = b_idx + n_off
        s_mask = off_mask[:, None] & (s_off[None, :] < num_tokens)
        scores = tl.load(Scores + off[:, None] * stride_sb + s_off[None, :] * stride_st, mask=s_mask,
                         other=0.0).to(tl.float32)
        c_scores = tl.cumsum(scores, 1)
        cum_scores = acc[:, None] + c_scores
        acc += tl.max(c_scores, 1)
        pre_cum_scores = cum_scores - scores
        valid_mask = (samp > pre_cum_scores) & (samp <= cum_scores)
        found_mask = tl.sum(valid_mask, 1) > 0
        valid_pos = b_idx + tl.argmax(valid_mask.to(tl.int32), 1)
        indices = tl.load(Indices + off * stride_ib + valid_pos * stride_it, mask=found_mask & off_mask, other=-1)
        output = tl.where(found_mask, indices, output)
    tl.store(Outputs + off, output, mask=off_mask)


# skel: match exponential-race-sampling
@triton.jit
def sample_one_row_cdf(probs_ptr, idx_ptr, out_ptr, stride, V, seed, BLOCK: tl.constexpr):
    # one row a program: the draw scaled by the row's mass, the first position it falls under
    row = tl.program_id(0)
    u = tl.rand(seed, row)
    total = 0.0
    for off in range(0, V, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        total += tl.sum(tl.load(probs_ptr + row * stride + cols, mask=cols < V, other=0.0), 0)
    target = u * total
    running = 0.0
    pick = V - 1
    for off in range(0, V, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        p = tl.load(probs_ptr + row * stride + cols, mask=cols < V, other=0.0)
        cdf = running + tl.cumsum(p, 0)
        first = tl.min(tl.where((cdf > target) & (cols < V), cols, V), 0)
        pick = tl.minimum(pick, first)
        running += tl.sum(p, 0)
    tl.store(out_ptr + row, tl.load(idx_ptr + row * stride + pick))


def sample_one_row_cdf_launch(probs, out, seed):
    B, V = probs.shape
    probs, idx = probs.sort(dim=-1, descending=True)
    sample_one_row_cdf[(B,)](probs, idx, out, probs.stride(0), V, seed, BLOCK=1024)


# skel: ok exponential-race-sampling
# skel: uses exponential-race-sampling
@triton.jit
def gumbel_max_sample(logits_ptr, out_ptr, stride, V, inv_temp, seed, BLOCK: tl.constexpr):
    # the technique: one pass, the winner of logit + Gumbel noise
    row = tl.program_id(0)
    best = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    best_i = tl.zeros([BLOCK], dtype=tl.int32)
    for off in range(0, V, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(logits_ptr + row * stride + cols, mask=cols < V, other=float("-inf")).to(tl.float32)
        u = tl.rand(seed, row * V + cols)
        score = x * inv_temp - tl.log(-tl.log(u))
        better = score > best
        best = tl.where(better, score, best)
        best_i = tl.where(better, cols, best_i)
    top = tl.max(best, 0)
    tl.store(out_ptr + row, tl.min(tl.where(best == top, best_i, V), 0))


# skel: ok exponential-race-sampling
@triton.jit
def multinomial_binary_search(cdf_ptr, out_ptr, K, N, seed, NBLOCK: tl.constexpr):
    # many draws from one CDF built once: a binary search a draw (log K), no running sum here
    y_off = tl.program_id(1) * N
    n = tl.program_id(0) * NBLOCK + tl.arange(0, NBLOCK)
    rv = tl.rand(seed, y_off + n)
    cdf_ptr += tl.program_id(1) * K
    start = tl.zeros((NBLOCK,), dtype=tl.int32)
    end = tl.zeros((NBLOCK,), dtype=tl.int32) + K - 1
    for _ in range(0, 20):
        mid = start + (end - start) // 2
        x = tl.load(cdf_ptr + mid, mask=n < N)
        start = tl.where(x < rv, mid + 1, start)
        end = tl.where(x < rv, end, mid)
    tl.store(out_ptr + y_off + n, start, mask=n < N)


# skel: ok exponential-race-sampling
@triton.jit
def top_p_renorm(probs_ptr, out_ptr, stride, V, top_p, BLOCK: tl.constexpr):
    # a top-p filter: the running sum compared with a threshold, no random draw
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    p = tl.load(probs_ptr + row * stride + cols, mask=cols < V, other=0.0)
    cdf = tl.cumsum(p, 0)
    keep = (cdf - p) < top_p
    kept = tl.where(keep, p, 0.0)
    tl.store(out_ptr + row * stride + cols, kept / tl.sum(kept, 0), mask=cols < V)


# skel: ok exponential-race-sampling
@triton.jit
def cumsum_with_dropout(x_ptr, y_ptr, stride, T, p_drop, seed, BLOCK: tl.constexpr):
    # a random draw beside a running sum, never compared with it (dropout before a scan)
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < T, other=0.0)
    keep = tl.rand(seed, row * T + cols) > p_drop
    x = tl.where(keep, x / (1 - p_drop), 0.0)
    y = tl.cumsum(x, 0)
    tl.store(y_ptr + row * stride + cols, tl.where(y > 0.0, y, 0.0), mask=cols < T)
