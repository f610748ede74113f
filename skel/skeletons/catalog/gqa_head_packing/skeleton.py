"""In GQA/MQA decode, let one program handle all query heads that share a KV head, with tl.dot.

## What it does
A decode-attention kernel written per query head loads that head's query vector and, for
every KV block, computes scores as a vector-matrix product on CUDA cores:

    b_s = tl.sum(b_q[None, :] * b_k, 1)                  # [BS]
    b_o = b_o * r + tl.sum(b_p[:, None] * b_v, 0)         # [D]

With grouped-query attention, the `G = HQ // H` query heads of a group read the *same*
K/V. Head packing gives one program the `BLOCK_H` (>= G, padded to 16) query heads of a
KV head and turns both products into tensor-core matmuls on [BLOCK_H, D] tiles:

    o_h = i_kvh * G + tl.arange(0, BLOCK_H)               # the group's query heads
    b_q = tl.load(q + o_h[:, None] * D + o_d[None, :], mask=o_h[:, None] < (i_kvh + 1) * G)
    b_s = tl.dot(b_q, tl.trans(b_k))                      # [BLOCK_H, BS]
    b_o = b_o * r[:, None] + tl.dot(b_p.to(b_v.dtype), b_v)

## Why it is faster
Two effects: each K/V block is loaded once per group instead of once per query head
(G-fold less KV traffic, and decode is bound by exactly that traffic), and the score and
output products run on tensor cores (MMA needs M >= 16, which a single query row never
provides). For G = 4–8 the KV bytes per step drop 4–8x.

## Applies when
- a decode (one query row per head) attention kernel computes scores with
  `tl.sum(q[None, :] * k, 1)` inside a loop over KV blocks, with no `tl.dot`, and the
  scores go through softmax work in that loop (an `exp` of them and a running `max`):
  that is what marks the reduction as attention over shared K/V;
- query heads are grouped onto KV heads (`i_h = i_hq // G`, `kv_group_num`), i.e.
  GQA or MQA (MLA decode is the extreme case: all heads share one latent KV).

## Does not apply when
- plain multi-head attention (G = 1): nothing is shared, and padding one head to 16 rows
  wastes the MMA. A kernel whose every launch in its file sits under `if kv_group_num ==
  1:` (or `G == 1`, `num_heads == num_kv_heads`) is such a kernel: the launcher sends
  grouped heads to another kernel — in practice the file's packed sibling — so the
  technique is there in effect. A launcher in another file is not seen;
- the vector-matrix reduction is not an attention score: an SSM / Mamba state readout
  `tl.sum(state * C[None, :], 1)` shares only small B/C vectors across a head group,
  with no K/V blocks to load once and no softmax;
- the "KV loop" is a guard that runs at most once (`for _ in range(0, block_mask, 1)`):
  each program sees one KV block (split-KV stage 1 writing logits), so there is no
  per-block reload to share;
- prefill / many query rows per head: the kernel already has [BT, D] query tiles for
  `tl.dot`;
- the kernel already packs heads (`BLOCK_H`/`Q_HEAD_NUM`/`G` head tiles feeding `tl.dot`).
Pad `BLOCK_H` to at least 16 and mask the padded heads; the grid changes from
`(batch, HQ)` to `(batch, H * cdiv(G, BLOCK_H))`. Combine with split-KV for long
contexts (the grid shrinks by G).

## References
- SGLang `kernels/ops/attention/decode_attention.py` (`_fwd_grouped_kernel_stage1`, `BLOCK_H`, `kv_group_num`)
- vLLM `vllm/v1/attention/ops/triton_decode_attention.py` (`_fwd_grouped_kernel_stage1`)
- lightllm `gqa_flash_decoding_stage1.py` (`_fwd_kernel_flash_decode_stage1`)
- flash-linear-attention `fla/ops/nsa/parallel.py` (`parallel_nsa_fwd_kernel`: the `G` query heads of KV head `i_h` loaded as one `[G, BK]` tile at row `i_h * G`) — at `49b00f0a94`, before 2025-07-01
- flash-linear-attention `fla/ops/attn/decoding.py` (`naive_attn_decoding_kernel`, per head) — at `49b00f0a94`, before 2025-07-01
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.kernels.flow import args_of, flow_of
from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import calls, custom, soft
from skel.skeletons.patterns import absent, assigns, launches
from skel.skeletons.predicates.dots import NO_DOT
from skel.skeletons.predicates.loops import at_most_one_trip

if TYPE_CHECKING:
    from skel.kernels.flow import CallInfo, LoopInfo
    from skel.kernels.model import Assign, KernelFacts, Launch

_HEAD_BLOCK = re.compile(r"BLOCK_H\w*|GROUP|BLOCK_HQ|BH|Q_HEAD_NUM|VALID_BLOCK_H|G|BG|BLOCK_G|NUM_Q\w*_PER_KV|"
                         r"QUERY_GROUP_SIZE|KV_GROUP_NUM|GQA_GROUP_SIZE|GROUP_SIZE|HEAD_GROUP\w*")
_HEAD_INDEX = re.compile(r"(?i)\w*head\w*|(i|off|cur|pid|idx)_h\w*|i_kvh|kvh\w*|kv_h\w*")
_GROUP = re.compile(r"\w+\s*//\s*\(?\s*(G|kv_group_num|KV_GROUP_NUM|(?i:\w*group\w*)|num_queries_per_kv|\w*_per_kv\w*|"
                    r"HQ\s*//\s*H|NUM_Q\w*|QH_PER_KH)\b")
_VEC_MAT = re.compile(r"\[\s*None\s*,\s*:\s*\]\s*\*|\*\s*[\w.]+\s*\[\s*None\s*,\s*:\s*\]")


def _head_tile(a: Assign, k: KernelFacts) -> bool:
    """`o_h = i_h * G + tl.arange(0, G)`: a tile of query heads of one KV group."""
    for m in re.finditer(r"([\w.]+)\s*\*\s*(\w+)\s*\+\s*tl\.arange\(\s*0\s*,\s*(\w+)\s*\)", a.value):
        head, mult, width = m.groups()
        if _HEAD_BLOCK.fullmatch(width) and (_HEAD_BLOCK.fullmatch(mult) or mult == width) \
                and _HEAD_INDEX.fullmatch(head.split(".")[-1]):
            return True
    return False


_EXP = {"tl.exp", "tl.exp2", "tl.math.exp", "tl.math.exp2", "exp", "exp2", "safe_exp"}
_MAX = {"tl.max", "tl.maximum", "tl.math.max"}


def _vector_scores_in_loop(k: KernelFacts) -> list[int]:
    """`tl.sum(q[None, :] * k, 1)` inside a loop over KV blocks whose result goes through
    softmax work in that loop (an `exp` and a running `max` of the scores): attention
    decode, not any vector-matrix reduction (an SSM readout `tl.sum(state * C[None, :], 1)`
    is an output, not a score), and a real loop, not a 0/1-trip guard."""
    fl = flow_of(k)
    lines = []
    for c in fl.named("tl.sum"):
        if not args_of(c.node) or not _VEC_MAT.search(fl.text(args_of(c.node)[0])):
            continue
        loop = next((lp for lp in reversed(c.loops)
                     if lp.kind not in ("tl.static_range", "while") and not at_most_one_trip(fl, k, lp)), None)
        if loop is None or not c.targets:
            continue
        scores = set(c.targets)

        def reads_scores(x: CallInfo, loop: LoopInfo = loop, scores: set[str] = scores) -> bool:  # bound now: called within this iteration
            return any(bool(fl.closure(a, within=loop)[0] & scores) for a in args_of(x.node))

        body = [x for x in fl.calls if loop.holds(x.line) and x.line >= c.line]
        if any(x.name in _EXP and reads_scores(x) for x in body) and \
                any(x.name in _MAX and reads_scores(x) for x in body):
            lines.append(c.line)
    return lines


HEAD_TILE_DOT = assigns(where=_head_tile, name="head-tile",
                        describe="a tile of query heads `i_h * G + tl.arange(0, G)`") & calls(
    "tl.dot", name="dot", describe="a `tl.dot`")
VECTOR_SCORES = custom("vector-scores-in-softmax-kv-loop",
                       "scores as `tl.sum(q[None, :] * k, 1)` inside a loop over KV blocks with online-softmax"
                       " work (`exp` and a running `max`)", _vector_scores_in_loop)
# a KV-head index from a query head: `i_h = i_hq // G`, `cur_kv_head = cur_head // kv_group_num`
GROUPED_KV = assigns(value=_GROUP, name="grouped-kv-head",
                     describe="a KV head shared by a group of query heads (`i_hq // G`)")

#: a host test saying the KV group is one query head: `kv_group_num == 1`, `G == 1`,
#: `num_queries_per_kv == 1`, `num_heads == num_kv_heads`
_GROUP_NAME = r"(?:kv_group_num|KV_GROUP_NUM|G|group_size|GROUP_SIZE|\w*groups?\w*|num_queries_per_kv|\w*_per_kv\w*|QH_PER_KH)"
_UNGROUPED = re.compile(rf"^\s*\(?\s*(?:{_GROUP_NAME}\s*==\s*1|1\s*==\s*{_GROUP_NAME}|"
                        r"(?:\w*num_heads|\w*num_q_heads|H_?Q)\s*==\s*(?:\w*num_kv_heads|\w*num_k_heads|H_?KV?))\s*\)?\s*$")
_UNGROUPED_NEGATED = re.compile(rf"^\s*not\s*\(\s*{_GROUP_NAME}\s*!=\s*1\s*\)\s*$")


def _ungrouped_guard(text: str) -> bool:
    parts = [p for p in re.split(r"\band\b", text)] if " or " not in text else [text]
    return any(_UNGROUPED.match(p) or _UNGROUPED_NEGATED.match(p) for p in parts)


def _launched_ungrouped_only(ln: Launch, k: KernelFacts) -> bool:
    """Every launch of the kernel in its file sits under a test that the KV group is one
    head (`if kv_group_num == 1:`): the host sends grouped heads to another kernel (the
    file's packed one), so this one only ever runs plain multi-head attention."""
    own = [x for x in k.launches if x.kernel == k.name]
    return bool(own) and all(any(_ungrouped_guard(g) for g in x.guards) for x in own)


#: the host launches the kernel only for plain MHA: grouped heads go elsewhere
MHA_ONLY_LAUNCH = launches(own=True, where=_launched_ungrouped_only, name="launched-only-when-ungrouped",
                           describe="every launch of the kernel under `if kv_group_num == 1:` (plain multi-head "
                           "attention; the host sends grouped heads to another kernel)")
LAUNCHED_FOR_GROUPS = absent(
    MHA_ONLY_LAUNCH, name="launched-for-grouped-heads",
    describe="a kernel the host runs for grouped heads too (not launched only under `if kv_group_num == 1:`, "
    "which sends GQA to another kernel, such as the file's packed one)")

SKELETON = Skeleton(
    id="gqa-head-packing",
    title="Pack a GQA group's query heads into one tl.dot tile (decode)",
    summary="Decode attention: one program per KV head handles its BLOCK_H query heads with tl.dot; KV loaded once.",
    category=Category.DECOMPOSITION,
    doc=__doc__,
    present=HEAD_TILE_DOT,
    # the `// G` spelling of the group is a literal detail (MLA shares one latent KV head
    # by other names): decode scores without it are a near miss
    preconditions=[VECTOR_SCORES, soft(GROUPED_KV), NO_DOT, LAUNCHED_FOR_GROUPS],
    subject=VECTOR_SCORES,
    env=Env(),
    helps=("memory", "compute"),
)
