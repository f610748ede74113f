"""Constant triangular ones matrices built from index comparisons.

``tl.where(o[:, None] >= o[None, :], 1., 0.)`` fed to ``tl.dot`` is a cumulative sum
written as a matmul; its fp32 operand is exact, so precision advice does not apply, and
``tl.cumsum`` may replace it."""

from __future__ import annotations

import ast

from skel.skeletons.flow import call_name

_CMP = (ast.GtE, ast.Gt, ast.LtE, ast.Lt)


def _axis_of(node) -> tuple[str, str] | None:
    """("o_i", "col") for `o_i[:, None]`, ("o_i", "row") for `o_i[None, :]`."""
    if not (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple) and len(node.slice.elts) == 2):
        return None
    a, b = node.slice.elts
    base = ast.dump(node.value)
    if isinstance(a, ast.Slice) and isinstance(b, ast.Constant) and b.value is None:
        return base, "col"
    if isinstance(a, ast.Constant) and a.value is None and isinstance(b, ast.Slice):
        return base, "row"
    return None


def _triangle_compare(node) -> bool:
    """`o[:, None] >= o[None, :]` (any of > >= < <=) on the same index vector."""
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], _CMP)):
        return False
    left, right = _axis_of(node.left), _axis_of(node.comparators[0])
    return bool(left and right and left[0] == right[0] and left[1] != right[1])


def _const(node) -> bool:
    if isinstance(node, ast.UnaryOp):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool))


def _mask_expr_is_triangle(fl, expr, hops: int) -> bool:
    if any(_triangle_compare(n) for n in ast.walk(expr)):
        return True
    if isinstance(expr, ast.Name) and hops > 0:
        return any(_mask_expr_is_triangle(fl, d.value, hops - 1) for d in fl.defs.get(expr.id, ()))
    return False


def triangular_ones(fl, expr, hops: int = 3) -> bool:
    """``expr`` is (a name bound to) a constant lower/upper-triangular ones matrix:
    `tl.where(o[:, None] >= o[None, :], 1., 0.)`, possibly `.to(...)`-cast or chosen by
    an `if`, or a triangle comparison cast to float."""
    if isinstance(expr, ast.Name):
        return hops > 0 and any(triangular_ones(fl, d.value, hops - 1) for d in fl.defs.get(expr.id, ()))
    if isinstance(expr, ast.IfExp):
        return triangular_ones(fl, expr.body, hops) or triangular_ones(fl, expr.orelse, hops)
    if isinstance(expr, ast.Call):
        name = call_name(expr)
        if name == ".to" and isinstance(expr.func, ast.Attribute):
            inner = expr.func.value
            return _triangle_compare(inner) or triangular_ones(fl, inner, hops)
        if name == "tl.where" and len(expr.args) == 3:
            cond, a, b = expr.args
            return _const(a) and _const(b) and _mask_expr_is_triangle(fl, cond, 2)
    return False
