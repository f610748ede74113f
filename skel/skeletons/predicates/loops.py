"""Loops: carried state, trip counts, and how an expression moves with a loop's index.

Read through the kernel's facts and its data-flow view (``skel.kernels.flow``)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, cast

from skel.kernels.flow import (NOT_CONSTANT, Flow, LoopInfo, Node, args_of, binary, broadcast_axes, constant,
                               flow_of, has_call, is_call, is_comparison, is_not, name_of, operands, positional,
                               receiver, subscript_pair, subscripted, walk)
from skel.skeletons.conditions import assign_targets, custom

if TYPE_CHECKING:
    import libcst as cst

    from skel.kernels.model import Assign, KernelFacts, Loop


def loop_carried(k: KernelFacts, lp: Loop) -> dict[str, Assign]:
    """Names whose value flows from one iteration of loop ``lp`` to the next -> the
    assignment that first (re)assigns them in the loop. A name is carried when that first
    assignment reads it (``acc += ...``, ``acc = acc * r + ...``, ``h = h * d + ...``);
    a name first assigned afresh (a reloaded tile) is not. Accumulators and recurrent
    states are the carried names."""
    first: dict[str, Assign] = {}
    for a in sorted((a for a in k.assigns if lp.line <= a.line <= lp.end_line), key=lambda a: a.line):
        for t in assign_targets(a):
            first.setdefault(t, a)
    return {t: a for t, a in first.items() if a.op != "=" or t in a.names}


def runtime_trip_count(fl: Flow, k: KernelFacts, loop: LoopInfo) -> bool:
    """The loop's trip count depends on a runtime argument or on data (a sequence length,
    K, n_cols), not only on constexpr parameters and literals."""
    if loop.bounds is None:
        return False
    constexprs = {p.name for p in k.params if p.constexpr}
    params = {p.name for p in k.params}
    names, exprs = fl.closure(loop.bounds)
    return bool((names & params) - constexprs) or has_call(exprs, "tl.load", "tl.program_id")


# --- loop-relative helpers (how an expression moves with a loop's index) -----------------


def depends_on_loop(fl: Flow, expr: Node, loop: LoopInfo) -> bool:
    """``expr`` changes with ``loop``'s index: it reads the index directly or through names
    (re)defined inside the loop from it. Names the loop redefines from loop-invariant
    values only (`m_t = o_t < T` recomputed each iteration) do not count."""
    names, _ = fl.closure(expr, within=loop)
    return bool(names & loop.targets)


def stepped_in_loop(fl: Flow, expr: Node, loop: LoopInfo) -> list[int]:
    """Lines where a name ``expr`` reads is stepped inside ``loop`` (`p += step`,
    `p = p + step`, `p = tl.advance(p, ...)`): the address is already strength-reduced."""
    names, _ = fl.closure(expr)
    lines = []
    for n in names:
        for d in fl.defs.get(n, ()):
            if not loop.holds(d.line):
                continue
            v = d.value
            if d.op in ("+=", "-=") or (
                    d.op == "=" and binary(v, "+", "-") and name_of(operands(v)[0]) == n) or (
                    is_call(v, "tl.advance")):
                lines.append(d.line)
    return lines


def affine_in_loop(fl: Flow, expr: Node, loop: LoopInfo) -> bool:
    """``expr`` moves by a constant step per iteration of ``loop``: what is recomputed
    inside the loop reads no memory (no gathered or paged index), never divides or
    wraps a loop-dependent value (`block_idx // grid_n`, `% n`: a grid-stride walk over
    flattened tiles) and never clamps or selects it (`tl.minimum(idx, n - 1)`)."""
    _, exprs = fl.closure(expr, within=loop)
    if has_call(exprs, "tl.load"):
        return False
    for e in exprs:
        for n in walk(e):
            if binary(n, "//", "%") and depends_on_loop(fl, operands(n)[0], loop):
                return False
            if is_call(n, *_CLAMPS) \
                    and any(depends_on_loop(fl, a, loop) for a in args_of(cast("cst.Call", n))):
                return False  # a clamped or selected index: the step is not constant at the edges
    return True


_CLAMPS = ("tl.minimum", "tl.maximum", "min", "max", "tl.where", "tl.clamp")


def conjuncts(fl: Flow, expr: Node, depth: int = 8) -> list[Node]:
    """The `&`-separated parts of a mask, through names bound once, broadcasts
    (`m[:, None]`) and casts (`.to(tl.int1)`)."""
    if depth <= 0:
        return [expr]
    if binary(expr, "&"):
        left, right = operands(expr)
        return conjuncts(fl, left, depth - 1) + conjuncts(fl, right, depth - 1)
    if subscript_pair(expr) is not None and broadcast_axes([expr]):
        return conjuncts(fl, subscripted(expr), depth - 1)
    if is_call(expr, ".to"):
        inner = receiver(cast("cst.Call", expr))
        if inner is not None:
            return conjuncts(fl, inner, depth - 1)
    name = name_of(expr)
    if name is not None:
        defs = fl.defs.get(name, ())
        if len(defs) == 1 and not defs[0].aug:
            return conjuncts(fl, defs[0].value, depth - 1)
    return [expr]


def _zero_one(fl: Flow, k: KernelFacts, e: Node, depth: int = 4) -> bool:
    """``e`` can only be 0 or 1 (False/True): a literal, a comparison, `tl.where(c, 1, 0)`,
    a name bound only to such values, or a constexpr flag parameter (bool default, or a
    flag-like name such as `IS_*`, `USE_*`, `HAS_*`)."""
    if depth <= 0:
        return False
    value = constant(e)
    if value is not NOT_CONSTANT:
        return value in (0, 1) and not isinstance(value, float)
    if is_comparison(e) or is_not(e):
        return True
    if is_call(e, "tl.where") and len(args_of(cast("cst.Call", e))) == 3:
        return all(_zero_one(fl, k, a, depth - 1) for a in args_of(cast("cst.Call", e))[1:])
    if is_call(e, ".to"):
        inner = receiver(cast("cst.Call", e))
        if inner is not None:
            return _zero_one(fl, k, inner, depth - 1)
    name = name_of(e)
    if name is not None:
        p = next((p for p in k.params if p.name == name), None)
        if p is not None:
            return p.constexpr and (p.default.strip() in ("True", "False", "0", "1")
                                    or bool(re.match(r"(IS|USE|HAS|ENABLE|DO|WITH)_", p.name)))
        defs = fl.defs.get(name, ())
        return bool(defs) and all(not d.aug and _zero_one(fl, k, d.value, depth - 1) for d in defs)
    return False


def at_most_one_trip(fl: Flow, k: KernelFacts, loop: LoopInfo) -> bool:
    """A `for` used as a guard: `range(0, flag, 1)` / `range(flag)` whose stop is 0 or 1 by
    construction (a 0/1 value, a comparison, a constexpr flag), so the body runs at most
    once. A runtime stop of unknown range is not assumed to be a flag."""
    b = loop.bounds
    if b is None or not is_call(b, "range", "tl.range", "tl.static_range"):
        return False
    args = positional(cast("cst.Call", b))
    if not args or len(args) > 3:
        return False
    start, stop = (0, args[0]) if len(args) == 1 else (constant(args[0]), args[1])
    step = constant(args[2]) if len(args) == 3 else 1
    if not (start == 0 and not isinstance(start, str) and step == 1 and not isinstance(step, str)):
        return False
    return _zero_one(fl, k, stop)


# --- loops over a LoRA rank ----------------------------------------------------------------

def _names_a_rank(name: str) -> bool:
    """A LoRA rank by name (`rank`, `lora_ranks`, `max_rank`); not MLA's `kv_lora_rank`, the
    latent width (512 in DeepSeek), which is no short loop."""
    parts = {p for p in name.lower().split("_") if p}
    return bool(parts & {"rank", "ranks"}) and "kv" not in parts


def rank_loops(k: KernelFacts) -> list[int]:
    """Lines of the kernel's tile loops (a `tl.dot` or a load inside) when every one of them
    runs over a LoRA rank: its bounds read a rank (`range(0, tl.cdiv(K, BLOCK_K))` after
    `K = tl.minimum(K, rank)`, `rank = tl.load(lora_ranks + w)`). A rank is 8-64, so such a
    loop runs one to four times: nothing for a pipeline, a descriptor or a stepped pointer
    to amortise, and MMA work the loads dwarf (sglang's LoRA expand/shrink kernels)."""
    fl = flow_of(k)
    busy = [c.line for c in k.calls if c.name in ("tl.dot", "tl.load") or c.name.endswith(".load")]
    tile_loops = [lp for lp in fl.loops if lp.kind != "while" and any(lp.holds(x) for x in busy)]
    if not tile_loops:
        return []
    out = []
    for lp in tile_loops:
        if lp.bounds is None or not any(_names_a_rank(n) for n in fl.closure(lp.bounds)[0]):
            return []
        out.append(lp.line)
    return out


#: Every tile loop of the kernel runs over a LoRA rank (one to four iterations): the
#: loop-streaming techniques have nothing to work on.
RANK_LOOPS = custom(
    "lora-rank-loops", "tile loops that run over a LoRA rank only (`cdiv(min(K, rank), BLOCK_K)`: one to "
    "four iterations)", rank_loops)
