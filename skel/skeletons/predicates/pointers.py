"""Which kernel argument a pointer comes from; in-place updates and atomics.

A kernel that loads and later stores through the same argument, or updates memory with
``tl.atomic_*``, changes its inputs: running it twice (an autotuning trial, a benchmark
rerun) is not the same as running it once."""

from __future__ import annotations

from typing import TYPE_CHECKING

from skel.skeletons.conditions import custom
from skel.skeletons.predicates.names import IDENT

if TYPE_CHECKING:
    from skel.kernels.model import Call, KernelFacts

_PTR_WRAPPERS = ("tl.make_block_ptr(", "tl.advance(", "tl.make_tensor_descriptor(",
                 "tl.multiple_of(", "tl.max_contiguous(")


def _leading_name(expr: str) -> str:
    text = expr.strip()
    changed = True
    while changed:
        changed = False
        for w in _PTR_WRAPPERS:
            if text.startswith(w):
                text, changed = text[len(w):].lstrip(), True
        if text.startswith("("):
            text, changed = text[1:].lstrip(), True
    m = IDENT.match(text)
    return m.group(0) if m else ""


def pointer_bases(expr: str, k: KernelFacts, line: int | None = None, depth: int = 0) -> set[str]:
    """The kernel arguments a pointer expression is built from: ``o + offs`` -> {o};
    ``p_o`` with ``p_o = tl.make_block_ptr(o + ..., ...)`` -> {o}. A local name resolves
    through its latest assignment at or before ``line`` (pointer names get reused)."""
    name = _leading_name(expr)
    if not name or name == "tl":
        return set()
    if k.param(name) is not None:
        return {name}
    if depth > 4:
        return set()
    cands = [a for a in k.assigns if name in a.targets and a.op == "="]
    if line is not None:
        before = [a for a in cands if a.line <= line]
        if before:
            last = max(a.line for a in before)
            cands = [a for a in before if a.line == last]
    out: set[str] = set()
    for a in cands:
        out |= pointer_bases(a.value, k, a.line, depth + 1)
    return out


def pointer_arg(call: Call) -> str:
    """The pointer argument of a ``tl.load``/``tl.store``/``tl.atomic_*`` call: the first
    positional argument, else the ``pointer=``/``ptr=`` keyword ("" when absent)."""
    if call.args:
        return call.args[0]
    return call.kwargs.get("pointer", call.kwargs.get("ptr", ""))


def in_place_lines(k: KernelFacts) -> list[int]:
    """Lines of a load and a later store whose pointers come from the same argument."""
    loaded: dict[str, int] = {}
    for c in k.calls_named("tl.load"):
        for b in pointer_bases(pointer_arg(c), k, c.line):
            loaded[b] = min(loaded.get(b, c.line), c.line)
    lines = []
    for c in k.calls_named("tl.store"):
        for b in pointer_bases(pointer_arg(c), k, c.line):
            if b in loaded and loaded[b] < c.line:
                lines += [loaded[b], c.line]
    return lines


def atomic_lines(k: KernelFacts) -> list[int]:
    """Lines of ``tl.atomic_*`` calls (add, max, cas, xchg ...)."""
    return [c.line for c in k.calls if c.name.startswith("tl.atomic_")]


def _accumulates_lines(k: KernelFacts) -> list[int]:
    """Lines of atomics, and of loads with a later store through the same argument. Stays a
    function: a load counts by the stores that follow it (a pairing of calls, not a test of one)."""
    return atomic_lines(k) + in_place_lines(k)


#: In-place updates or atomics: every extra run of the kernel (an autotuning trial)
#: re-applies the update, so it needs ``restore_value``/``reset_to_zero``.
ACCUMULATES = custom(
    "accumulates-in-place",
    "in-place updates or atomics (`tl.atomic_*`, or a load and a later store through one pointer argument)",
    _accumulates_lines)
