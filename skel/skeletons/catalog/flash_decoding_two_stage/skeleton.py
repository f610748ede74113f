"""Flash-decoding: split a decode query's KV sequence across programs, then merge the splits by their lse.

## What it does
A decode-attention kernel written one program per (batch, head) — or per (batch, KV head)
with the group's query heads packed — walks the whole KV cache in one loop with an online
softmax. Flash-decoding adds a grid axis over the sequence and turns it into two kernels:

- **stage 1**, grid `(batch, heads, num_kv_splits)`: program `split_id` runs the same
  online-softmax loop over its slice `[split_id * L, min((split_id + 1) * L, T))` and
  writes a normalised partial output `o_s = acc / l` and its log-sum-exp
  `lse_s = m + log(l)` to small fp32 buffers `[batch, heads, num_kv_splits, (D | 1)]`;
- **stage 2** (combine), grid `(batch, heads)`: loads the `num_kv_splits` partials,
  `w_s = exp(lse_s - max_s lse_s)`, and writes `sum_s w_s * o_s / sum_s w_s`.

Both stages are exact: the lse merge is the same algebra as the online rescale.

## Why it is faster
Decode is bound by reading the KV cache, and a (batch x heads) grid smaller than the SM
count reads it with a handful of programs: 8 sequences x 8 KV heads over a 32K-token cache
is 64 programs for 132 SMs, each a long serial loop. S splits multiply the programs by S,
so every SM streams KV at full bandwidth; the combine reads only `S x D` floats per head.
The gain is about min(S, SMs / programs) minus one small extra launch.

## Applies when
- a decode attention kernel (one query row per head — scores as `tl.sum(q[None, :] * k, 1)`
  — or a tile of a KV group's query heads, or a kernel named for decoding) loops over KV
  blocks with an online softmax (`exp` and a running `max`), the loop bound a runtime
  sequence length;
- the launch grid has no axis over the sequence (no `num_kv_splits` / `SPLIT_K` /
  segment index).

## Does not apply when
- prefill, or large batch x heads: the unsplit grid already fills the GPU and the split
  only adds the partial round trip and a second launch. A kernel named for prefill or
  extend (`_sparse_attn_prefill_ragged_kernel`) is taken at its word, even when it keeps
  one query row per program;
- short contexts (a few KV blocks): each split gets one block or none; choose the split
  count from `multi_processor_count`, batch and heads, and cap it by the number of KV
  blocks (a kernel that splits with a fixed count, `SPLIT_K = 4` at its launch, is
  suggested this as a refinement);
- the kernel already splits (a split-id program axis, `NUM_KV_SPLITS`, vLLM's
  `NUM_SEGMENTS_PER_SEQ`, or, by any name, a KV loop whose bounds are computed from a
  program id: `start = part * PARTITION_SIZE`), or is the combine kernel itself;
- the only sign of a decode query is a `tl.arange` over the head *dimension*
  (`offs_head_dim = tl.arange(0, HEAD_DIM)`): that is one head's features, not a tile of
  query heads, and a kernel with a tile of query rows is prefill;
- the reduction is a plain sum (split-K GEMM / GEMV): use `split-k-reduction`, whose
  partials add without an lse.
A split that gets no tokens (T short against the split count) must write lse = -inf and
a zero partial, never `acc / l` with `l = 0`, or the merge turns the row into NaN. Store
the partials in fp32. For GQA, pack the group's heads first (`gqa-head-packing`): it
divides the grid by the group size, which is what makes splitting necessary.

## References
- SGLang `kernels/ops/attention/decode_attention.py` (`_fwd_kernel_stage1`, `_fwd_grouped_kernel_stage1`, `_fwd_kernel_stage2`)
- vLLM `vllm/v1/attention/ops/triton_decode_attention.py` (`_fwd_kernel_stage1`, `_fwd_kernel_stage2`)
- lmdeploy `lmdeploy/pytorch/kernels/cuda/pagedattention.py` (`_fwd_grouped_split_kernel`, `_reduce_split_kernel`, `_get_split_k`; v0.9.0)
- lightllm `lightllm/models/llama/triton_kernel/flash_decoding_stage1.py` / `flash_decoding_stage2.py` (`_fwd_kernel_flash_decode_stage1`, `_fwd_kernel_flash_decode_stage2`)
- flash-linear-attention `fla/ops/attn/decoding.py` (`naive_attn_decoding_kernel`: one program per head, unsplit; v0.2.2)
- Dao et al., "Flash-Decoding for long-context inference" (2023)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.kernels.flow import args_of, call_name, calls_in, flow_of, has_call, is_call, names_in
from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import assign_targets, custom
from skel.skeletons.patterns import absent, calls_where, kernel_named, launches, loops_where
from skel.skeletons.predicates.host import literal_argument
from skel.skeletons.predicates.softmax_loops import ONLINE_SOFTMAX_LOOP, online_softmax_loops
from skel.skeletons.predicates.splits import SPLIT_NAMES

if TYPE_CHECKING:
    from skel.kernels.flow import Flow, Node
    from skel.kernels.model import Call, KernelFacts, Launch, Loop

#: `q[None, :] * k` or `k * q[None, :]`: one query row against a block of keys.
_VEC_MAT = re.compile(r"\[\s*None\s*,\s*:\s*\]\s*\*|\*\s*[\w.]+\s*\[\s*None\s*,\s*:\s*\]")
#: A tile of query heads: `cur_head = i_kvh * G + tl.arange(0, BLOCK_H)`.
_HEAD_TILE_TARGET = re.compile(r"(?i)\w*head\w*|(o|offs?|cur|i)_(h|hq|g)|o_heads?")
_HEAD_TILE_WIDTH = re.compile(r"BLOCK_H\w*|Q_HEAD_NUM|BLOCK_HQ|BLOCK_G|G|GROUP_SIZE|\w*HEAD\w*")


def _vector_scores(k: KernelFacts) -> list[int]:
    """`tl.sum(q[None, :] * k, 1)` inside an online-softmax loop: one query row per program."""
    fl = flow_of(k)
    loops = set(online_softmax_loops(k))
    return [c.line for c in fl.named("tl.sum")
            if args_of(c.node) and _VEC_MAT.search(fl.text(args_of(c.node)[0]))
            and any(lp.line in loops for lp in c.loops)]


#: a head *dimension* (`HEAD_DIM`, `BLOCK_HEADDIM`, `head_size`, `offs_head_dim`): the
#: features of one head, not a tile of query heads
_HEAD_DIM = re.compile(r"(?i)\w*(dim|size|dmodel|feat)\w*")


def _head_tiles(k: KernelFacts) -> list[int]:
    """An index tile over query heads, outside loops (a packed GQA group). A `tl.arange`
    over the head dimension (`offs_head_dim = tl.arange(0, HEAD_DIM)`) is not one."""
    lines = []
    for a in k.assigns:
        if a.loop_depth or "tl.arange" not in a.calls:
            continue
        m = re.search(r"tl\.arange\(\s*0\s*,\s*(\w+)\s*\)", a.value)
        if not m or not _HEAD_TILE_WIDTH.fullmatch(m.group(1)):
            continue
        width = m.group(1)
        if _HEAD_DIM.fullmatch(width) and width != "GROUP_SIZE":
            continue
        if any(_HEAD_TILE_TARGET.fullmatch(t) and not _HEAD_DIM.fullmatch(t) for t in a.targets):
            lines.append(a.line)
    return lines


def _decode_query(k: KernelFacts) -> list[int]:
    """Both kinds of decode query: score products in the flow's calls, head tiles in the
    kernel's assignments (one hit pointing at either)."""
    return _vector_scores(k) + _head_tiles(k)


_LOGS = re.compile(r"\btl\.(math\.)?log2?\(")


def _lse_names(k: KernelFacts) -> set[str]:
    """Names assigned a value that takes a `tl.log`: a log-sum-exp."""
    return {t for a in k.assigns if _LOGS.search(a.value) for t in assign_targets(a)}


def _stores_lse(c: Call, k: KernelFacts) -> bool:
    """`tl.store(lse_ptr + ..., m + tl.log(l))`: each program writes the log-sum-exp of its
    partial, which only a later merge reads (stage 1 of a split; lightllm names no split)."""
    return len(c.args) > 1 and bool(_LOGS.search(c.args[1]) or c.args[1].strip() in _lse_names(k))


def _softmax_loop_lines(k: KernelFacts) -> list[int]:
    """``online_softmax_loops``, kept in the flow's memo: every loop asks."""
    fl = flow_of(k)
    cached = fl.memo.get("flash-decoding-softmax-loops")
    if isinstance(cached, list):
        return cached
    lines = online_softmax_loops(k)
    fl.memo["flash-decoding-softmax-loops"] = lines
    return lines


def _combines(lp: Loop, k: KernelFacts) -> bool:
    """An online-softmax loop with no score product inside (no `tl.dot`, no `tl.sum(a * b)`)
    and no store: it rescales loaded partials by their lse — the combine stage itself."""
    # (the first loop on its line: the softmax loops are known by line)
    if lp.line not in _softmax_loop_lines(k) or next(x for x in k.loops if x.line == lp.line) is not lp:
        return False
    inside = [c for c in k.calls if lp.line <= c.line <= lp.end_line]
    # a store per step is a recurrence (RWKV's wkv), not a merge
    return not any(c.name in ("tl.dot", "tl.store") or (c.name == "tl.sum" and c.args and "*" in c.args[0])
                   for c in inside)


def _outside_loads(fl: Flow, expr: Node) -> set[str]:
    """Names ``expr`` reads as values, not only as the address of a `tl.load` (`seq_len =
    tl.load(seq_lens + seq)` depends on the data, not on `seq`)."""
    inner: set[str] = set()
    for c in calls_in(expr):
        if call_name(c) == "tl.load":
            inner |= names_in(c)
    return names_in(expr) - inner


def _split_axis_loops(k: KernelFacts) -> list[int]:
    """Online-softmax loops whose bounds are computed from a program id by arithmetic (not
    through a loaded length): each program of that grid axis walks its own slice of the
    KV (`start = part * PARTITION_SIZE`, `for blk in range(start // PAGE, ...)`), however
    the split is named."""
    fl = flow_of(k)
    if not fl.ok:
        return []
    softmax = set(_softmax_loop_lines(k))
    lines = []
    for lp in fl.loops:
        if lp.line not in softmax or lp.bounds is None:
            continue
        todo, seen = list(_outside_loads(fl, lp.bounds)), set()
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            defs = [d for d in fl.defs.get(n, ()) if not lp.holds(d.line)]
            if any(has_call([d.value], "tl.program_id") and not is_call(d.value, "tl.load") for d in defs):
                lines.append(lp.line)
                break
            for d in defs:
                todo += _outside_loads(fl, d.value)
    return lines


#: the KV loop of this program is a slice chosen by a grid axis: the split is there, by
#: whatever name (vLLM's `partition_idx`, a `part` axis)
KV_SPLIT_AXIS = custom("kv-split-grid-axis",
                       "a KV loop bounded by a program id (`start = part * PARTITION_SIZE`): the KV is already "
                       "split over a grid axis", _split_axis_loops)

WRITES_LSE = calls_where("tl.store", where=_stores_lse, name="writes-partial-lse",
                         describe="a log-sum-exp stored per program (`m + tl.log(l)`: a split's partial)")
LSE_COMBINE = loops_where(where=_combines, name="lse-combine",
                          describe="a loop merging loaded partials by their lse (the combine stage)")
DECODE_QUERY = custom(
    "decode-query",
    "a decode query (one query row per head, `tl.sum(q[None, :] * k, 1)`; a tile of a KV group's query heads)",
    _decode_query) | kernel_named(r"(?i)decod", search=True, line="start", name="decode-kernel",
                                  describe="a kernel named for decoding (one query per program)")

#: a kernel its authors named for prefill or extend: many query rows per sequence, so the
#: grid is already large — the "does not apply" case, whatever its inner loop looks like
PREFILL_KERNEL = kernel_named(r"(?i)prefill|extend", search=True, line="start", name="prefill-kernel",
                              describe="a kernel named for prefill or extend (`*prefill*`, `*extend*`)")

#: launch keywords that carry the split count
_SPLIT_COUNT = re.compile(r"(?i)split_?k|num_?(kv_?)?splits?|n_?splits?|kv_?splits?|max_?(num_?)?(kv_?)?splits?|"
                          r"num_segments\w*")


def _fixes_split_count(ln: Launch, k: KernelFacts) -> bool:
    """A launch passing a literal split count (`SPLIT_K = 4`)."""
    return any(literal_argument(ln, kw) for kw in ln.kwargs if _SPLIT_COUNT.fullmatch(kw))


#: No launch of the kernel in its file fixes the split count (`SPLIT_K = 4`): the count
#: should follow the SM count, batch and heads, or long contexts leave most SMs idle and
#: short ones pay for empty splits.
SPLITS_SIZED = absent(
    launches(own=True, where=_fixes_split_count, name="fixed-split-count",
             describe="a launch of the kernel with a literal split count (`SPLIT_K = 4`)"),
    name="split-count-per-call",
    describe="a split count chosen per call (from the SM count, batch and heads), not a fixed `SPLIT_K = 4`")

#: Present: a split (or a per-program lse store) in a decode-attention kernel, or the combine
#: stage itself. A split-K GEMM's `SPLIT_K` alone is split-k-reduction's, not this.
SKELETON = Skeleton(
    id="flash-decoding-two-stage",
    title="Flash-decoding: split-KV stage 1 + lse combine stage 2",
    summary="Split a decode query's KV loop across programs (partial o + lse per split), then merge by lse.",
    category=Category.DECOMPOSITION,
    doc=__doc__,
    present=((SPLIT_NAMES | WRITES_LSE | KV_SPLIT_AXIS) & DECODE_QUERY) | (SPLIT_NAMES & ONLINE_SOFTMAX_LOOP)
    | LSE_COMBINE,
    preconditions=[ONLINE_SOFTMAX_LOOP, DECODE_QUERY, ~PREFILL_KERNEL],
    subject=ONLINE_SOFTMAX_LOOP,
    refine=[SPLITS_SIZED],
    env=Env(),
    helps=("occupancy", "latency"),
)
