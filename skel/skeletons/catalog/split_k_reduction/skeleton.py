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
- the kernel only moves or indexes data (integer bookkeeping: running prefix sums of routing
  counts, offsets): there is no floating-point reduction to split;
- the module is batch-invariant or deterministic (sglang's `batch_invariant_ops/`, vLLM's
  `determinism/`): its kernels keep one reduction order whatever the batch, and a split
  sized by the launch changes that order, and the bits;
- there are already enough programs to fill the GPU (large M x N, many rows): splitting
  adds a merge pass and partial-buffer traffic for nothing;
- the loop is a recurrence whose state depends on the previous step (a linear-attention
  scan): the pieces are not independent (use a chunked scan with state passing instead);
- decode attention with an online softmax: the partials need their lse to merge
  (`flash-decoding-two-stage`);
- bitwise reproducibility is required and the merge would use atomics (fp32 atomic
  adds are order-dependent; use the partial buffer + second pass instead);
- the kernel already splits (`SPLIT_K`, `NUM_KV_SPLITS`, a split id program axis,
  atomic merge of per-program partial sums, or per-block partials the host sums with
  `.sum(0)` — on a large grid the inverse, `in-kernel-reduction`, is the suggestion).
The number of splits should come from the SM count and the grid
(`multi_processor_count // programs`), not a constant, and never exceed the number of
K blocks; with atomics the output must be zeroed first (and `reset_to_zero` under
autotune). Row offsets `n * K` pass 2**31 for large weights: compute them in int64.

## References
- Triton `python/triton/ops/matmul.py` (`_kernel`, `SPLIT_K` with atomic_add)
- flash-linear-attention `fla/ops/common/chunk_h_split.py` (`chunk_fwd_kernel_h_split` + `chunk_fwd_kernel_h_reduction`) — at `49b00f0a94`, before 2025-07-01
- Liger-Kernel `src/liger_kernel/ops/group_norm.py` (`_group_norm_backward_kernel`, atomics) — at `5e3bf99abb`, before 2025-07-01
- lmdeploy `lmdeploy/pytorch/kernels/cuda/pagedattention.py` (`_get_split_k`: the split count from the SM count; v0.9.0)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import assign_targets, soft
from skel.skeletons.patterns import absent, calls_where, kernel_named, loops_where
from skel.skeletons.predicates.loops import loop_carried
from skel.skeletons.predicates.names import IDENT
from skel.skeletons.predicates.partials import HOST_MERGED_PARTIALS
from skel.skeletons.predicates.programs import grid_stride_loops, program_id_vars
from skel.skeletons.predicates.softmax_loops import ONLINE_SOFTMAX_LOOP
from skel.skeletons.predicates.splits import SPLIT_NAMES
from skel.skeletons.predicates.tiles import BROADCAST_2D, OUTER_PRODUCT
from skel.skeletons.predicates.workload import DETERMINISTIC_MODULE, MOVES_DATA_ONLY

if TYPE_CHECKING:
    from skel.kernels.model import Assign, Call, KernelFacts, Loop

_REDUCE = {"tl.dot", "tl.sum"}
_HEADS = {"tl", "triton", "cdiv", "min", "max", "tl.cdiv"}


def _static_names(k: KernelFacts) -> set[str]:
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


#: `tl.sum(ids[:, None] == experts[None, :])`: a count of matches (a histogram of routing
#: ids), not a partial sum over a reduction dimension.
_COUNT = re.compile(r"==|!=")


def _accumulators(k: KernelFacts, lp: Loop) -> list[Assign | Call]:
    """Assignments in the loop that carry a tl.dot/tl.sum reduction across iterations
    (counts of matches, such as tokens per expert, are histograms, not reductions)."""
    carried = loop_carried(k, lp)
    out: list[Assign | Call] = []
    for a in k.assigns:
        if not (lp.line <= a.line <= lp.end_line) or not set(a.calls) & _REDUCE:
            continue
        if _COUNT.search(a.value) and "tl.dot" not in a.calls:
            continue
        if set(assign_targets(a)) & set(carried) and (a.op != "=" or set(assign_targets(a)) & set(a.names)):
            out.append(a)
    for c in k.calls:  # acc = tl.dot(a, b, acc)
        if c.name == "tl.dot" and lp.line <= c.line <= lp.end_line and c.target in carried and (
                len(c.args) > 2 and c.args[2] == c.target or c.kwargs.get("acc") == c.target):
            out.append(c)
    return out


def _long_reduction_loop(lp: Loop, k: KernelFacts, runtime_only: bool = True) -> bool:
    """A loop that loads and carries a `tl.dot`/`tl.sum` accumulator (not a recurrence), over
    a runtime trip count unless not ``runtime_only``."""
    if lp.kind in ("tl.static_range", "while") or not lp.args:
        return False
    if runtime_only:
        end = lp.args[1] if len(lp.args) > 1 else lp.args[0]
        if not set(IDENT.findall(end)) - (_static_names(k) | _HEADS):
            return False  # compile-time trip count
    if not any(c.name == "tl.load" and lp.line <= c.line <= lp.end_line for c in k.calls):
        return False
    return bool(_accumulators(k, lp)) and not _recurrence(k, lp)


def _reduction_loop(lp: Loop, k: KernelFacts) -> bool:
    return _long_reduction_loop(lp, k, runtime_only=False)


def _recurrence(k: KernelFacts, lp: Loop) -> bool:
    """A carried 2-D state updated with an outer product (`h = h * d + k[:, None] * v[None, :]`):
    a linear-recurrence scan, whose steps are not independent pieces of a sum."""
    carried = loop_carried(k, lp)
    for a in k.assigns:
        if lp.line <= a.line <= lp.end_line and set(assign_targets(a)) & set(carried) \
                and OUTER_PRODUCT.search(a.value):
            return True
    return False


def _merged_partials(k: KernelFacts, lp: Loop) -> bool:
    """The loop's accumulator leaves the program as a partial result: added atomically
    into an address not taken from routing data, or stored into a per-program partial
    buffer (an address reading the program id) that a second pass reduces."""
    accs: set[str] = set()
    for a in _accumulators(k, lp):
        accs |= set(assign_targets(a)) if hasattr(a, "targets") else {a.target}
    pids = program_id_vars(k)
    routed = _loaded_names(k)
    for c in k.calls:
        if c.name not in ("tl.store", "tl.atomic_add") or c.line <= lp.end_line:
            continue
        val = c.args[1] if len(c.args) > 1 else c.kwargs.get("value", c.kwargs.get("val", ""))
        addr = c.args[0] if c.args else c.kwargs.get("pointer", "")
        if not set(IDENT.findall(val)) & accs or set(IDENT.findall(addr)) & routed:
            continue
        if c.name == "tl.atomic_add" or set(IDENT.findall(addr)) & pids or "tl.program_id" in addr:
            return True
    return False


def _grid_stride_partials(lp: Loop, k: KernelFacts) -> bool:
    """A long reduction loop that is itself a grid-stride loop (each program reduces a
    slice) whose partial result is merged by atomics or a second pass."""
    return _long_reduction_loop(lp, k) and lp.line in set(grid_stride_loops(k)) and _merged_partials(k, lp)


def _vector_output(c: Call, k: KernelFacts) -> bool:
    """Decode/GEMV shape: a vector-matrix product reduced with tl.sum inside the reduction
    loop (`tl.sum(q[None, :] * k, 1)`)."""
    if not (c.args and "*" in c.args[0] and BROADCAST_2D.search(c.args[0])):
        return False
    return any(lp.line <= c.line <= lp.end_line and _long_reduction_loop(lp, k) for lp in k.loops)


def _split_over_programs(k: KernelFacts, lp: Loop) -> bool:
    """A grid axis partitions the loop: its range reads a program id (`range(pid_k * n,
    ..., BLOCK_K)`, `range(pid, T, num_programs)`). A loop every program runs in full
    (a fused-MoE K loop) is not split, whatever its result is merged with."""
    pids = program_id_vars(k)
    return any(set(IDENT.findall(x)) & pids or "tl.program_id" in x or "tl.num_programs" in x
               for x in lp.args)


def _loaded_names(k: KernelFacts) -> set[str]:
    """Names whose value is read from memory (directly or through arithmetic): routing
    indices such as a top-k expert id or the token a row belongs to."""
    names = {t for a in k.assigns if "tl.load" in a.calls for t in assign_targets(a)}
    for _ in range(3):
        names |= {t for a in k.assigns if set(a.names) & names and a.loop_depth == 0 for t in assign_targets(a)}
    return names


def _atomic_partial(c: Call, k: KernelFacts) -> bool:
    """tl.atomic_add of a loop-carried tl.dot/tl.sum accumulator from a reduction loop that
    a grid axis splits: per-program partial sums merged atomically. An atomic add whose
    address comes from loaded routing data (`out + token * N`, `counts + expert_id`:
    combining top-k experts, counting tokens per expert) is a scatter, not a split merge."""
    accs = set()
    for lp in k.loops:
        if not _split_over_programs(k, lp):
            continue
        for a in _accumulators(k, lp):
            accs |= set(assign_targets(a)) if hasattr(a, "targets") else {a.target}
    val = c.args[1] if len(c.args) > 1 else c.kwargs.get("val", "")
    addr = c.args[0] if c.args else c.kwargs.get("pointer", "")
    return bool(set(IDENT.findall(val)) & accs) and not set(IDENT.findall(addr)) & _loaded_names(k) \
        and "tl.load" not in addr


ATOMIC_PARTIALS = calls_where("tl.atomic_add", where=_atomic_partial, name="atomic-partial-sums",
                              describe="an accumulated `tl.dot`/`tl.sum` partial merged with `tl.atomic_add`")
GRID_STRIDE_PARTIALS = loops_where(where=_grid_stride_partials, name="grid-stride-partials",
                                   describe="a reduction loop striding over programs (each program reduces a slice)")
LONG_REDUCTION = loops_where(
    where=_long_reduction_loop, name="long-reduction-loop",
    describe="a loop over a runtime-sized reduction (sequence length, K) carrying a `tl.dot`/`tl.sum` accumulator",
)
VECTOR_OUTPUT = calls_where(
    "tl.sum", where=_vector_output, name="decode-like-output",
    describe="a vector output per program (`tl.sum(q[None, :] * k, 1)` in the loop)",
) | kernel_named(r"(?i)decod", search=True, name="decode-kernel",
                 describe="a kernel named for decoding (one query per program)")

#: Decode attention (an online softmax over KV blocks) merges its splits by lse, not by a sum:
#: that is `flash-decoding-two-stage`, with its own template; this skeleton keeps the sums.
NOT_SOFTMAX_ATTENTION = ~ONLINE_SOFTMAX_LOOP

#: no accumulated partial is merged with `tl.atomic_add`
DETERMINISTIC_MERGE = absent(
    ATOMIC_PARTIALS, name="deterministic-split-merge",
    describe="a deterministic merge of the partials (a partial buffer and a second pass; fp32 `tl.atomic_add` sums in "
    "a different order each run)")

REDUCTION_LOOP = loops_where(where=_reduction_loop, name="reduction-loop",
                             describe="a loop carrying a `tl.dot`/`tl.sum` accumulator")

#: the subject: the long reduction a split would share between programs
LONG_REDUCTION_LOOP = soft(LONG_REDUCTION, relaxed=REDUCTION_LOOP)

SKELETON = Skeleton(
    id="split-k-reduction",
    title="Split-K reduction across programs (GEMV, skinny GEMM)",
    summary="Split a long summed reduction (K) across programs (a split grid axis) and add the partials: fills SMs in GEMV.",
    category=Category.DECOMPOSITION,
    doc=__doc__,
    ruled_out_by=(r"\bsplit[\s_-]?k\b", r"\bsplit[\s_-]?kv\b", r"\bflash[\s-]?decoding\b", r"\bnum_kv_splits\b"),
    present=SPLIT_NAMES | ATOMIC_PARTIALS | GRID_STRIDE_PARTIALS | HOST_MERGED_PARTIALS,
    # a runtime-length bound is where splitting pays, not what makes it possible: the same
    # accumulating loop over a compile-time length is a near miss
    preconditions=[LONG_REDUCTION_LOOP, VECTOR_OUTPUT, NOT_SOFTMAX_ATTENTION,
                   ~DETERMINISTIC_MODULE, ~MOVES_DATA_ONLY],
    subject=LONG_REDUCTION_LOOP,
    env=Env(),
    helps=("occupancy", "latency"),
    refine=[DETERMINISTIC_MERGE],
)
