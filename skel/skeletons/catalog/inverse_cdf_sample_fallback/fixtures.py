# Fixtures for inverse-cdf-sample-fallback: inverse-CDF samplers with a constant default vs samplers
# that fall back to a real token, top-p masks (a threshold, not a draw) and argmax-style samplers.
import triton
import triton.language as tl


# skel: match inverse-cdf-sample-fallback
@triton.jit
def sample_rows_default_last(probs_ptr, u_ptr, out_ptr, V, BLOCK: tl.constexpr):
    # a loaded per-row draw; the default when the scan ends below u is V - 1 (often p = 0)
    row = tl.program_id(0)
    u = tl.load(u_ptr + row)
    running = 0.0
    pick = V - 1
    for off in range(0, V, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        p = tl.load(probs_ptr + row * V + cols, mask=cols < V, other=0.0)
        cdf = running + tl.cumsum(p, 0)
        first = tl.min(tl.where((cdf > u) & (cols < V), cols, V), 0)
        pick = tl.minimum(pick, first)
        running += tl.sum(p, 0)
    tl.store(out_ptr + row, pick)


# skel: match inverse-cdf-sample-fallback
@triton.jit
def sample_block_count(probs_ptr, out_ptr, seed, V, BLOCK: tl.constexpr):
    # the row in one block, the index as a count of running sums below the draw: V when none passes
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    p = tl.load(probs_ptr + row * V + cols, mask=cols < V, other=0.0)
    r = tl.rand(seed, row)
    cdf = tl.cumsum(p, 0)
    idx = tl.sum((cdf <= r).to(tl.int32), 0)
    tl.store(out_ptr + row, idx)


# skel: ok inverse-cdf-sample-fallback
# skel: uses inverse-cdf-sample-fallback
@triton.jit
def sample_rows_last_valid(probs_ptr, u_ptr, out_ptr, V, BLOCK: tl.constexpr):
    # the fix: track the last position with p > 0, return it when nothing passes u
    row = tl.program_id(0)
    u = tl.load(u_ptr + row)
    running = 0.0
    pick = V
    last = -1
    for off in range(0, V, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        p = tl.load(probs_ptr + row * V + cols, mask=cols < V, other=0.0)
        cdf = running + tl.cumsum(p, 0)
        pick = tl.minimum(pick, tl.min(tl.where((cdf > u) & (cols < V), cols, V), 0))
        last = tl.maximum(last, tl.max(tl.where(p > 0, cols, -1), 0))
        running += tl.sum(p, 0)
    tl.store(out_ptr + row, tl.where(pick == V, last, pick))


# skel: ok inverse-cdf-sample-fallback
# skel: uses inverse-cdf-sample-fallback
@triton.jit
def sorted_sample_kept_default(Scores, Seeds, Indices, Outputs, stride_s, num_tokens, BLOCK_N: tl.constexpr):
    # lmdeploy-shaped: the default is the row's first sorted candidate, kept while nothing is found
    row = tl.program_id(0)
    samp = tl.rand(tl.load(Seeds + row), row)
    acc = 0.0
    output = tl.load(Indices + row * stride_s)
    for b_idx in range(0, num_tokens, BLOCK_N):
        offs = b_idx + tl.arange(0, BLOCK_N)
        scores = tl.load(Scores + row * stride_s + offs, mask=offs < num_tokens, other=0.0)
        cum = acc + tl.cumsum(scores, 0)
        acc += tl.sum(scores, 0)
        valid = (samp > cum - scores) & (samp <= cum)
        found = tl.sum(valid.to(tl.int32), 0) > 0
        pos = b_idx + tl.argmax(valid.to(tl.int32), 0)
        output = tl.where(found, tl.load(Indices + row * stride_s + pos), output)
    tl.store(Outputs + row, output)


# skel: ok inverse-cdf-sample-fallback
@triton.jit
def top_p_mask_sorted(probs_ptr, top_p_ptr, out_ptr, V, BLOCK: tl.constexpr):
    # top-p renormalisation: the running sum against a threshold parameter, no draw, no position picked
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    top_p = tl.load(top_p_ptr + row)
    p = tl.load(probs_ptr + row * V + cols, mask=cols < V, other=0.0)
    cdf = tl.cumsum(p, 0)
    keep = (cdf - p) < top_p
    p = tl.where(keep, p, 0.0)
    tl.store(out_ptr + row * V + cols, p / tl.sum(p, 0), mask=cols < V)


# skel: ok inverse-cdf-sample-fallback
@triton.jit
def gumbel_argmax_sample(logits_ptr, out_ptr, seed, V, BLOCK: tl.constexpr):
    # an exponential race: no running sum, always a real token
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(logits_ptr + row * V + cols, mask=cols < V, other=float("-inf"))
    u = tl.rand(seed, row * V + cols)
    tl.store(out_ptr + row, tl.argmax(x - tl.log(-tl.log(u)), 0))


# skel: ok inverse-cdf-sample-fallback
@triton.jit
def stochastic_round_scan(x_ptr, y_ptr, seed, n, BLOCK: tl.constexpr):
    # a random draw and a cumsum in one kernel, never compared with each other
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    s = tl.cumsum(x, 0)
    r = tl.rand(seed, offs)
    tl.store(y_ptr + offs, tl.floor(s + r), mask=offs < n)
