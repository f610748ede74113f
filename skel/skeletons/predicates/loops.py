"""Loop-carried state."""

from __future__ import annotations

from skel.skeletons.conditions import assign_targets


def loop_carried(k, lp) -> dict[str, object]:
    """Names whose value flows from one iteration of loop ``lp`` to the next -> the
    assignment that first (re)assigns them in the loop. A name is carried when that first
    assignment reads it (``acc += ...``, ``acc = acc * r + ...``, ``h = h * d + ...``);
    a name first assigned afresh (a reloaded tile) is not. Accumulators and recurrent
    states are the carried names."""
    first: dict[str, object] = {}
    for a in sorted((a for a in k.assigns if lp.line <= a.line <= lp.end_line), key=lambda a: a.line):
        for t in assign_targets(a):
            first.setdefault(t, a)
    return {t: a for t, a in first.items() if a.op != "=" or t in a.names}
