"""Split a long reduction (K, or the KV sequence in decode) across programs and merge the parts.

## What it does
When a kernel has few output tiles but a long reduction loop — decode attention with one
query per (batch, head), a GEMV, a skinny GEMM — a grid axis is added that splits the
reduction range into `NUM_SPLITS` pieces. Each program reduces its piece and writes a
partial result; the parts are merged either

- by `tl.atomic_add` into a zeroed fp32 output (split-K GEMM: partial sums add), or
- through a partial buffer and a second small kernel (flash-decoding: each split writes
  its partial output `o_s` and log-sum-exp `lse_s`; the merge rescales by
  `exp(lse_s - max_lse)` and normalises).

## Why it is faster
With batch x heads (or M x N tiles) smaller than the SM count, the unsplit kernel runs a
handful of long programs and leaves most SMs idle; a decode step over a 32K-token cache
with 8 (batch, head) pairs uses 8 of 132 SMs. Splitting the sequence into S pieces
multiplies the parallelism by S, and the merge reads only S partial vectors per output.
The gain is roughly min(S, SMs / programs) for the memory-bound loop, minus the extra
launch and partial traffic.

## Applies when
- the kernel loops over a long, runtime-sized reduction (sequence length, K) with a
  carried accumulator (`acc += tl.dot/tl.sum`, or an online-softmax `o = o * r + ...`);
- the output per program is a vector (`q[None, :] * k` vector-matrix products, decode,
  GEMV), so the grid is small;
- the launch grid does not already cover the reduction axis.

## Does not apply when
- there are already enough programs to fill the GPU (prefill, large batch x heads,
  large M x N): splitting adds a merge pass and partial-buffer traffic for nothing;
- the loop is a recurrence whose state depends on the previous step (a linear-attention
  scan): the pieces are not independent (use a chunked scan with state passing instead);
- bitwise reproducibility is required and the merge would use atomics (fp32 atomic
  adds are order-dependent; use the partial buffer + second pass instead);
- the kernel already splits (`SPLIT_K`, `NUM_KV_SPLITS`, a split id program axis,
  atomic merge of per-program partial sums).
The number of splits should come from the SM count and the grid
(`multi_processor_count // (batch * heads)`), not a constant; with atomics the output
must be zeroed first (and `reset_to_zero` under autotune). With splits rounded up to whole
blocks, trailing splits can get no tokens: they must write lse = -inf and a zero partial
(not `b_o / b_l` with `b_l = 0`), or the merge turns the whole row into NaN. The offset
`bh * seq_len * D` passes 2**31 for long caches: compute it in int64.

## References
- Triton `python/triton/ops/matmul.py` (`_kernel`, `SPLIT_K` with atomic_add)
- SGLang `kernels/ops/attention/decode_attention.py` (`_fwd_kernel_stage1`/`_fwd_kernel_stage2`, `num_kv_splits`)
- vLLM `vllm/v1/attention/ops/triton_decode_attention.py` (`_fwd_grouped_kernel_stage1`, `_fwd_kernel_stage2`)
- flash-linear-attention `fla/ops/attn/decoding.py` (`naive_attn_decoding_kernel`, unsplit)
- flash-linear-attention `fla/ops/common/chunk_h_split.py` (`chunk_fwd_kernel_h_split` + `chunk_fwd_kernel_h_reduction`)
- Liger-Kernel `src/liger_kernel/ops/group_norm.py` (`_group_norm_backward_kernel`, atomics)
"""

from __future__ import annotations

import re

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import assign_targets, custom, soft, uses_name
from skel.skeletons.predicates.loops import loop_carried
from skel.skeletons.predicates.names import IDENT
from skel.skeletons.predicates.programs import grid_stride_loops
from skel.skeletons.predicates.tiles import BROADCAST_2D, OUTER_PRODUCT

_REDUCE = {"tl.dot", "tl.sum"}
_HEADS = {"tl", "triton", "cdiv", "min", "max", "tl.cdiv"}


def _static_names(k) -> set[str]:
    """constexpr parameters and names computed only from them."""
    static = {p.name for p in k.params if p.constexpr}
    changed = True
    while changed:
        changed = False
        for a in k.assigns:
            if "tl.load" in a.calls or "tl.program_id" in a.calls:
                continue
            reads = set(a.names) - _HEADS
            if reads <= static:
                new = set(assign_targets(a)) - static
                if new and a.loop_depth == 0:
                    static |= new
                    changed = True
    return static


def _accumulators(k, lp) -> list:
    """Assignments in the loop that carry a tl.dot/tl.sum reduction across iterations."""
    carried = loop_carried(k, lp)
    out = []
    for a in k.assigns:
        if not (lp.line <= a.line <= lp.end_line) or not set(a.calls) & _REDUCE:
            continue
        if set(assign_targets(a)) & set(carried) and (a.op != "=" or set(assign_targets(a)) & set(a.names)):
            out.append(a)
    for c in k.calls:  # acc = tl.dot(a, b, acc)
        if c.name == "tl.dot" and lp.line <= c.line <= lp.end_line and c.target in carried and (
                len(c.args) > 2 and c.args[2] == c.target or c.kwargs.get("acc") == c.target):
            out.append(c)
    return out


def _long_reduction_loops(k, runtime_only: bool = True) -> list:
    static = _static_names(k) | _HEADS
    loads = [c.line for c in k.calls if c.name == "tl.load"]
    found = []
    for lp in k.loops:
        if lp.kind in ("tl.static_range", "while") or not lp.args:
            continue
        end = lp.args[1] if len(lp.args) > 1 else lp.args[0]
        if runtime_only and not set(IDENT.findall(end)) - static:
            continue  # compile-time trip count
        if not any(lp.line <= ln <= lp.end_line for ln in loads):
            continue
        if _accumulators(k, lp) and not _recurrence(k, lp):
            found.append(lp)
    return found


def _recurrence(k, lp) -> bool:
    """A carried 2-D state updated with an outer product (`h = h * d + k[:, None] * v[None, :]`):
    a linear-recurrence scan, whose steps are not independent pieces of a sum."""
    carried = loop_carried(k, lp)
    for a in k.assigns:
        if lp.line <= a.line <= lp.end_line and set(assign_targets(a)) & set(carried) \
                and OUTER_PRODUCT.search(a.value):
            return True
    return False


def _grid_stride_partials(k) -> list[int]:
    """A long reduction loop that is itself a grid-stride loop: each program reduces a slice."""
    strided = set(grid_stride_loops(k))
    return [lp.line for lp in _long_reduction_loops(k) if lp.line in strided]


def _long_reduction(k) -> list[int]:
    return [lp.line for lp in _long_reduction_loops(k)]


def _vector_output(k) -> list[int]:
    """Decode/GEMV shape: a vector-matrix product reduced with tl.sum inside the reduction
    loop (`tl.sum(q[None, :] * k, 1)`), or a kernel named for decoding."""
    if re.search(r"(?i)decod", k.name):
        return [k.line_start]
    lines = []
    for lp in _long_reduction_loops(k):
        for c in k.calls:
            if c.name == "tl.sum" and lp.line <= c.line <= lp.end_line and c.args and "*" in c.args[0] \
                    and BROADCAST_2D.search(c.args[0]):
                lines.append(c.line)
    return lines


def _atomic_partial(k) -> list[int]:
    """tl.atomic_add of a loop-carried tl.dot/tl.sum accumulator: per-program partial sums merged atomically."""
    accs = set()
    for lp in k.loops:
        for a in _accumulators(k, lp):
            accs |= set(assign_targets(a)) if hasattr(a, "targets") else {a.target}
    lines = []
    for c in k.calls_named("tl.atomic_add"):
        val = c.args[1] if len(c.args) > 1 else c.kwargs.get("val", "")
        if set(IDENT.findall(val)) & accs:
            lines.append(c.line)
    return lines


SPLIT_NAMES = uses_name(
    r"(?i)split_?k|split_?kv|num_?(kv_?)?splits?|n_?splits?|kv_?splits?|split_(id|idx|indices)|i_split|"
    r"split_size|max_num_splits",
    name="split-names", describe="a split of the reduction (`SPLIT_K`, `num_kv_splits`, `split_id`)")
ATOMIC_PARTIALS = custom("atomic-partial-sums",
                         "an accumulated `tl.dot`/`tl.sum` partial merged with `tl.atomic_add`", _atomic_partial)
GRID_STRIDE_PARTIALS = custom("grid-stride-partials",
                               "a reduction loop striding over programs (each program reduces a slice)",
                               _grid_stride_partials)
LONG_REDUCTION = custom(
    "long-reduction-loop",
    "a loop over a runtime-sized reduction (sequence length, K) carrying a `tl.dot`/`tl.sum` accumulator",
    _long_reduction,
)
VECTOR_OUTPUT = custom(
    "decode-like-output",
    "a vector output per program (`tl.sum(q[None, :] * k, 1)` in the loop, or a decode kernel)",
    _vector_output,
)

DETERMINISTIC_MERGE = custom(
    "deterministic-split-merge",
    "a deterministic merge of the partials (a partial buffer and a second pass; fp32 `tl.atomic_add` sums in "
    "a different order each run)",
    lambda k: not _atomic_partial(k))

REDUCTION_LOOP = custom(
    "reduction-loop", "a loop carrying a `tl.dot`/`tl.sum` accumulator",
    lambda k: [lp.line for lp in _long_reduction_loops(k, runtime_only=False)])

SKELETON = Skeleton(
    id="split-k-reduction",
    title="Split-K / split-KV reduction (flash-decoding)",
    summary="Split a long reduction loop across programs (a split grid axis) and merge partials: fills SMs in decode/GEMV.",
    category=Category.DECOMPOSITION,
    doc=__doc__,
    present=SPLIT_NAMES | ATOMIC_PARTIALS | GRID_STRIDE_PARTIALS,
    # a runtime-length bound is where splitting pays, not what makes it possible: the same
    # accumulating loop over a compile-time length is a near miss
    preconditions=[soft(LONG_REDUCTION, relaxed=REDUCTION_LOOP), VECTOR_OUTPUT],
    env=Env(),
    helps=("occupancy", "latency"),
    refine=[DETERMINISTIC_MERGE],
)
