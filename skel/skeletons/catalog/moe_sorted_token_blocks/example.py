"""moe-sorted-token-blocks: per-token expert GEMV → expert-sorted BLOCK_M token blocks with one tl.dot tile each.

Harness format: docs/harness.md. The before/after launchers are the template shown.
One MoE projection: every (token, top-k slot) is multiplied by the weights of its expert,
out[t, j] = x[t] @ W[topk_ids[t, j]]^T. The before runs one program per (token slot, N
block), loading the expert id and streaming W[e] as a vector-matrix product: each expert's
weights are re-read once per routed token. The after aligns the token slots by expert on
the GPU with torch (a sort, per-expert counts padded to BLOCK_M), then one GEMM launch over
(blocks, N blocks): each program loads its block's expert and gathers BLOCK_M token rows
into a tl.dot tile, so W[e] is read once per BLOCK_M tokens. Padding slots are masked.
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(M=37, E=4, TOPK=2, N=100, K=96),            # on the CPU; one expert may get no token
    "mixtral": dict(M=512, E=8, TOPK=2, N=2048, K=4096),     # prefill chunk, 128 tokens per expert
    "fine": dict(M=256, E=64, TOPK=8, N=1024, K=2048),       # many small experts (32 tokens each)
    "decode": dict(M=16, E=64, TOPK=8, N=1024, K=2048),      # about 2 tokens per expert: blocks mostly padding
    "huge": dict(M=64, E=64, TOPK=8, N=4096, K=8192),        # E * N * K past 2**31: e * stride_we must be int64
}
CPU_SHAPES = ("tiny",)
CHECK_ONLY = ("huge",)
FIXED = ("E", "TOPK")
DTYPES = ("float16",)  # the CPU interpreter's bf16 tl.dot is wrong; fp16 runs on both
TOLERANCES = {"float16": (2e-3, 2e-3)}  # fp32 accumulation, one rounding of out
BLOCK_M, BLOCK_N, BLOCK_K = 16, 32, 32  # on the CPU; GPU launches use the tiles below


def _tiles(x):
    return (64, 64, 64) if x.is_cuda else (BLOCK_M, BLOCK_N, BLOCK_K)


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    M, E, TOPK, N, K = shape["M"], shape["E"], shape["TOPK"], shape["N"], shape["K"]
    x = (torch.randn(M, K, generator=g, device=device) * K ** -0.5).to(dtype)
    w = torch.randn(E, N, K, generator=g, device=device).to(dtype)
    topk_ids = torch.rand(M, E, generator=g, device=device).argsort(dim=1)[:, :TOPK].to(torch.int32)
    return x, w, topk_ids


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["M"], shape["TOPK"], shape["N"], dtype=dtype, device=device),)


def reference(x, w, topk_ids):
    # one expert at a time: gathering w[topk_ids] would be an [M, TOPK, N, K] copy (128 GiB
    # in float64 at the CHECK_ONLY shape — the H200 run ran out of memory on it)
    out = torch.zeros(x.shape[0], topk_ids.shape[1], w.shape[1], dtype=x.dtype, device=x.device)
    ids = topk_ids.long()
    for e in torch.unique(ids).tolist():
        m, j = (ids == e).nonzero(as_tuple=True)
        out[m, j] = x[m] @ w[e].T
    return (out,)


def bytes_moved(shape, dtype):
    M, E, TOPK, N, K = shape["M"], shape["E"], shape["TOPK"], shape["N"], shape["K"]
    used = min(E, M * TOPK)  # experts that receive a token: each read once at best
    return (M * K + used * N * K + M * TOPK * N) * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return 2 * shape["M"] * shape["TOPK"] * shape["N"] * shape["K"]


@triton.jit
def before_kernel(x_ptr, w_ptr, topk_ids_ptr, out_ptr, N, K, stride_we, TOPK: tl.constexpr,
                  BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    slot = tl.program_id(0)  # one (token, top-k slot) per program
    pid_n = tl.program_id(1)
    token = slot // TOPK
    expert = tl.load(topk_ids_ptr + slot).to(tl.int64)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        x = tl.load(x_ptr + token * K + rk, mask=rk < K, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + expert * stride_we + rn[:, None] * K + rk[None, :],
                    mask=(rn[:, None] < N) & (rk[None, :] < K), other=0.0)
        acc += tl.sum(w.to(tl.float32) * x[None, :], 1)
    tl.store(out_ptr + slot * N + rn, acc.to(out_ptr.dtype.element_ty), mask=rn < N)


def before(x, w, topk_ids, out):
    M, K = x.shape
    E, N, _ = w.shape
    TOPK = topk_ids.shape[1]
    _, bn, bk = _tiles(x)
    grid = (M * TOPK, triton.cdiv(N, bn))
    before_kernel[grid](x, w, topk_ids, out, N, K, N * K, TOPK=TOPK, BLOCK_N=bn, BLOCK_K=bk)


def after_align(topk_ids, E, block_m):
    """Token slots grouped by expert, each expert padded to a block_m multiple (pad id = M * TOPK),
    and the expert of every block. All on the device: a sort, counts and prefix sums, no host sync
    beyond the block count the grid needs."""
    flat = topk_ids.flatten().long()
    n_slots = flat.numel()
    counts = torch.bincount(flat, minlength=E)
    padded = (counts + block_m - 1) // block_m * block_m
    start = torch.cumsum(counts, 0) - counts
    pstart = torch.cumsum(padded, 0) - padded
    order = torch.sort(flat, stable=True).indices
    rank = torch.arange(n_slots, device=flat.device) - start[flat[order]]
    total = int(padded.sum())
    sorted_token_ids = torch.full((total,), n_slots, dtype=torch.int32, device=flat.device)
    sorted_token_ids[pstart[flat[order]] + rank] = order.to(torch.int32)
    expert_ids = torch.repeat_interleave(torch.arange(E, device=flat.device, dtype=torch.int32), padded // block_m)
    return sorted_token_ids, expert_ids


@triton.jit
def after_kernel(x_ptr, w_ptr, sorted_token_ids_ptr, expert_ids_ptr, out_ptr, num_slots, N, K, stride_we,
                 TOPK: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)  # one BLOCK_M block of one expert's token slots
    pid_n = tl.program_id(1)
    expert = tl.load(expert_ids_ptr + pid_m).to(tl.int64)
    offs_token = tl.load(sorted_token_ids_ptr + pid_m * BLOCK_M + tl.arange(0, BLOCK_M))
    m_token = offs_token < num_slots  # padding slots
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(x_ptr + (offs_token // TOPK)[:, None] * K + rk[None, :],
                    mask=m_token[:, None] & (rk[None, :] < K), other=0.0)
        b = tl.load(w_ptr + expert * stride_we + rn[None, :] * K + rk[:, None],
                    mask=(rn[None, :] < N) & (rk[:, None] < K), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(out_ptr + offs_token[:, None] * N + rn[None, :], acc.to(out_ptr.dtype.element_ty),
             mask=m_token[:, None] & (rn[None, :] < N))


def after(x, w, topk_ids, out):
    M, K = x.shape
    E, N, _ = w.shape
    TOPK = topk_ids.shape[1]
    bm, bn, bk = _tiles(x)
    sorted_token_ids, expert_ids = after_align(topk_ids, E, bm)
    grid = (expert_ids.numel(), triton.cdiv(N, bn))
    after_kernel[grid](x, w, sorted_token_ids, expert_ids, out, M * TOPK, N, K, N * K, TOPK=TOPK,
                       BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk)
