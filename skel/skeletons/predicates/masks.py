"""Constant triangular ones matrices built from index comparisons.

``tl.where(o[:, None] >= o[None, :], 1., 0.)`` fed to ``tl.dot`` is a cumulative sum
written as a matmul; its fp32 operand is exact, so precision advice does not apply, and
``tl.cumsum`` may replace it."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from skel.kernels.flow import (NOT_CONSTANT, ORDERING, args_of, branches, call_name, comparison, constant,
                               is_call, is_none, is_slice, name_of, negated, receiver, subscript_pair, walk)

if TYPE_CHECKING:
    import libcst as cst

    from skel.kernels.flow import Flow, Node


def _axis_of(fl: Flow, node: Node) -> tuple[str, str] | None:
    """("o_i", "col") for `o_i[:, None]`, ("o_i", "row") for `o_i[None, :]`."""
    pair = subscript_pair(node)
    if pair is None:
        return None
    a, b = pair
    base = fl.key(cast("cst.Subscript", node).value)
    if is_slice(a) and is_none(b):
        return base, "col"
    if is_none(a) and is_slice(b):
        return base, "row"
    return None


def _triangle_compare(fl: Flow, node: Node) -> bool:
    """`o[:, None] >= o[None, :]` (any of > >= < <=) on the same index vector."""
    cmp = comparison(node)
    if cmp is None or cmp[1] not in ORDERING:
        return False
    left, right = _axis_of(fl, cmp[0]), _axis_of(fl, cmp[2])
    return bool(left and right and left[0] == right[0] and left[1] != right[1])


def _const(node: Node) -> bool:
    inner = negated(node)
    value = constant(inner if inner is not None else node)
    return value is not NOT_CONSTANT and isinstance(value, (int, float, bool))


def _mask_expr_is_triangle(fl: Flow, expr: Node, hops: int) -> bool:
    if any(_triangle_compare(fl, n) for n in walk(expr)):
        return True
    name = name_of(expr)
    if name is not None and hops > 0:
        return any(_mask_expr_is_triangle(fl, d.value, hops - 1) for d in fl.defs.get(name, ()))
    return False


def triangular_ones(fl: Flow, expr: Node, hops: int = 3) -> bool:
    """``expr`` is (a name bound to) a constant lower/upper-triangular ones matrix:
    `tl.where(o[:, None] >= o[None, :], 1., 0.)`, possibly `.to(...)`-cast or chosen by
    an `if`, or a triangle comparison cast to float."""
    name = name_of(expr)
    if name is not None:
        return hops > 0 and any(triangular_ones(fl, d.value, hops - 1) for d in fl.defs.get(name, ()))
    arms = branches(expr)
    if arms is not None:
        return triangular_ones(fl, arms[0], hops) or triangular_ones(fl, arms[1], hops)
    if is_call(expr):
        call = cast("cst.Call", expr)
        called = call_name(call)
        inner = receiver(call)
        if called == ".to" and inner is not None:
            return _triangle_compare(fl, inner) or triangular_ones(fl, inner, hops)
        if called == "tl.where" and len(args_of(call)) == 3:
            cond, a, b = args_of(call)
            return _const(a) and _const(b) and _mask_expr_is_triangle(fl, cond, 2)
    return False
