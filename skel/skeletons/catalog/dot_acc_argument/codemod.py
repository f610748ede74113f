"""dot-acc-argument, applied mechanically: `acc += tl.dot(a, b)` (or `acc = acc + tl.dot(a, b)`)
inside a loop becomes `acc = tl.dot(a, b, acc)`.

The statements rewritten are the ones the skeleton's `acc-plus-dot-in-loop` condition finds
(a bare `tl.dot`, one without an accumulator, added to the name it defines). The accumulator
joins as the third positional argument; the dot's keywords (`input_precision=`, `out_dtype=`)
stay. `tl.dot` accumulates in the accumulator's dtype, so an accumulator that is not fp32
(fp16 `acc` with fp16 operands) changes the result's precision: `skel verify` tells.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from skel.errors import NothingToRewriteError
from skel.kernels.flow import binary, flow_of, name_of, operands
from skel.skeletons.catalog.dot_acc_argument.skeleton import _bare_dot

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts


def _with_acc(dot: cst.Call, acc: str) -> cst.Call:
    """``tl.dot(a, b, **kw)`` -> ``tl.dot(a, b, acc, **kw)``."""
    args = list(dot.args)
    positional = [i for i, a in enumerate(args) if a.keyword is None and not a.star]
    at = positional[1] + 1
    new = cst.Arg(cst.Name(acc))
    if args[at - 1].comma is cst.MaybeSentinel.DEFAULT and at < len(args):
        args[at - 1] = args[at - 1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return dot.with_changes(args=[*args[:at], new, *args[at:]])


def _accumulations(facts: KernelFacts) -> dict[int, tuple[cst.BaseExpression, cst.Call, str]]:
    """id(the defining value) -> (that value, its bare dot, the accumulator's name), for
    every `acc += tl.dot(a, b)` / `acc = acc + tl.dot(a, b)` inside a loop."""
    out: dict[int, tuple[cst.BaseExpression, cst.Call, str]] = {}
    for name, defs in flow_of(facts).defs.items():
        for d in defs:
            if not d.loops:
                continue
            value = d.value
            if not isinstance(value, cst.BaseExpression):
                continue
            if d.op == "+=" and isinstance(value, cst.Call) and _bare_dot(value):
                out[id(value)] = (value, value, name)
            elif d.op == "=" and binary(value, "+"):
                sides = operands(value)
                dots = [x for x in sides if isinstance(x, cst.Call) and _bare_dot(x)]
                if dots and any(name_of(x) == name for x in sides):
                    out[id(value)] = (value, dots[0], name)
    return out


class _Rewrite(cst.CSTTransformer):
    def __init__(self, found: dict[int, tuple[cst.BaseExpression, cst.Call, str]]) -> None:
        super().__init__()
        self.found = found
        self.done = 0

    def _hit(self, value: cst.BaseExpression) -> tuple[cst.Call, str] | None:
        entry = self.found.get(id(value))
        return (entry[1], entry[2]) if entry is not None and entry[0] is value else None

    def leave_AugAssign(self, original_node: cst.AugAssign, updated_node: cst.AugAssign
                        ) -> cst.BaseSmallStatement:
        hit = self._hit(original_node.value)
        if hit is None or not isinstance(original_node.operator, cst.AddAssign):
            return updated_node
        self.done += 1
        return cst.Assign(targets=[cst.AssignTarget(updated_node.target)], value=_with_acc(*hit))

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign) -> cst.Assign:
        hit = self._hit(original_node.value)
        if hit is None or len(original_node.targets) != 1:
            return updated_node
        self.done += 1
        return updated_node.with_changes(value=_with_acc(*hit))


def apply(module: cst.Module, kernel: str, facts: KernelFacts) -> cst.Module:
    """Pass the accumulator to every bare `tl.dot` added to it inside a loop of ``kernel``.
    Raises NothingToRewriteError when there is no such statement."""
    rewrite = _Rewrite(_accumulations(facts))
    out = module.visit(rewrite)
    if not rewrite.done:
        raise NothingToRewriteError(f"{kernel}: no `acc += tl.dot(a, b)` (or `acc = acc + tl.dot(a, b)`) inside a loop")
    return out
