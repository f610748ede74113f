"""Online-softmax loops: a runtime-length loop over key (or vocabulary) blocks that keeps a
running max and rescales with ``exp``.

Attention and cross-entropy stream their keys this way. A loop of this shape is not a
plain sum: its partial results merge only through their log-sum-exp, so techniques that
split or merge reductions must tell it apart from ``acc += tl.dot(...)``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from skel.kernels.flow import flow_of
from skel.skeletons.conditions import IDENT, assign_targets, custom
from skel.skeletons.predicates.loops import at_most_one_trip, runtime_trip_count

if TYPE_CHECKING:
    from skel.kernels.flow import LoopInfo
    from skel.kernels.model import KernelFacts

#: Exponentials as kernels spell them (tl, tl.math, libdevice, a project helper `safe_exp`).
EXP_CALLS = frozenset({"tl.exp", "tl.exp2", "exp", "exp2", "tl.math.exp", "tl.math.exp2", "safe_exp",
                       "tl.extra.cuda.libdevice.exp", "tl.extra.cuda.libdevice.exp2", "libdevice.exp",
                       "libdevice.exp2", "fast_expf"})
#: A running or block maximum.
MAX_CALLS = frozenset({"tl.max", "tl.maximum", "tl.math.max", "maximum"})


def online_softmax_loops(k: KernelFacts) -> list[int]:
    """Lines of loops with a runtime trip count that load blocks and apply both an
    ``exp`` and a ``max`` inside: an online softmax streaming keys (or a vocabulary).
    A 0/1-trip guard (`for _ in range(0, flag, 1)`) and a ``tl.static_range`` are not.
    Stays a function: it walks the data-flow view's loops (not the facts' loops) and the
    calls and assignments inside each."""
    fl = flow_of(k)
    if not fl.ok:
        return []
    lines = []
    for lp in fl.loops:
        if lp.kind in ("tl.static_range", "while") or not runtime_trip_count(fl, k, lp) \
                or at_most_one_trip(fl, k, lp):
            continue
        inside = {c.name for c in fl.calls if lp.holds(c.line)}
        if "tl.load" in inside and inside & EXP_CALLS and _running_max(k, lp):
            lines.append(lp.line)
    return lines


def _running_max(k: KernelFacts, lp: LoopInfo) -> bool:
    """A max inside the loop that reads a name the loop assigns at or after it
    (`m_new = tl.maximum(m_i, tl.max(qk))` ... `m_i = m_new`): a maximum carried across
    iterations, not a per-block absmax (`tl.max(tl.abs(x))` of a quantiser)."""
    later = {t for a in k.assigns if lp.line <= a.line <= lp.end for t in assign_targets(a)}
    for c in k.calls:
        if c.name in MAX_CALLS and lp.holds(c.line):
            reads = {n for arg in c.args for n in IDENT.findall(arg)}
            assigned_after = {t for a in k.assigns if c.line <= a.line <= lp.end for t in assign_targets(a)}
            if reads & assigned_after & later:
                return True
    return False


#: A runtime-length loop over key blocks carrying an online softmax (running max, `exp`).
ONLINE_SOFTMAX_LOOP = custom(
    "online-softmax-loop",
    "a runtime-length loop over key blocks with online-softmax work (`exp` and a running `max`)",
    online_softmax_loops)
