"""Fuse the max pass and the exp-sum pass of a softmax/logsumexp into one online pass.

## What it does
A row softmax, log-softmax, logsumexp or cross-entropy over a row too wide for one block
is often written as separate passes over the row: one loop computes the row maximum,
the next loop reloads the row to compute `sum(exp(x - max))` (and a third one may
normalise). The online form keeps a running maximum `m` and a running sum `l` in one
loop and rescales the sum whenever the maximum grows:

    m_new = maximum(m, max(x_blk))
    l = l * exp(m - m_new) + sum(exp(x_blk - m_new))
    m = m_new

After the loop, `m + log(l)` is the logsumexp, so the max pass disappears.

## Why it is faster
A wide-row reduction is memory-bound: its cost is the number of times the row is read
from HBM. Merging the max pass into the sum pass removes one full read of the row (two
reads become one; three become two when a normalise/gradient pass follows). The extra
`exp(m - m_new)` is one scalar (or one per row) per block and is free next to the loads.

## Applies when
- the kernel has two (or more) loops over the same range that each `tl.load` the row,
  the first reducing it with `tl.max`/`tl.maximum`, a later one applying `exp` (and a
  sum) relative to that maximum;
- rows are long (vocabularies, long key sequences) so each pass streams HBM.

## Does not apply when
- the whole row fits in one block (no loop): there is a single read already, and the
  online form only adds rescale work;
- the kernel already carries a running max with the `exp(m_old - m_new)` rescale (the
  online form; Liger `liger_cross_entropy_kernel`, FLA/TT attention);
- the later pass needs the *final* max for something other than the exp-sum (e.g. the
  gradient pass of a cross-entropy must still run after the lse is known — only the
  max and sum passes merge);
- for very long rows on fp16 inputs, mind the rescale: keep `m`, `l` in fp32;
  `exp2` with a folded `log2(e)` (a separate skeleton) pairs well with it.

## References
- Liger-Kernel `src/liger_kernel/ops/cross_entropy.py` (`liger_cross_entropy_kernel`, online pass then gradient pass) — at `5e3bf99abb`, before 2025-07-01
- Liger-Kernel `src/liger_kernel/ops/softmax.py` (`_softmax_multi_block_forward_kernel`) — at `5e3bf99abb`, before 2025-07-01
- Triton tutorial `06-fused-attention.py` (`_attn_fwd_inner`: `m_i`, `l_i`, `alpha`)
- flash-linear-attention `fla/ops/attn/parallel.py` (`parallel_attn_fwd_kernel`) — at `49b00f0a94`, before 2025-07-01
- Milakov & Gimelshein, "Online normalizer calculation for softmax" (2018)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import assign_targets, custom
from skel.skeletons.patterns import loops_where
from skel.skeletons.predicates.names import IDENT

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts, Loop

_EXP = {"tl.exp", "tl.exp2", "exp", "exp2", "tl.math.exp", "tl.math.exp2",
        "tl.extra.cuda.libdevice.exp", "tl.extra.cuda.libdevice.exp2", "libdevice.exp", "libdevice.exp2"}
_MAX = {"tl.maximum", "tl.max", "tl.math.max", "maximum"}


def _inside(lp: Loop, line: int) -> bool:
    return lp.line <= line <= lp.end_line


def _online_max(lp: Loop, k: KernelFacts) -> bool:
    """The loop carries a running max and rescales by exp of a max difference."""
    body = [a for a in k.assigns if _inside(lp, a.line)]
    first: dict[str, int] = {}
    for a in body:
        for t in assign_targets(a):
            first[t] = min(first.get(t, a.line), a.line)
    family: set[str] = set()
    for a in body:
        if not set(a.calls) & _MAX:
            continue
        # carried: reassigned in the loop, but read here before its first reassignment
        run = {n for n in a.names if n in first and first[n] >= a.line}
        if run:
            family |= run | set(assign_targets(a))
    if not family:
        return False
    heads = {"tl", "math", "libdevice"}
    changed = True
    while changed:  # names that only re-express the max (m_i = m_new, a finite-guarded copy)
        changed = False
        for a in body:
            if set(a.calls) & {"tl.load", "tl.dot"}:
                continue
            reads = set(a.names) - heads - {c.split(".")[-1] for c in a.calls} - {"float", "inf"}
            if reads and reads <= family:
                new = set(assign_targets(a)) - family
                if new:
                    family |= new
                    changed = True
    return any(c.name in _EXP and _inside(lp, c.line) and c.args and "-" in c.args[0]
               and len(set(IDENT.findall(c.args[0])) & family) >= 2 for c in k.calls)


def _multi_pass(k: KernelFacts) -> list[int]:
    """Two loops over the same range, each loading: a max pass, then an exp pass."""
    loads = [c.line for c in k.calls if c.name == "tl.load"]
    loops = [lp for lp in k.loops if any(_inside(lp, ln) for ln in loads)]

    def has(lp: Loop, names: set[str]) -> bool:
        return any(c.name in names and _inside(lp, c.line) for c in k.calls)

    for i, a in enumerate(loops):
        if not has(a, _MAX):
            continue
        for b in loops[i + 1:]:
            if b.line > a.end_line and (b.kind, b.args) == (a.kind, a.args) and has(b, _EXP):
                return [a.line, b.line]
    return []


ONLINE_MAX_RESCALE = loops_where(where=_online_max, name="online-max-rescale",
                                 describe="a loop carrying a running max with an `exp(m_old - m_new)` rescale")
MAX_PASS_THEN_EXP_PASS = custom(
    "max-pass-then-exp-pass",
    "two loops over the same range that reload the row: a max pass, then an exp pass",
    _multi_pass,
)

SKELETON = Skeleton(
    id="online-softmax",
    title="Online softmax / streaming logsumexp",
    summary="Merge the row-max pass into the exp-sum pass with a running max and rescaled sum: one fewer read.",
    category=Category.ARITHMETIC,
    doc=__doc__,
    ruled_out_by=(r"\bonline[\s_-]softmax\b",),
    present=ONLINE_MAX_RESCALE,
    preconditions=[MAX_PASS_THEN_EXP_PASS],
    subject=MAX_PASS_THEN_EXP_PASS,
    env=Env(),
    helps=("memory",),
)
