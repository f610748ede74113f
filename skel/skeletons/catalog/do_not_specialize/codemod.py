"""do-not-specialize, applied mechanically: the per-call lengths the skeleton's conditions name
are listed in `@triton.jit(do_not_specialize=[...])`, and a length annotated `tl.constexpr`
that sizes no tile loses the annotation first.

The parameters are the ones its two conditions find: `constexpr-length` (a length such as
`T`, `seq_len`, `n_rows`, `B` annotated `tl.constexpr` that sizes no tile and bounds no
`tl.static_range`) and `specialized-runtime-length` (a runtime sequence or token length read
in the body, not in an autotune key, not a pointer). The jit decorator keeps its other
arguments; the launch is unchanged (a keyword argument `seq_len=T` binds a runtime parameter
as well as a constexpr). A de-constexpr'd length that something else needs at compile time
(a helper's constexpr parameter, `tl.static_assert`) fails to compile: `skel verify` runs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from skel.errors import NothingToRewriteError
from skel.skeletons.catalog.do_not_specialize.skeleton import SEQUENCE_LENGTH, _not_a_shape, _specialized_on
from skel.skeletons.predicates.names import VARYING_LENGTH

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts

_NO_SPACE = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


def lengths(facts: KernelFacts) -> tuple[list[str], set[str]]:
    """(every length to list in `do_not_specialize`, in signature order; those of them
    annotated `tl.constexpr` now)."""
    names, constexpr = [], set()
    for p in facts.params:
        if p.constexpr and VARYING_LENGTH.fullmatch(p.name) and _not_a_shape(p, facts):
            names.append(p.name)
            constexpr.add(p.name)
        elif not p.constexpr and SEQUENCE_LENGTH.fullmatch(p.name) and _specialized_on(p, facts):
            names.append(p.name)
    return names, constexpr


def _names_list(names: list[str]) -> cst.List:
    return cst.List([cst.Element(cst.SimpleString(f'"{n}"')) for n in names])


def _with_do_not_specialize(dec: cst.Decorator, names: list[str]) -> cst.Decorator:
    arg = cst.Arg(_names_list(names), keyword=cst.Name("do_not_specialize"), equal=_NO_SPACE)
    expr = dec.decorator
    if isinstance(expr, cst.Call):
        args = list(expr.args)
        if args and args[-1].comma is not cst.MaybeSentinel.DEFAULT:
            args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        return dec.with_changes(decorator=expr.with_changes(args=[*args, arg]))
    return dec.with_changes(decorator=cst.Call(func=expr, args=[arg]))


def _is_jit(dec: cst.Decorator, facts: KernelFacts) -> bool:
    expr = dec.decorator.func if isinstance(dec.decorator, cst.Call) else dec.decorator
    name = cst.Module([]).code_for_node(expr)
    aliases = facts.syntax.aliases if facts.syntax is not None else None
    return (aliases.canonical(name) if aliases is not None else name) == "triton.jit"


def apply(module: cst.Module, kernel: str, facts: KernelFacts) -> cst.Module:
    """List ``kernel``'s per-call lengths in its jit decorator's `do_not_specialize` (dropping
    their `tl.constexpr` annotation first). Raises NothingToRewriteError when it has none,
    or no `@triton.jit` decorator to add them to."""
    found = facts.syntax.node if facts.syntax is not None else None
    names, constexpr = lengths(facts)
    if not isinstance(found, cst.FunctionDef) or not names:
        raise NothingToRewriteError(f"{kernel}: no per-call length (T, seq_len, n_rows ...) that is constexpr without "
                                    "sizing a tile, or a runtime sequence length Triton specializes on")
    node: cst.FunctionDef = found
    jit = [i for i, d in enumerate(node.decorators) if _is_jit(d, facts)]
    if not jit:
        raise NothingToRewriteError(f"{kernel}: no `@triton.jit` decorator to add `do_not_specialize` to")

    class _Rewrite(cst.CSTTransformer):
        def leave_Param(self, original_node: cst.Param, updated_node: cst.Param) -> cst.Param:
            if original_node.name.value in constexpr and any(p is original_node for p in node.params.params):
                return updated_node.with_changes(annotation=None)
            return updated_node

        def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
                              ) -> cst.FunctionDef:
            if original_node is not node:
                return updated_node
            decorators = list(updated_node.decorators)
            decorators[jit[0]] = _with_do_not_specialize(decorators[jit[0]], names)
            return updated_node.with_changes(decorators=decorators)

    return module.visit(_Rewrite())
