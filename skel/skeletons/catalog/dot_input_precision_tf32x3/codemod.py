"""dot-input-precision-tf32x3, applied mechanically: every `tl.dot` on fp32 operands that states no
precision gets `input_precision="tf32x3"`.

The dots rewritten are the ones the skeleton's `fp32-dot` condition finds (both operands
known to be fp32) and that carry neither `input_precision=` nor `allow_tf32=` (a precision
the authors chose is theirs). An accuracy fix: the two extra MMAs cost compute-bound kernels
time, which `skel verify` on a GPU measures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from skel.errors import NothingToRewriteError
from skel.kernels.flow import flow_of, has_kwarg
from skel.skeletons.conditions import dot_operands_fp32

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts

PRECISION = "tf32x3"


def _fp32_dots(facts: KernelFacts) -> list[cst.Call]:
    """The `tl.dot` call nodes on fp32 operands without a stated precision. The facts' calls
    (which the dtype inference reads) and the flow's (the nodes) meet on line and operands."""
    fl = flow_of(facts)
    wanted = {(c.line, tuple("".join(a.split()) for a in c.args[:2])) for c in facts.calls
              if c.name == "tl.dot" and dot_operands_fp32(c, facts)}
    out = []
    for c in fl.named("tl.dot"):
        if has_kwarg(c.node, "input_precision", "allow_tf32"):
            continue
        operands = tuple("".join(fl.text(a.value).split()) for a in c.node.args if a.keyword is None)[:2]
        if (c.line, operands) in wanted:
            out.append(c.node)
    return out


class _Rewrite(cst.CSTTransformer):
    def __init__(self, dots: list[cst.Call]) -> None:
        super().__init__()
        self.dots = {id(d): d for d in dots}
        self.done = 0

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        if self.dots.get(id(original_node)) is not original_node:
            return updated_node
        self.done += 1
        args = list(updated_node.args)
        if args and args[-1].comma is not cst.MaybeSentinel.DEFAULT:  # a trailing comma stays trailing
            args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        precision = cst.Arg(cst.SimpleString(f'"{PRECISION}"'), keyword=cst.Name("input_precision"),
                            equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                                  whitespace_after=cst.SimpleWhitespace("")))
        return updated_node.with_changes(args=[*args, precision])


def apply(module: cst.Module, kernel: str, facts: KernelFacts) -> cst.Module:
    """Add `input_precision="tf32x3"` to the fp32 `tl.dot` calls of ``kernel`` that state no
    precision. Raises NothingToRewriteError when there is none."""
    rewrite = _Rewrite(_fp32_dots(facts))
    out = module.visit(rewrite)
    if not rewrite.done:
        raise NothingToRewriteError(f"{kernel}: no `tl.dot` on fp32 operands without a stated precision")
    return out
