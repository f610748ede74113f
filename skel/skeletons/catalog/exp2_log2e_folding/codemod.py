"""exp2-log2e-folding, applied mechanically: every `tl.exp(x)` of the kernel becomes
`tl.exp2(x * LOG2E)`, with `LOG2E = 1.4426950408889634` defined at the top of the kernel.

This is the technique's first step, the same value in other units: the running max, the
sums and any stored log-sum-exp keep their natural-log meaning. Folding LOG2E into a scale
the kernel already applies (`qk * (sm_scale * LOG2E)`, the multiply that pays) changes
which values live in log2 units and is left to a person: `skel suggest` then lists it as a
refinement of this skeleton. Natural-exp helpers (`safe_exp`) and libdevice exps are not
rewritten; `tl.exp` and `tl.math.exp` are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from skel.errors import NothingToRewriteError
from skel.kernels.flow import flow_of

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts

LOG2E = "1.4426950408889634"
CONSTANT = f"LOG2E = {LOG2E}  # log2(e): tl.exp(x) == tl.exp2(x * LOG2E)\n"
_REWRITTEN = ("tl.exp", "tl.math.exp")
#: an argument that needs parentheses before `* LOG2E`
_LOOSE = (cst.BinaryOperation, cst.BooleanOperation, cst.Comparison, cst.IfExp, cst.NamedExpr, cst.Lambda)


def _natural_exps(facts: KernelFacts) -> list[cst.Call]:
    """`tl.exp(x)` / `tl.math.exp(x)` calls of the kernel (one positional argument, spelled
    as an attribute `<tl>.exp`)."""
    return [c.node for c in flow_of(facts).named(*_REWRITTEN)
            if isinstance(c.node.func, cst.Attribute) and len(c.node.args) == 1 and c.node.args[0].keyword is None]


def _times_log2e(arg: cst.BaseExpression) -> cst.BinaryOperation:
    if isinstance(arg, _LOOSE) and not arg.lpar:
        arg = arg.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.BinaryOperation(left=arg, operator=cst.Multiply(), right=cst.Name("LOG2E"))


class _Rewrite(cst.CSTTransformer):
    def __init__(self, kernel: cst.FunctionDef, exps: list[cst.Call]) -> None:
        super().__init__()
        self.kernel = kernel
        self.exps = {id(c): c for c in exps}
        self.done = 0

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        if self.exps.get(id(original_node)) is not original_node:
            return updated_node
        self.done += 1
        func = updated_node.func
        assert isinstance(func, cst.Attribute)  # `_natural_exps` keeps attribute calls only
        arg = updated_node.args[0]
        return updated_node.with_changes(func=func.with_changes(attr=cst.Name("exp2")),
                                         args=[arg.with_changes(value=_times_log2e(arg.value))])

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        if original_node is not self.kernel or not self.done or not isinstance(updated_node.body, cst.IndentedBlock):
            return updated_node
        body = list(updated_node.body.body)
        first = body[0] if body else None
        docstring = (isinstance(first, cst.SimpleStatementLine) and len(first.body) == 1
                     and isinstance(first.body[0], cst.Expr) and isinstance(first.body[0].value, cst.SimpleString))
        at = 1 if docstring else 0
        body.insert(at, cst.parse_statement(CONSTANT))
        return updated_node.with_changes(body=updated_node.body.with_changes(body=body))


def apply(module: cst.Module, kernel: str, facts: KernelFacts) -> cst.Module:
    """Rewrite every `tl.exp(x)` of ``kernel`` as `tl.exp2(x * LOG2E)` and define LOG2E in it.
    Raises NothingToRewriteError when the kernel calls no `tl.exp`."""
    node = facts.syntax.node if facts.syntax is not None else None
    if not isinstance(node, cst.FunctionDef):
        raise NothingToRewriteError(f"{kernel}: no parsed tree")
    rewrite = _Rewrite(node, _natural_exps(facts))
    out = module.visit(rewrite)
    if not rewrite.done:
        raise NothingToRewriteError(f"{kernel}: no `tl.exp(x)` call to rewrite (natural-exp helpers are left alone)")
    return out
