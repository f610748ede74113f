"""Read a custom attention mask as packed bits (32 keys a word), not one byte or float per (query, key).

## What it does
An attention kernel with a custom (tree, document, prefix-LM) mask loads, at every step of
its key loop, a `[BLOCK_M, BLOCK_N]` tile of the mask, one `bool`/`uint8` (or an `fp32`
0/1) per (query, key) pair, and uses it to set the scores to `-inf`:

    keep = tl.load(mask_ptr + offs_m[:, None] * stride_mm + cols[None, :], mask=..., other=0)
    qk = tl.where(keep, qk, float("-inf"))

The rewrite keeps the mask as packed bits, key `j` of a row in bit `j % 32` of word
`j // 32` (packed once per batch on the host, as FlashInfer's `packbits` does, and reused by
every layer), loads a `[BLOCK_M, BLOCK_N // 32]` tile of words and unpacks it with shifts
in registers:

    w = tl.load(bits_ptr + offs_m[:, None] * stride_bm + (start_n // 32 + offs_w)[None, :], ...)
    keep = tl.reshape((w[:, :, None] >> tl.arange(0, 32)[None, None, :]) & 1, (BLOCK_M, BLOCK_N)) != 0
    qk = tl.where(keep, qk, float("-inf"))

## Why it is faster
Each step of the key loop brings in a K and a V tile, `2 x BLOCK_N x D x 2` bytes for 16-bit
K/V, and the mask tile, `BLOCK_M x BLOCK_N` bytes for a byte mask (4x that for an fp32 one):
the mask is `BLOCK_M / (4 D)` of the K/V bytes, an eighth at `BLOCK_M = 64, D = 128`, a
quarter at `BLOCK_M = 128`, a half for an fp32 mask. Unlike K/V it is not shared between the
heads of a group nor reused across query tiles when it is per head, so over a long sequence
it is `Lq x Lk` bytes per head (512 MB for 32 heads at 4K x 4K) where K/V are `4 Lk D` bytes.
Packed bits move 1/8 of a byte mask's bytes (1/32 of an fp32 mask's) and take one load
instruction per 32 keys; the shifts and `& 1` are a few integer operations beside the
`BLOCK_M x BLOCK_N x D` multiply-adds of the step. It does not pay when the query tile is
small against the head dim (a decode or a verify step, `BLOCK_M = 16`, `D = 128`: the mask
is 1/32 of the step's bytes), or when the mask is a computed one (causal, sliding window:
no mask bytes at all).

## Applies when
- a loop over key blocks with a `tl.dot` (the attention scores) loads a 2-D tile of a mask
  tensor, rows by query and columns by key, and its values (directly, compared with 0, or
  combined with bounds) are the condition of a `tl.where` that selects the `tl.dot`'s
  scores;
- the mask is built before the kernel and read by more than one launch (every layer of a
  forward), so packing it once costs nothing per layer;
- pays when the query tile is large against the head dim: `BLOCK_M / (4 D)` (the byte
  mask's share of a step's K/V bytes) at least 1/8; it does not pay at 1/32 or less; with
  `BLOCK_M` or the head dim unknown it is conditional (`--shape BLOCK_M=64 --shape head_dim=128`).

## Does not apply when
- the mask is computed from indices (causal `offs_m[:, None] >= offs_n[None, :]`, a sliding
  window, a bounds mask): there are no mask bytes to pack;
- the mask tensor is an additive bias (`qk += tl.load(bias)`, ALiBi, relative positions):
  its values are not 0/1, bits cannot hold them;
- the mask is one vector per key (a key-padding mask, `[None, :]` only): `BLOCK_N` bytes a
  step, nothing against K/V;
- the scores are not in a key loop: a kernel that computes one `[BLOCK_M, BLOCK_N]` tile of
  `q @ k^T`, masks it and writes it out (Liger's `_fused_neighborhood_attention_qk_kernel`)
  reads each mask element once beside a score write of the same size; a pattern that can be
  computed from the indices (a neighbourhood, a window) is the better edit there;
- the kernel already reads packed words and unpacks them with `>>` and `& 1`.

## References
Promoted from the candidate cluster "message: masking" (`skel skeletons candidates`: 2
repositories, 4 commits, 8 kernels). The history is CUDA; the Triton shape is the same:
- flashinfer `include/flashinfer/attention/prefill.cuh` (`SinglePrefillWithKVCacheKernel`, `BatchPrefillWithRaggedKVCacheKernel`,
  `BatchPrefillWithPagedKVCacheKernel`: `float* custom_mask` read as `custom_mask[q_idx * kv_len + kv_idx]` becomes
  `uint8_t* custom_mask` read as `custom_mask[(q_idx * kv_len + kv_idx) / 8] >> ((q_idx * kv_len + kv_idx) % 8)`, with
  `packbits`/`segment_packbits` kernels to pack a boolean mask "little" bit-order) — at `3d43dc9dc1`, 2024-06-16,
  "perf: use packed bit array for attention mask (#308)"
- flashinfer `include/flashinfer/attention/prefill.cuh` (the same kernels: the custom mask introduced as one `float` a
  (query, key) pair, the before side of the commit above) — at `7304282a80`, 2024-05-27, "feat: support custom
  attention mask in prefill/append attention kernels (#266)"
- flashinfer `include/flashinfer/prefill.cuh` (`SinglePrefillWithKVCacheKernel`: a causal mask computed from the
  indices, folded into the score accumulator's start value, `-5e4`, and the scale into `q`: a computed mask,
  which this skeleton leaves alone) — at `9e3d33dce7`, 2023-09-29, "accelerate scale and mask"
Triton kernels of the mined repositories with the before shape:
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skel.kernels.flow import CallInfo, Flow, LoopInfo, Node, binary, flow_of, has_call, walk
from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN, Category, Env, Payoff, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.predicates.addresses import tile_load_2d
from skel.skeletons.predicates.positional_masks import positional_mask_loads

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts
    from skel.skeletons.base import Workload  # the floor re-exports the type (catalog modules import no kernels.workload)

#: the byte mask's share of a step's K/V bytes, BLOCK_M / (4 D), at which packing pays (BLOCK_M = 64, D = 128)
PAYS_AT = 1 / 8
#: at or under this share the mask is noise beside K/V (BLOCK_M = 16, D = 128: a decode or verify tile)
NOISE_AT = 1 / 32
#: names the query tile size goes by
_BLOCK_M = ("BLOCK_M", "BLOCK_SIZE_M", "BLOCK_Q", "BM", "BLOCK_H")
#: names the head dim goes by
_HEAD_DIM = ("head_dim", "HEAD_DIM", "head_size", "HEAD_SIZE", "BLOCK_DMODEL", "BLOCK_D", "BLOCK_DK", "D", "Lk", "Lq",
             "BLOCK_HEADDIM")


def _loop_with_dot(fl: Flow, c: CallInfo) -> LoopInfo | None:
    """The innermost loop around ``c`` that also runs a `tl.dot` (an attention key loop)."""
    dots = fl.named("tl.dot")
    for lp in reversed(c.loops):
        if any(lp in d.loops for d in dots):
            return lp
    return None


def _feeding_loads(fl: Flow, expr: Node, lp: LoopInfo) -> list[CallInfo]:
    """The loads in loop ``lp`` whose values ``expr`` reads (through names defined in the loop,
    or written inside ``expr`` itself)."""
    names, exprs = fl.closure(expr, within=lp)
    inside = {id(n) for e in exprs for n in walk(e)}
    return [c for c in fl.loads() if lp in c.loops and (set(c.targets) & names or id(c.node) in inside)]


def _shifted(fl: Flow, expr: Node, lp: LoopInfo) -> bool:
    """``expr`` unpacks bits: a `>>` on its way from the load (`(w >> j) & 1`)."""
    _, exprs = fl.closure(expr, within=lp)
    return any(binary(n, ">>") for e in exprs for n in walk(e))


def _mask_selects(k: KernelFacts, packed: bool) -> list[int] | None:
    """Lines of a `tl.where` in an attention key loop whose condition reads a 2-D tile loaded
    from memory in that loop (a (query, key) mask) and whose values are the `tl.dot`'s scores;
    ``packed``: the condition unpacks the tile with shifts (the technique), else it does not.
    A condition that reads the scores (`tl.where(m_i == -inf, 0, m_i)`) reads the K tile
    through the `tl.dot`: it tests the scores, not a mask."""
    fl = flow_of(k)
    if not fl.ok:
        return None
    lines: list[int] = []
    for w in fl.named("tl.where"):
        lp = _loop_with_dot(fl, w)
        cond = w.arg(0, "condition")
        if lp is None or cond is None:
            continue
        scores = [a for a in (w.arg(1, "x"), w.arg(2, "y")) if a is not None]
        if not any(has_call(fl.closure(a, within=lp)[1], "tl.dot") for a in scores):
            continue  # the selected values are not the scores
        if has_call(fl.closure(cond, within=lp)[1], "tl.dot"):
            continue  # a test of the scores themselves (`m == -inf`): the K tile reaches it through the dot
        tiles = [c for c in _feeding_loads(fl, cond, lp) if tile_load_2d(fl, c)]
        if not tiles or _shifted(fl, cond, lp) != packed:
            continue
        lines += [c.line for c in tiles] + [w.line]
    return sorted(set(lines)) or None


def positional_mask(k: KernelFacts) -> list[int] | None:
    """The selecting mask tile is one the launcher builds from positions (`torch.tril`, an
    `arange` comparison): computing it from the indices removes it, packing it only shrinks it."""
    fl = flow_of(k)
    if not fl.ok:
        return None
    loads = []
    for w in fl.named("tl.where"):
        lp = _loop_with_dot(fl, w)
        cond = w.arg(0, "condition")
        if lp is not None and cond is not None:
            loads += [c for c in _feeding_loads(fl, cond, lp) if tile_load_2d(fl, c)]
    return positional_mask_loads(fl, k, loads)


def mask_tile_selects(k: KernelFacts) -> list[int] | None:
    """A (query, key) mask tile read element by element (a byte or a float a pair) that
    selects the attention scores in the key loop."""
    return _mask_selects(k, packed=False)


def packed_mask_selects(k: KernelFacts) -> list[int] | None:
    """A mask tile read as packed words, unpacked with `>>` and `& 1`, selecting the scores."""
    return _mask_selects(k, packed=True)


#: the subject: a mask tile loaded element by element selects the scores in the key loop
MASK_TILE_SELECT = custom(
    "attention-mask-tile-select",
    "an attention key loop that loads a [BLOCK_M, BLOCK_N] mask tile (one element a query-key pair) and uses it "
    "in `tl.where` on the `tl.dot` scores",
    mask_tile_selects)
#: the technique: the mask tile read as packed words and unpacked with shifts
PACKED_MASK_SELECT = custom(
    "attention-mask-bits-select",
    "an attention key loop that unpacks mask bits from loaded words (`>>`, `& 1`) to select the scores",
    packed_mask_selects)


#: the mask is positions only: `index-computed-causal-mask` drops it instead
POSITIONAL_MASK = custom(
    "mask-built-from-positions",
    "a mask the launcher builds from positions (`tril`, `triu`, an `arange` comparison) and passes to the kernel",
    positional_mask)


def _size(wl: Workload, names: tuple[str, ...]) -> tuple[int | None, str]:
    for n in names:
        v = wl.size(n)
        if v is not None:
            return v, n
    return None, ""


def mask_share_of_step(k: KernelFacts, wl: Workload) -> Payoff:
    """The byte mask's share of a key step's K/V bytes, ``BLOCK_M / (4 D)`` (a 1-byte mask
    tile `BLOCK_M x BLOCK_N`, 16-bit K and V tiles `BLOCK_N x D` each): ≥ 1/8 pays, ≤ 1/32
    does not, between (and unknown sizes) conditional."""
    bm, bm_name = _size(wl, _BLOCK_M)
    d, d_name = _size(wl, _HEAD_DIM)
    if bm is None or d is None:
        return Payoff(UNKNOWN, "pays if the query tile is large against the head dim: BLOCK_M / (4 x head_dim) at "
                      "least 1/8 (BLOCK_M = 64 at head_dim 128)", "--shape BLOCK_M=64 --shape head_dim=128")
    share = bm / (4 * d)
    what = (f"a byte mask tile of {bm_name}={bm} rows is {share:.3g} of a step's K/V bytes at {d_name}={d} "
            f"(BLOCK_M / (4 D); an fp32 mask 4x that)")
    if share >= PAYS_AT:
        return Payoff(PAYS, f"{what}: packed bits take 7/8 of it away (31/32 for an fp32 mask)")
    if share <= NOISE_AT:
        return Payoff(DOES_NOT_PAY, f"{what}: noise beside K/V, packing saves nothing measurable")
    return Payoff(UNKNOWN, f"{what}: between 1/32 and 1/8, pays if the mask is fp32 or per head; measure it "
                  "with `skel verify`")


SKELETON = Skeleton(
    id="bitpacked-attention-mask",
    title="Bit-packed custom attention mask",
    summary="Read a custom attention mask as 32 bits a word unpacked with shifts, not a byte or float per query-key pair.",
    category=Category.MEMORY,
    doc=__doc__,
    ruled_out_by=(r"\bpack\w* bits?\b", r"\bbit[\s-]?pack\w*", r"\bpackbits\b", r"\bbit[\s-]?mask\b"),
    present=PACKED_MASK_SELECT,
    preconditions=[MASK_TILE_SELECT, ~POSITIONAL_MASK],
    subject=MASK_TILE_SELECT,
    env=Env(),
    payoff=mask_share_of_step,
    helps=("memory",),
)
