"""Split a long summed reduction (K of a GEMV or skinny GEMM) across programs and add the parts.

## What it does
When a kernel has few output tiles but a long reduction loop — a GEMV, a skinny GEMM, a
weight gradient summed over many rows — a grid axis is added that splits the reduction
range into `NUM_SPLITS` pieces. Each program reduces its piece and writes a partial sum;
the parts are added either

- by `tl.atomic_add` into a zeroed fp32 output (split-K GEMM), or
- through a partial buffer `[NUM_SPLITS, N]` and a second small kernel (or a host `.sum(0)`)
  that adds the splits in a fixed order (deterministic).

Decode attention splits the same way but merges by log-sum-exp, not by a sum: that is
`flash-decoding-two-stage`, which this skeleton leaves to it.

## Why it is faster
With M x N tiles (or output rows) fewer than the SM count, the unsplit kernel runs a
handful of long programs and leaves most SMs idle: a GEMV with N = 1024 outputs in blocks
of 64 over K = 64K is 16 programs for 132 SMs. Splitting K into S pieces multiplies the
parallelism by S; the merge reads S partial vectors per output. The gain is roughly
min(S, SMs / programs) for the memory-bound loop, minus the extra launch and partial
traffic.

## Applies when
- the kernel loops over a long, runtime-sized reduction (K, rows, a sequence) with a
  carried sum (`acc += tl.dot/tl.sum`, `acc = tl.dot(a, b, acc)`);
- the output per program is a vector (`tl.sum(w * x[None, :], 1)` vector-matrix products,
  GEMV), so the grid is small;
- the loop is not an online softmax (no running `max` with `exp` rescaling: that is
  attention, see `flash-decoding-two-stage`);
- the launch grid does not already cover the reduction axis.

## Does not apply when
- there are already enough programs to fill the GPU (large M x N, many rows): splitting
  adds a merge pass and partial-buffer traffic for nothing;
- the loop is a recurrence whose state depends on the previous step (a linear-attention
  scan): the pieces are not independent (use a chunked scan with state passing instead);
- decode attention with an online softmax: the partials need their lse to merge
  (`flash-decoding-two-stage`);
- bitwise reproducibility is required and the merge would use atomics (fp32 atomic
  adds are order-dependent; use the partial buffer + second pass instead);
- the kernel already splits (`SPLIT_K`, `NUM_KV_SPLITS`, a split id program axis,
  atomic merge of per-program partial sums).
The number of splits should come from the SM count and the grid
(`multi_processor_count // programs`), not a constant, and never exceed the number of
K blocks; with atomics the output must be zeroed first (and `reset_to_zero` under
autotune). Row offsets `n * K` pass 2**31 for large weights: compute them in int64.

## References
- Triton `python/triton/ops/matmul.py` (`_kernel`, `SPLIT_K` with atomic_add)
- flash-linear-attention `fla/ops/common/chunk_h_split.py` (`chunk_fwd_kernel_h_split` + `chunk_fwd_kernel_h_reduction`; v0.2.2)
- Liger-Kernel `src/liger_kernel/ops/group_norm.py` (`_group_norm_backward_kernel`, atomics; v0.5.10)
- lmdeploy `lmdeploy/pytorch/kernels/cuda/pagedattention.py` (`_get_split_k`: the split count from the SM count; v0.9.0)
"""

from __future__ import annotations

import re

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import assign_targets, custom
from skel.skeletons.predicates.loops import loop_carried
from skel.skeletons.predicates.names import IDENT
from skel.skeletons.predicates.programs import grid_stride_loops
from skel.skeletons.predicates.softmax_loops import ONLINE_SOFTMAX_LOOP
from skel.skeletons.predicates.splits import SPLIT_NAMES
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


def _long_reduction_loops(k) -> list:
    static = _static_names(k) | _HEADS
    loads = [c.line for c in k.calls if c.name == "tl.load"]
    found = []
    for lp in k.loops:
        if lp.kind in ("tl.static_range", "while") or not lp.args:
            continue
        end = lp.args[1] if len(lp.args) > 1 else lp.args[0]
        if not set(IDENT.findall(end)) - static:
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

#: Decode attention (an online softmax over KV blocks) merges its splits by lse, not by a sum:
#: that is `flash-decoding-two-stage`, with its own template; this skeleton keeps the sums.
NOT_SOFTMAX_ATTENTION = ~ONLINE_SOFTMAX_LOOP

SKELETON = Skeleton(
    id="split-k-reduction",
    title="Split-K reduction across programs (GEMV, skinny GEMM)",
    summary="Split a long summed reduction (K) across programs (a split grid axis) and add the partials: fills SMs in GEMV.",
    category=Category.DECOMPOSITION,
    doc=__doc__,
    present=SPLIT_NAMES | ATOMIC_PARTIALS | GRID_STRIDE_PARTIALS,
    preconditions=[LONG_REDUCTION, VECTOR_OUTPUT, NOT_SOFTMAX_ATTENTION],
    env=Env(),
    helps=("occupancy", "latency"),
)
