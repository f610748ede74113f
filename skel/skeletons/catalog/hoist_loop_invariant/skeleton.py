"""Move loads and math that do not change across loop iterations out of the loop.

## What it does
Inside a loop, an assignment whose inputs are all defined outside the loop — a weight
row loaded from a pointer that does not move, a norm or gate computed from such a load,
a cast of a loop-invariant tile — computes the same value every iteration. Hoisting it
above the loop computes it once:

    for t in range(T):                          w = tl.load(w_ptr + cols).to(tl.float32)
        w = tl.load(w_ptr + cols)         →     for t in range(T):
        y = x_t * w                                 y = x_t * w

## Why it is faster
A load inside the loop is re-issued every iteration: address arithmetic, an L1/L2 round
trip and its latency on the loop's critical path, and any math applied to it. Triton's
own loop-invariant code motion (the `triton-licm` pass in the 3.x NVIDIA and AMD
pipelines) hoists an invariant `tl.load` only when the loop body does no memory writes,
and moves side-effect-free math only once its inputs are outside the loop. Loops that
store every iteration — a recurrence writing one output row per step, the common case
in decode and scan kernels — therefore keep the load and everything computed from it
inside. How much the manual hoist buys depends on the share of the work: cheap
per-tile work (q/k normalisation, a gate) hides under the loads of a memory-bound decode
step; it pays when the repeated work is a real share (long loops over small tiles,
compute-heavy steps).

## Applies when
- an assignment inside a `for` loop calls `tl.load` (possibly with a cast, reduction or
  transcendental on the result) and reads only names that the loop does not change (not
  the loop variable, not anything derived from it, not a pointer the loop advances);
- the same loop writes memory (`tl.store`, atomics), which stops the compiler from
  hoisting the load itself — but not to the buffer the load reads.

## Does not apply when
- the loop only reads: the compiler's LICM already hoists the invariant load (check the
  TTGIR if unsure; older Triton versions may not);
- the loaded memory is written inside the loop (by this program, `tl.store`/atomics to
  the same buffer) or by other programs it synchronises with (spin-waits, locks): the
  reload is intentional; such loops are skipped here only when the store visibly
  targets the same base pointer;
- the value is under a condition inside the loop (`if USE_X:`), whose hoisting would
  load out of bounds or change semantics when the condition is false — check the `if`;
- the loop runs at most once by construction — a guard `for _ in range(0, flag, 1)` (or
  `range(flag)`) whose stop is a 0/1 value: a comparison, `tl.where(c, 1, 0)`, a literal
  0/1, or a constexpr flag parameter (bool default, `IS_*`/`USE_*`/`HAS_*` name). A
  runtime stop that only happens to be 0 or 1 (a plain integer argument) cannot be told
  apart statically and is still reported;
- hoisting would keep a large tile live across the loop and push register pressure into
  spills (a `[BT, BK]` tile hoisted out of an inner loop can cost more than the reload).
Detection limits: the facts give names, not dataflow through pointers or memory, so a
value computed from names the loop never reassigns is called invariant even if the
pointed-to memory changes (the store check above is a heuristic); pure math on
invariant values is not reported, since the compiler moves it. `present` means the
kernel computes expensive work (a reduction, a transcendental, a `tl.dot`) before a
loop that reads it *and* no invariant load is left inside a storing loop — positive
evidence that hoisting was done, not just the absence of a problem.

## References
- flash-linear-attention `fla/ops/common/fused_recurrent.py` (`fused_recurrent_fwd_kernel`: the per-head decay `b_g_gamma = tl.load(g_gamma + i_h)` loaded once before the time loop that stores every step) — at `49b00f0a94`, before 2025-07-01
- flash-linear-attention `fla/ops/attn/decoding.py` (`naive_attn_decoding_kernel`: `b_q * scale` before the KV loop) — at `49b00f0a94`, before 2025-07-01
- Liger-Kernel `src/liger_kernel/ops/rms_norm.py` (`_rms_norm_backward_kernel`: `W_row` loaded once per program) — at `5e3bf99abb`, before 2025-07-01
- Liger-Kernel `src/liger_kernel/ops/cross_entropy.py` (`liger_cross_entropy_kernel`: a per-element `tl.where` hoisted into a scalar fix-up after the loop) — at `5e3bf99abb`, before 2025-07-01
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import assign_calls, assign_targets, custom
from skel.skeletons.patterns import assigns
from skel.kernels.flow import flow_of
from skel.skeletons.predicates.loops import at_most_one_trip
from skel.skeletons.predicates.names import IDENT

if TYPE_CHECKING:
    from skel.kernels.model import Assign, KernelFacts, Loop

_TRANSFORM = {"tl.sum", "tl.max", "tl.min", "tl.sqrt", "tl.rsqrt", "tl.exp", "tl.exp2", "tl.log", "tl.log2",
              "tl.sigmoid", "tl.dot", "tl.math.rsqrt", "tl.math.exp2", "tl.math.exp", "exp", "exp2", "log",
              "rsqrt", "sqrt", "softplus", "sigmoid", "tl.extra.cuda.libdevice.rsqrt", "l2norm", "tl.cumsum"}
_NOT_VALUES = {"tl", "float", "int", "True", "False", "None", "inf"}
_MEMORY_WRITES = {"tl.store", "tl.atomic_add", "tl.atomic_max", "tl.atomic_min", "tl.atomic_xchg", "tl.atomic_cas",
                  "tl.atomic_and", "tl.atomic_or"}


def _reads(a: Assign) -> set[str]:
    """Values the assignment reads (function names and `tl` removed; method receivers kept)."""
    functions = {c for c in a.calls if "." not in c}
    return set(a.names) - functions - _NOT_VALUES


def _variant(k: KernelFacts, lp: Loop) -> set[str]:
    """Names whose value can differ between iterations of ``lp``."""
    body = sorted((a for a in k.assigns if lp.line <= a.line <= lp.end_line), key=lambda a: a.line)
    # each assignment's targets and reads, derived once: the sweeps below ask again and again
    targets = [assign_targets(a) for a in body]
    reads = [_reads(a) for a in body]
    first: dict[str, int] = {}
    for a, ts in zip(body, targets):
        for t in ts:
            first.setdefault(t, a.line)
    reads_at: dict[str, int] = {}
    for a, rs in zip(body, reads):
        for n in rs:
            reads_at.setdefault(n, a.line)
    for c in k.calls:
        if lp.line <= c.line <= lp.end_line:
            for x in c.args + list(c.kwargs.values()):
                for n in IDENT.findall(x):
                    reads_at[n] = min(reads_at.get(n, c.line), c.line)
    variant = set(lp.targets)
    variant |= {t for inner in k.loops if lp.line < inner.line <= lp.end_line for t in inner.targets}
    for a, ts in zip(body, targets):  # carried: read before (or by) its first reassignment, or updated in place
        for t in ts:
            if a.op != "=" or (t in reads_at and reads_at[t] <= first[t]):
                variant.add(t)
    changed = True
    while changed:
        changed = False
        for ts, rs in zip(targets, reads):
            if rs & variant:
                new = set(ts) - variant
                if new:
                    variant |= new
                    changed = True
    return variant


def _writes_to(k: KernelFacts, lp: Loop, base: str) -> bool:
    return any(c.name in _MEMORY_WRITES and lp.line <= c.line <= lp.end_line and c.args
               and (m := IDENT.match(c.args[0].strip())) is not None and m.group(0) == base for c in k.calls)


def _loop_writes(k: KernelFacts, lp: Loop) -> bool:
    return any(c.name in _MEMORY_WRITES and lp.line <= c.line <= lp.end_line for c in k.calls)


def _invariant_in_loop(k: KernelFacts) -> list[int]:
    lines = []
    loops = {lp.line: lp for lp in k.loops if lp.kind != "while"}
    fl = None
    guard: dict[int, bool] = {}
    cache: dict[int, set[str]] = {}
    for a in k.assigns:
        lp = loops.get(a.loop_line)
        # the cheap tests first (every kernel is graded against this skeleton): a load
        # assigned inside a loop that also writes memory. Pure math, or a load in a
        # read-only loop, Triton's own LICM hoists.
        if lp is None or "tl.load" not in assign_calls(a) or not _loop_writes(k, lp):
            continue
        if lp.line not in guard:
            # a guard `for _ in range(0, flag, 1)` runs its body at most once: nothing to save
            fl = fl or flow_of(k)
            guard[lp.line] = any(f.line == lp.line and at_most_one_trip(fl, k, f) for f in fl.loops)
        if guard[lp.line]:
            continue
        variant = cache.setdefault(lp.line, _variant(k, lp))
        reads = _reads(a)
        if not reads or reads & variant or set(assign_targets(a)) & variant:
            continue
        m = re.search(r"tl\.load\(\s*(" + IDENT.pattern + ")", a.value)
        if m and _writes_to(k, lp, m.group(1)):
            continue
        lines.append(a.line)
    return lines


def _read_in_later_loop(a: Assign, k: KernelFacts) -> bool:
    """A target of the assignment is read in the body of a loop that starts after it."""
    src = k.source.splitlines()
    bodies = [(lp.line, "\n".join(src[lp.line - k.line_start + 1: lp.end_line - k.line_start + 1])) for lp in k.loops]
    for t in assign_targets(a):
        word = re.compile(r"\b" + re.escape(t) + r"\b")
        if any(line > a.line and word.search(body) for line, body in bodies):
            return True
    return False


INVARIANT_IN_LOOP = custom(
    "loop-invariant-work-in-loop",
    "a loop-invariant `tl.load` (and math on it) inside a loop that also stores, which blocks compiler LICM",
    _invariant_in_loop,
)
#: expensive work (a reduction, a transcendental, a `tl.dot`) done before a loop and read inside it
HOISTED = assigns(in_loop=False, calling=_TRANSFORM, where=_read_in_later_loop, name="hoisted-before-loop",
                  describe="expensive work computed before a loop and read inside it") & ~INVARIANT_IN_LOOP

SKELETON = Skeleton(
    id="hoist-loop-invariant",
    title="Hoist loop-invariant loads and math",
    summary="Move loads, reductions and casts whose inputs the loop never changes out of the loop.",
    category=Category.FUSION,
    doc=__doc__,
    present=HOISTED,
    preconditions=[INVARIANT_IN_LOOP],
    subject=INVARIANT_IN_LOOP,
    env=Env(),
    helps=("memory", "compute"),
)
