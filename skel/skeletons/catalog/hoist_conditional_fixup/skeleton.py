"""Replace a per-element `tl.where(offs == y, ...)` in a streaming loop by one scalar fix-up after it.

## What it does
A loop that streams a long row in blocks (a vocabulary-wide gradient, a logits row) and
writes every block applies a correction that concerns one element only — the target
class of a cross-entropy gradient, `X = tl.where(offs != y, X, X - 1)`, or
`tl.where(cols == idx, 1 - p, -p)` — as a compare-and-select over every element of every
block. The rewrite writes the common formula in the loop and, after it, patches the one
element with a scalar load-modify-store:
`tl.debug_barrier(); x_y = tl.load(X_ptr + y); tl.store(X_ptr + y, x_y - (1 - eps) / N)`
(or stores a value computed from a scalar kept from the first pass).

## Why it is faster
The select costs an integer compare, a predicate and a select per element for a branch
that is taken once per row: on a 128k-vocabulary row that is 128k compares for one hit,
in the loop that bounds the kernel (a second pass over the row, recomputing softmax and
writing the gradient in place). Without it the loop body is the straight
`exp(x - m) / d * scale` stream, with fewer live registers and no index vector kept for
the compare. The fix-up is two scalar memory operations per row.

## Applies when
- a loop body loads and stores blocks of a row (a streaming pass);
- inside it, a `tl.where` tests the block's index vector for equality with a value that
  the loop does not change (`offs == y`, `cols != label`): a single-element correction.

## Does not apply when
- the compared value changes per block or matches many elements (a segment id, a
  mask of several labels): there is no single element to patch;
- the loop reduces rather than writes (computing the target logit inside the online
  softmax pass): there, a scalar `tl.load(X_ptr + y)` before the loop is the fix (still a
  hoist, but of a read);
- the patched element must be written atomically with the rest by other programs, or
  several programs write the same row: the fix-up needs ordering (a barrier within the
  program is enough for one program per row, as in cross-entropy kernels);
- ignored targets (`y == ignore_index`) or out-of-range labels: guard the fix-up.

## References
- Liger-Kernel `src/liger_kernel/ops/cross_entropy.py` (`liger_cross_entropy_kernel`: — at `5e3bf99abb`, before 2025-07-01
  `X_block = tl.where(X_offsets != y, X_block, X_block - (1 - label_smoothing))` in the gradient loop, v0.5.10)
- Liger-Kernel `src/liger_kernel/ops/grpo_loss.py` (`_grpo_loss_bwd_kernel`: `tl.where(cols == idx, 1 - probs, -probs)`, — at `5e3bf99abb`, before 2025-07-01
  v0.5.10)
- flash-linear-attention `fla/modules/fused_linear_cross_entropy.py` (`cross_entropy_kernel`: the gradient loop — at `49b00f0a94`, before 2025-07-01
  stores the plain softmax, then `b_l = tl.load(logits + b_y)` ... `tl.store(logits + b_y, b_l)` after it, v0.2.2)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.patterns import calls_where
from skel.skeletons.predicates.names import IDENT

if TYPE_CHECKING:
    from skel.kernels.model import Call, KernelFacts, Loop

_EQ = re.compile(r"^\s*\(?\s*(\w+)\s*(==|!=)\s*([\w.]+|\([^()]*\))\s*\)?\s*$")


def _streaming_loops(k: KernelFacts) -> list[Loop]:
    """Loops whose body both loads and stores (a pass that writes every block)."""
    out = []
    for lp in k.loops:
        inside = [c.name for c in k.calls if lp.line <= c.line <= lp.end_line]
        if "tl.load" in inside and "tl.store" in inside:
            out.append(lp)
    return out


def _loop_assigned(k: KernelFacts, lp: Loop) -> set[str]:
    return {t for a in k.assigns if lp.line <= a.line <= lp.end_line for t in a.targets} | set(lp.targets)


def _index_vectors(k: KernelFacts) -> set[str]:
    return {t for a in k.assigns if "tl.arange" in a.calls for t in a.targets}


def _where_eq_in_loop(c: Call, k: KernelFacts) -> bool:
    """A `tl.where(offs == y, ...)` in a streaming loop, comparing an index vector that
    moves with the loop to a value that does not."""
    if not c.args:
        return False
    m = _EQ.match(c.args[0])
    if not m:
        return False
    vectors = _index_vectors(k)
    left, right = m.group(1), m.group(3)
    right_names = set(IDENT.findall(right))
    for lp in _streaming_loops(k):
        if not (lp.line <= c.line <= lp.end_line):
            continue
        changed = _loop_assigned(k, lp)
        for vec, val in ((left, right_names), (m.group(3), {left})):
            # the index vector moves with the loop; the compared value does not
            if vec in vectors and vec in changed and not (val & changed) and not (val & vectors):
                return True
    return False


def _scalar_fixup(c: Call, k: KernelFacts) -> bool:
    """A scalar store after a streaming loop at a data-dependent index (`X_ptr + y` with `y`
    loaded from a label/target array): the one element patched after the stream."""
    ptr = c.args[0] if c.args else c.kwargs.get("pointer", "")
    names = set(IDENT.findall(ptr))
    if names & _index_vectors(k) or "tl.arange" in ptr:
        return False
    loaded = {t for a in k.assigns if "tl.load" in a.calls and "tl.arange" not in a.value for t in a.targets}
    if not names & loaded:
        return False
    # after a streaming loop, not inside it nor in a later loop
    return any(c.line > lp.end_line and c.loop_depth < lp.depth for lp in _streaming_loops(k))


WHERE_EQ_IN_STREAM_LOOP = calls_where(
    "tl.where", where=_where_eq_in_loop, name="where-eq-in-streaming-loop",
    describe="a `tl.where(offs == y, ...)` on the block index inside a loop that loads and stores blocks")
SCALAR_FIXUP = calls_where("tl.store", where=_scalar_fixup, name="scalar-fixup-after-loop",
                           describe="a scalar load/store fix-up after a streaming loop (`tl.store(X_ptr + y, ...)`)")

SKELETON = Skeleton(
    id="hoist-conditional-fixup",
    title="Scalar fix-up after the loop instead of a per-element tl.where",
    summary="Replace a per-element tl.where(offs == y, ...) in a streaming loop by one scalar load/store after the loop.",
    category=Category.ARITHMETIC,
    doc=__doc__,
    present=SCALAR_FIXUP & ~WHERE_EQ_IN_STREAM_LOOP,
    preconditions=[WHERE_EQ_IN_STREAM_LOOP],
    subject=WHERE_EQ_IN_STREAM_LOOP,
    env=Env(),
    helps=("compute",),
)
