"""shared-prefix-once: every program walks all experts' counts to find its tile → a table computed once.

Harness format: docs/harness.md. The before/after launchers are the template shown.
A grouped (MoE-style) row operation: `x` holds T rows sorted by expert, `counts[e]` of them for
expert e, and `out[r] = x[r] * w[expert of r]`. The grid has one program per BLOCK_M-row block
of an expert (an upper bound on their number, `cdiv(T, BLOCK_M) + E`, so neither side reads a
count back to size it; the spare programs exit). The before's programs each walk the E counts
in a loop, carrying the running tile and row offsets until their own block falls inside: E
serial scalar loads per program before any real work. The after runs one tiny kernel (one
program per expert) that computes the prefixes with `tl.cumsum` over the counts in registers
and writes tile → (expert, m-block) and each expert's first row; the main kernel reads its entry
with one load. On an H100/H200 the after should win where E is large and the rows few
("decode256": 256 experts, 2K rows) and by less at "prefill256" (32K rows, where the copy itself
takes ~85 µs); at "mixtral8" the 8-step walk costs less than the extra launch (the payoff says
it does not pay).
"""

import torch
import triton
import triton.language as tl

SHAPES = {
    "tiny": dict(E=5, T=37, D=100),              # an expert with no rows is likely
    "decode256": dict(E=256, T=2048, D=2048),    # 256 experts (DeepSeek-V3), a decode batch x top-8
    "prefill256": dict(E=256, T=32768, D=2048),  # 4K tokens x top-8
    "mixtral8": dict(E=8, T=32768, D=4096),      # 8 experts: an 8-step walk (does not pay)
}
CPU_SHAPES = ("tiny",)
DTYPES = ("bfloat16", "float32")
TOLERANCES = {"bfloat16": (1e-2, 1e-2), "float32": (1e-6, 1e-6)}
BLOCK_M = 16
BLOCK_D = 256


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device="cpu").manual_seed(seed)
    experts = torch.randint(0, shape["E"], (shape["T"],), generator=g)
    counts = torch.bincount(experts, minlength=shape["E"]).to(torch.int32)
    x = torch.randn(shape["T"], shape["D"], generator=g).to(dtype).to(device)
    w = (1 + 0.1 * torch.randn(shape["E"], shape["D"], generator=g)).to(dtype).to(device)
    return x, w, counts.to(device)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["T"], shape["D"], dtype=dtype, device=device),)


def reference(x, w, counts):
    return (x * torch.repeat_interleave(w, counts.to(torch.int64), dim=0),)


def bytes_moved(shape, dtype):
    # x read and out written once, w read once
    return (2 * shape["T"] + shape["E"]) * shape["D"] * torch.tensor([], dtype=dtype).element_size()


def flops(shape, dtype):
    return shape["T"] * shape["D"]


@triton.jit
def before_kernel(x_ptr, w_ptr, counts_ptr, out_ptr, num_experts, D, BLOCK_M: tl.constexpr, BLOCK_D: tl.constexpr):
    tile = tl.program_id(0)
    # walk every expert's count to find which expert's m-block this program is
    tile_start = 0
    row_start = 0
    expert = -1
    m_blk = 0
    e_row = 0
    for e in range(num_experts):
        n = tl.load(counts_ptr + e)
        t = tl.cdiv(n, BLOCK_M)
        hit = (tile >= tile_start) & (tile < tile_start + t)
        expert = tl.where(hit, e, expert)
        m_blk = tl.where(hit, tile - tile_start, m_blk)
        e_row = tl.where(hit, row_start, e_row)
        tile_start += t
        row_start += n
    if expert >= 0:
        n_e = tl.load(counts_ptr + expert)
        o_m = m_blk * BLOCK_M + tl.arange(0, BLOCK_M)
        rows = (e_row + o_m).to(tl.int64)
        for d in range(0, D, BLOCK_D):
            o_d = d + tl.arange(0, BLOCK_D)
            m = (o_m[:, None] < n_e) & (o_d[None, :] < D)
            x = tl.load(x_ptr + rows[:, None] * D + o_d[None, :], mask=m, other=0.0).to(tl.float32)
            wv = tl.load(w_ptr + expert * D + o_d, mask=o_d < D, other=0.0).to(tl.float32)
            tl.store(out_ptr + rows[:, None] * D + o_d[None, :], (x * wv[None, :]).to(out_ptr.dtype.element_ty),
                     mask=m)


def before(x, w, counts, out):
    T, D = x.shape
    E = counts.numel()
    grid = (triton.cdiv(T, BLOCK_M) + E,)  # a bound on the m-blocks: no count read back
    before_kernel[grid](x, w, counts, out, E, D, BLOCK_M=BLOCK_M, BLOCK_D=BLOCK_D)


@triton.jit
def after_table_kernel(counts_ptr, tile_to_expert, tile_to_m, expert_row_start, num_experts, max_tiles,
                       BLOCK_M: tl.constexpr, BLOCK_E: tl.constexpr, FILL: tl.constexpr):
    # one program per expert: the prefixes in registers (one tile of counts, tl.cumsum), then
    # this expert's m-blocks written into the tables
    e = tl.program_id(0)
    o_e = tl.arange(0, BLOCK_E)
    counts = tl.load(counts_ptr + o_e, mask=o_e < num_experts, other=0)
    blocks = tl.cdiv(counts, BLOCK_M)
    tile_starts = tl.cumsum(blocks, axis=0) - blocks
    row_starts = tl.cumsum(counts, axis=0) - counts
    first = tl.sum(tl.where(o_e == e, tile_starts, 0), axis=0)
    n_blk = tl.sum(tl.where(o_e == e, blocks, 0), axis=0)
    tl.store(expert_row_start + e, tl.sum(tl.where(o_e == e, row_starts, 0), axis=0))
    o_f = tl.arange(0, FILL)
    for j in range(0, n_blk, FILL):
        tl.store(tile_to_expert + first + j + o_f, e, mask=j + o_f < n_blk)
        tl.store(tile_to_m + first + j + o_f, j + o_f, mask=j + o_f < n_blk)
    if e == num_experts - 1:  # the spare programs of the bound grid: no expert
        for j in range(first + n_blk, max_tiles, FILL):
            tl.store(tile_to_expert + j + o_f, -1, mask=j + o_f < max_tiles)


@triton.jit
def after_kernel(x_ptr, w_ptr, counts_ptr, tile_to_expert, tile_to_m, expert_row_start, out_ptr, D,
                 BLOCK_M: tl.constexpr, BLOCK_D: tl.constexpr):
    tile = tl.program_id(0)
    expert = tl.load(tile_to_expert + tile)
    if expert >= 0:
        m_blk = tl.load(tile_to_m + tile)
        e_row = tl.load(expert_row_start + expert)
        n_e = tl.load(counts_ptr + expert)
        o_m = m_blk * BLOCK_M + tl.arange(0, BLOCK_M)
        rows = (e_row + o_m).to(tl.int64)
        for d in range(0, D, BLOCK_D):
            o_d = d + tl.arange(0, BLOCK_D)
            m = (o_m[:, None] < n_e) & (o_d[None, :] < D)
            x = tl.load(x_ptr + rows[:, None] * D + o_d[None, :], mask=m, other=0.0).to(tl.float32)
            wv = tl.load(w_ptr + expert * D + o_d, mask=o_d < D, other=0.0).to(tl.float32)
            tl.store(out_ptr + rows[:, None] * D + o_d[None, :], (x * wv[None, :]).to(out_ptr.dtype.element_ty),
                     mask=m)


def after(x, w, counts, out):
    T, D = x.shape
    E = counts.numel()
    max_tiles = triton.cdiv(T, BLOCK_M) + E
    tile_to_expert = torch.empty(max_tiles, dtype=torch.int32, device=x.device)
    tile_to_m = torch.empty(max_tiles, dtype=torch.int32, device=x.device)
    expert_row_start = torch.empty(E, dtype=torch.int32, device=x.device)
    # the prefix once: one tiny launch, E programs
    after_table_kernel[(E,)](counts, tile_to_expert, tile_to_m, expert_row_start, E, max_tiles, BLOCK_M=BLOCK_M,
                             BLOCK_E=triton.next_power_of_2(E), FILL=128, num_warps=1)
    after_kernel[(max_tiles,)](x, w, counts, tile_to_expert, tile_to_m, expert_row_start, out, D, BLOCK_M=BLOCK_M,
                               BLOCK_D=BLOCK_D)
