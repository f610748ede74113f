"""Compute a causal / sliding-window mask from the row and column indices instead of loading a mask tensor built with `tril`.

## What it does
The host builds the attention mask from positions alone, a lower triangle
(`torch.tril(torch.ones(L, L))`), an additive upper triangle of `-inf`
(`torch.triu(torch.full((L, L), float("-inf")), 1)`), a band for a sliding window
(`.tril().triu(-W)`), a triangle with the first `P` columns opened for a prefix LM, and
passes it to an attention kernel that loads a `[BLOCK_M, BLOCK_N]` tile of it at every step
of its key loop:

    m = tl.load(mask_ptr + offs_m[:, None] * stride_mm + cols[None, :])
    qk = tl.where(m != 0, qk, float("-inf"))      # or: qk += m.to(tl.float32)

The rewrite drops the mask tensor and its pointer and compares the indices the tile already
holds, in registers:

    qk = tl.where(offs_m[:, None] >= cols[None, :], qk, float("-inf"))
    # window: & (offs_m[:, None] - cols[None, :] < WINDOW); prefix LM: | (cols[None, :] < prefix_len)

The window or prefix length goes in as a scalar argument.

## Why it is faster
Each step of the key loop reads a K and a V tile, `2 x BLOCK_N x D x 2` bytes at 16 bits,
and the mask tile, `BLOCK_M x BLOCK_N` bytes for a `bool` mask and 4x that for the `fp32`
one `torch.ones(...).tril()` or a `-inf` triangle give: the mask is `BLOCK_M / (4 D)` of the
step's K/V bytes for a byte mask (1/8 at `BLOCK_M = 64, D = 128`) and `BLOCK_M / D` for an
fp32 one (a half). K/V tiles are shared by the query tiles of a head through L2, but the mask
rows differ for every query tile and the `L x L` tensor (64 MB in fp32 at 4K) is read again
for every head and batch row it is broadcast over, so it goes to DRAM: over a forward it is
`B x H x L^2` elements against `4 B x H x L x D` bytes of K/V. The index compare costs one
integer compare a score, beside the `D` multiply-adds of the score, and no load, no
address arithmetic and no registers for a mask pointer; the whole mask goes, where packing
it (`bitpacked-attention-mask`) keeps an eighth. With the mask a function of the indices the
key loop can also stop at the diagonal (`tile-skipping`). It does not pay when the query
tile is small against the head dim (`BLOCK_M = 16, D = 256`: a byte mask is 1/64 of a step).

## Applies when
- a loop over key blocks with a `tl.dot` (the scores) loads a 2-D tile of a mask tensor,
  rows by query and columns by key, and uses it as the condition of a `tl.where` on the
  scores or adds it to the scores;
- every launch of the kernel in its file passes, for that tensor, one the launching function
  builds from positions: the argument is written with `tril`/`triu`/`arange`, or the function
  calls `tril`/`triu` before the launch, reads no caller's mask (`attn_mask`,
  `attention_mask`, a tree, document or segment mask) and draws nothing at random;
- pays when the query tile is large against the head dim: a byte mask's share of a step's
  K/V bytes, `BLOCK_M / (4 D)`, at least 1/16 (`BLOCK_M = 32` at `D = 128`); none at 1/64 or
  less; conditional on `--shape BLOCK_M=64 --shape head_dim=128` when unknown.

## Does not apply when
- the mask is a real custom mask: a tree (speculative decoding), a document / segment mask, a
  mask passed in by the caller or drawn at random (a test), even when the launcher also
  intersects it with a triangle: the tensor carries information the indices do not;
- the kernel is not launched in its file (a library kernel): where its mask comes from is not
  in sight, so nothing is said;
- the kernel already compares the indices (`offs_m[:, None] >= offs_n[None, :]`) in its key
  loop: the causal part is computed, a loaded tile beside it is the custom part;
- the tile is an additive bias (ALiBi, relative positions) or one flag a key (a key-padding
  vector, `[None, :]`), whatever its launcher: the first is not a mask, the second is
  `BLOCK_N` bytes a step;
- the scores are not in a key loop (a masked row softmax, one `q @ k^T` tile written out).

## References
- lightllm `lightllm/models/llama/triton_kernel/context_flashattention_nopad.py` (`_fwd_kernel`: the mask tile load
  `# mask = tl.load(mask_ptrs + start_n, ...)` left commented out and the causal mask computed as
  `tl.where(offs_m[:, None] >= (start_n + offs_n[None, :]), qk, float("-inf"))`; the file's `torch_att` reference
  still builds `torch.tril(torch.ones(seqlen, seqlen))`) — at `360eb453a8`, 2023-07-22, "init lightllm repo"
- xformers `xformers/triton/softmax.py` (`_softmax`: the `causal` meta-parameter folds `k <= n` into the load's
  mask, "optional performance optimization, if triton is used and the attention is causal", while a user mask is
  read as `add_mask = tl.load(mask_ptrs, ...)`) — at `dd96b8d8be`, 2021-10-18, "Initial commit"; the causal path
  fixed at `31c2292754`, 2022-02-08, "Fix causal flag on softmax Triton on CPU (#212)"
- flashinfer `include/flashinfer/prefill.cuh` (`SinglePrefillWithKVCacheKernel`: the causal predicate computed
  from `q_idx`, `kv_idx`, `qo_len` and `kv_len` and folded into the scores' start value, no mask tensor) — at
  `9e3d33dce7`, 2023-09-29, "accelerate scale and mask"
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, cast

from skel.kernels.flow import (CallInfo, Flow, LoopInfo, Node, binary, comparison, flow_of, has_call, walk)
from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN, Category, Env, Payoff, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.predicates.addresses import tile_load_2d
from skel.skeletons.predicates.positional_masks import positional_mask_loads

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts
    from skel.skeletons.base import Workload  # the floor re-exports the type (catalog modules import no kernels.workload)

#: a byte mask's share of a step's K/V bytes, BLOCK_M / (4 D), at which dropping it pays (BLOCK_M = 32, D = 128)
PAYS_AT = 1 / 16
#: at or under this share the mask is noise beside K/V (BLOCK_M = 16, D = 256)
NOISE_AT = 1 / 64
#: names the query tile size goes by
_BLOCK_M = ("BLOCK_M", "BLOCK_SIZE_M", "BLOCK_Q", "BM", "BT")
#: names the head dim goes by
_HEAD_DIM = ("head_dim", "HEAD_DIM", "head_size", "HEAD_SIZE", "BLOCK_DMODEL", "BLOCK_D", "BLOCK_DK", "D", "Lk", "Lq",
             "BLOCK_HEADDIM")

def _key_loop(fl: Flow, c: CallInfo) -> LoopInfo | None:
    """The innermost loop around ``c`` that also runs a `tl.dot` (an attention key loop)."""
    dots = fl.named("tl.dot")
    for lp in reversed(c.loops):
        if any(lp in d.loops for d in dots):
            return lp
    return None


def _reads_dot(fl: Flow, expr: Node, lp: LoopInfo) -> bool:
    """``expr`` reads a `tl.dot`'s result (through every definition of the names it reads:
    a device helper's lines sit outside the loop's lines, so no `within=` filter)."""
    return has_call(fl.closure(expr)[1], "tl.dot")


def _feeding_loads(fl: Flow, expr: Node, lp: LoopInfo) -> list[CallInfo]:
    """The loads in loop ``lp`` (a folded helper's too) whose values ``expr`` reads, through
    the names it reads or written inside ``expr`` itself."""
    names, exprs = fl.closure(expr)
    inside = {id(n) for e in exprs for n in walk(e)}
    return [c for c in fl.loads() if lp in c.loops and (set(c.targets) & names or id(c.node) in inside)]


def _mask_tiles(k: KernelFacts) -> list[tuple[CallInfo, int]]:
    """``(tile load, line of its use)`` for each 2-D tile loaded in an attention key loop that
    either is the condition of a `tl.where` on the `tl.dot` scores or is added to them, and
    feeds no `tl.dot` itself (not the K or V tile)."""
    fl = flow_of(k)
    if not fl.ok:
        return []
    memo_key = "index-computed-causal-mask:tiles"
    if memo_key in fl.memo:
        return list(cast("list[tuple[CallInfo, int]]", fl.memo[memo_key]))  # what this function kept
    found: list[tuple[CallInfo, int]] = []
    for w in fl.named("tl.where"):
        lp = _key_loop(fl, w)
        cond = w.arg(0, "condition")
        if lp is None or cond is None:
            continue
        values = [a for a in (w.arg(1, "x"), w.arg(2, "y")) if a is not None]
        if not any(_reads_dot(fl, a, lp) for a in values) or _reads_dot(fl, cond, lp):
            continue  # not a select of the scores, or a test of the scores themselves
        found += [(c, w.line) for c in _feeding_loads(fl, cond, lp) if tile_load_2d(fl, c)]
    for defs in fl.defs.values():
        for d in defs:
            lp = next((lp for lp in reversed(d.loops) if any(lp in x.loops for x in fl.named("tl.dot"))), None)
            if lp is None or not (d.op == "+=" or binary(d.value, "+")):
                continue
            if has_call([d.value], "tl.dot"):
                continue  # the scores themselves (`qk += tl.dot(q, k)`)
            first = [x for x in defs if lp in x.loops and has_call([x.value], "tl.dot")]
            if not first:
                continue  # the sum is not the scores
            kv = {id(c.node) for x in first for c in _feeding_loads(fl, x.value, lp)}  # the K tile
            found += [(c, d.line) for c in _feeding_loads(fl, d.value, lp)
                      if id(c.node) not in kv and tile_load_2d(fl, c) and not _reads_dot(fl, c.node, lp)]
    seen: set[tuple[int, int]] = set()
    out = []
    for c, line in found:
        if (c.line, line) not in seen:
            seen.add((c.line, line))
            out.append((c, line))
    fl.memo[memo_key] = out
    return list(out)


def mask_tile_on_scores(k: KernelFacts) -> list[int] | None:
    """A (query, key) tile loaded in an attention key loop that masks the scores: the
    condition of a `tl.where` on them, or added to them."""
    return sorted({x for c, line in _mask_tiles(k) for x in (c.line, line)}) or None


def index_built_mask(k: KernelFacts) -> list[int] | None:
    """Every launch of the kernel in its file passes, for a mask tile the scores read, a tensor
    its launching function builds from positions (`tril`/`triu`/`arange`); the launches' lines."""
    fl = flow_of(k)
    if not fl.ok:
        return None
    return positional_mask_loads(fl, k, [c for c, _ in _mask_tiles(k)])


_ROW = re.compile(r"\[:,None\]")
_COL = re.compile(r"\[None,:\]")


def _row_vs_column(fl: Flow, n: Node) -> bool:
    """``n`` compares a row vector with a column one: `offs_m[:, None] >= offs_n[None, :]`, or
    their difference with a bound (`o_q[:, None] - o_k[None, :] < W`)."""
    cmp = comparison(n)
    if cmp is None:
        return False
    left, _, right = cmp
    lt, rt = fl.key(left), fl.key(right)
    if (_ROW.search(lt) and _COL.search(rt)) or (_COL.search(lt) and _ROW.search(rt)):
        return True
    return any(binary(side, "-") and _ROW.search(t) is not None and _COL.search(t) is not None
               for side, t in ((left, lt), (right, rt)))


def computed_mask_on_scores(k: KernelFacts) -> list[int] | None:
    """The key loop already computes a (query, key) mask from indices: a `tl.where` in it
    whose condition compares a row vector (`[:, None]`) with a column one (`[None, :]`) and
    reads no loaded tile."""
    fl = flow_of(k)
    if not fl.ok:
        return None
    lines: list[int] = []
    for w in fl.named("tl.where"):
        lp = _key_loop(fl, w)
        cond = w.arg(0, "condition")
        if lp is None or cond is None:
            continue
        if any(tile_load_2d(fl, c) for c in _feeding_loads(fl, cond, lp)):
            continue
        _, exprs = fl.closure(cond)
        if any(_row_vs_column(fl, n) for e in exprs for n in walk(e)):
            lines.append(w.line)
    return sorted(set(lines)) or None


#: the subject: a mask tile loaded in the key loop masks the scores
MASK_TILE_ON_SCORES = custom(
    "attention-mask-tile-on-scores",
    "an attention key loop that loads a [BLOCK_M, BLOCK_N] mask tile and selects (`tl.where`) or offsets (`+`) the "
    "`tl.dot` scores with it",
    mask_tile_on_scores)
#: the mask tensor is built from positions by the launching function
INDEX_BUILT_MASK = custom(
    "mask-built-from-indices",
    "every launch passes a mask its launching function builds from positions (`torch.tril`/`triu`/`arange`), no "
    "caller's, random or packed mask",
    index_built_mask)
#: the technique: the key loop compares row and column indices
COMPUTED_MASK = custom(
    "index-compare-mask",
    "an attention key loop that masks the scores with a comparison of row and column indices "
    "(`offs_m[:, None] >= offs_n[None, :]`)",
    computed_mask_on_scores)


def _size(wl: Workload, names: tuple[str, ...]) -> tuple[int | None, str]:
    for n in names:
        v = wl.size(n)
        if v is not None:
            return v, n
    return None, ""


def mask_share_of_step(k: KernelFacts, wl: Workload) -> Payoff:
    """A byte mask tile's share of a key step's K/V bytes, ``BLOCK_M / (4 D)`` (a `BLOCK_M x
    BLOCK_N` byte tile against 16-bit K and V tiles of `BLOCK_N x D`; an fp32 mask is 4x
    that): ≥ 1/16 pays, ≤ 1/64 does not, between (and unknown sizes) conditional."""
    bm, bm_name = _size(wl, _BLOCK_M)
    d, d_name = _size(wl, _HEAD_DIM)
    if bm is None or d is None:
        return Payoff(UNKNOWN, "pays if the query tile is large against the head dim: BLOCK_M / (4 x head_dim) at "
                      "least 1/16 (BLOCK_M = 32 at head_dim 128)", "--shape BLOCK_M=64 --shape head_dim=128")
    share = bm / (4 * d)
    what = (f"a byte mask tile of {bm_name}={bm} rows is {share:.3g} of a step's K/V bytes at {d_name}={d} "
            f"(BLOCK_M / (4 D); an fp32 mask 4x that)")
    if share >= PAYS_AT:
        return Payoff(PAYS, f"{what}: comparing the indices removes all of it for an integer compare a score")
    if share <= NOISE_AT:
        return Payoff(DOES_NOT_PAY, f"{what}: noise beside K/V, dropping it saves nothing measurable")
    return Payoff(UNKNOWN, f"{what}: between 1/64 and 1/16, pays if the mask is fp32 or broadcast over many heads; "
                  "measure it with `skel verify`")


SKELETON = Skeleton(
    id="index-computed-causal-mask",
    title="Causal mask from indices, not a mask tensor",
    summary="Compare row and column indices in registers instead of loading a tril/triu-built mask tile every key step.",
    category=Category.MEMORY,
    doc=__doc__,
    ruled_out_by=(r"\bmask from (?:the )?ind(?:ices|exes)\b", r"\bcompute the (?:causal )?mask\b",
                  r"\bin[- ]kernel (?:causal )?mask\b"),
    present=COMPUTED_MASK,
    preconditions=[MASK_TILE_ON_SCORES, INDEX_BUILT_MASK],
    subject=MASK_TILE_ON_SCORES,
    env=Env(),
    payoff=mask_share_of_step,
    helps=("memory",),
)
