"""inverse-cdf-sample-fallback: inverse-CDF sampling that defaults to `V - 1` → to the last token with p > 0.

Harness format: docs/harness.md. The before/after launchers are the template shown.
One draw per row from top-k-filtered probabilities `[B, V]` (fp32; K = 64 tokens a row are
non-zero, the rest masked to 0) with a uniform `u` per row: the sampled token is the first
position where the running sum passes `u`. One program a row walks the vocabulary in blocks
with `tl.cumsum`.

A correctness fix at no cost (one `tl.max` a block; the timed shapes measure that). When the
row's probabilities sum, in fp32, to less than `u` (a renormalised row whose total rounds
below 1, and a draw near 1: `torch.rand` gives up to 1 - 2**-24), no position passes `u`.
The before then returns its default, `V - 1`: a token the top-k filter removed (probability
0), an "impossible value" in flashinfer's words. The after keeps the last position with a
non-zero probability as it scans and returns that instead, the token the draw falls on once
the deficit is taken into account. "deficit" rows sum to 1 - 2**-16 exactly (the
probabilities are multiples of 2**-16, so every sum is exact in fp32 and float64 alike) and
draw u = 1 - 2**-24; the other shapes' rows sum to exactly 1 and never hit the fallback.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(B=4, V=1000, K=8, DEFICIT=0),
    "llama3": dict(B=1024, V=128256, K=64, DEFICIT=0),     # a Llama-3 vocabulary, 1024 requests
    "qwen": dict(B=512, V=151936, K=64, DEFICIT=0),
    "deficit": dict(B=256, V=128256, K=64, DEFICIT=1),     # rows short of 1, u near 1: the before picks p = 0
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("deficit",)
FIXES = ("deficit",)             # where the before is wrong (a zero-probability token): the evidence
FIXED = ("K", "DEFICIT")
DTYPES = ("float32",)
TOLERANCES = {"float32": (0.0, 0.0)}  # token ids: exact
BLOCK = 1024
_UNIT = 1 << 16                   # probabilities are multiples of 2**-16: every fp32 sum is exact


def make_inputs(shape, dtype, seed, device):
    gen = torch.Generator(device="cpu").manual_seed(seed)
    B, V, K = shape["B"], shape["V"], shape["K"]
    total = _UNIT - shape["DEFICIT"]
    # K weights of at least 2**-12 each, summing to `total` units of 2**-16
    w = torch.rand(B, K, generator=gen) + 0.05
    units = (w / w.sum(1, keepdim=True) * (total - 16 * K)).floor().long() + 16
    units[:, 0] += total - units.sum(1)
    cols = torch.stack([torch.randperm(V - 1, generator=gen)[:K] for _ in range(B)])  # never the last column
    probs = torch.zeros(B, V, dtype=torch.float64)
    probs.scatter_(1, cols, units.double() / _UNIT)
    if shape["DEFICIT"]:
        u = torch.full((B,), 1.0 - 2.0 ** -24)   # the largest float32 below 1: what torch.rand can draw
    else:
        u = torch.rand(B, generator=gen)
    return probs.to(dtype).to(device), u.to(dtype).to(device)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["B"], dtype=torch.int64, device=device),)


def reference(probs, u):
    cdf = probs.cumsum(1)
    V = probs.shape[1]
    cols = torch.arange(V, device=probs.device).expand_as(probs)
    first = torch.where(cdf > u[:, None], cols, V).min(1).values
    last = torch.where(probs > 0, cols, -1).max(1).values
    return (torch.where(first == V, last, first),)


def bytes_moved(shape, dtype):
    return shape["B"] * shape["V"] * 4 + shape["B"] * 12


def flops(shape, dtype):
    return 3 * shape["B"] * shape["V"]


@triton.jit
def before_kernel(probs_ptr, u_ptr, out_ptr, V, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    u = tl.load(u_ptr + row)
    running = 0.0
    pick = V - 1                                   # the default when no position passes u
    for off in range(0, V, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        p = tl.load(probs_ptr + row * V + cols, mask=cols < V, other=0.0)
        cdf = running + tl.cumsum(p, 0)
        first = tl.min(tl.where((cdf > u) & (cols < V), cols, V), 0)
        pick = tl.minimum(pick, first)
        running += tl.sum(p, 0)
    tl.store(out_ptr + row, pick.to(tl.int64))


def before(probs, u, out):
    B, V = probs.shape
    before_kernel[(B,)](probs, u, out, V, BLOCK=BLOCK, num_warps=4)


@triton.jit
def after_kernel(probs_ptr, u_ptr, out_ptr, V, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    u = tl.load(u_ptr + row)
    running = 0.0
    pick = V                                       # "not found"
    last = -1                                      # the last position with p > 0
    for off in range(0, V, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        p = tl.load(probs_ptr + row * V + cols, mask=cols < V, other=0.0)
        cdf = running + tl.cumsum(p, 0)
        first = tl.min(tl.where((cdf > u) & (cols < V), cols, V), 0)
        pick = tl.minimum(pick, first)
        last = tl.maximum(last, tl.max(tl.where(p > 0, cols, -1), 0))
        running += tl.sum(p, 0)
    pick = tl.where(pick == V, last, pick)         # the scan ended below u: the last valid token
    tl.store(out_ptr + row, pick.to(tl.int64))


def after(probs, u, out):
    B, V = probs.shape
    after_kernel[(B,)](probs, u, out, V, BLOCK=BLOCK, num_warps=4)
