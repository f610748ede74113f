"""static-range-unroll, applied mechanically: `for i in range(W)` over a short compile-time
trip count becomes `for i in tl.static_range(W)`.

The loops rewritten are the ones the skeleton's `short-constant-trip-loop` condition finds:
`range` / `tl.range` loops whose bounds are literals or constexpr parameters that name no
tile, length or model dimension (a tap count, a small head group), with at most 32 steps
when literal. The arguments stay as written; `tl.static_range` takes the same start, stop
and step. The body is unrolled at compile time, so a `break`/`continue` inside or a bound
that is not constexpr at the call would fail to compile: `skel verify` runs the candidate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from skel.errors import NothingToRewriteError
from skel.kernels.flow import flow_of
from skel.skeletons.catalog.static_range_unroll.skeleton import _short_constant_trip

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts

_REWRITTEN = ("range", "tl.range")


def _language(module: cst.Module) -> cst.BaseExpression | None:
    """How the file names `triton.language`: `tl` after `import triton.language as tl`,
    `triton.language` after a bare `import triton`; None when it imports neither."""
    plain = False
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Import):
                for a in small.names:
                    dotted = cst.Module([]).code_for_node(a.name)
                    if dotted == "triton.language" and a.asname is not None:
                        return a.asname.name if isinstance(a.asname.name, cst.BaseExpression) else None
                    plain = plain or (dotted == "triton" and a.asname is None)
            elif isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                module_name = cst.Module([]).code_for_node(small.module) if small.module else ""
                for a in small.names:
                    if module_name == "triton" and cst.Module([]).code_for_node(a.name) == "language":
                        return a.asname.name if a.asname is not None and isinstance(
                            a.asname.name, cst.BaseExpression) else cst.Name("language")
    return cst.Attribute(value=cst.Name("triton"), attr=cst.Name("language")) if plain else None


def _short_loops(facts: KernelFacts) -> list[cst.Call]:
    """The iterator calls (`range(W)`) of the kernel's short constant-trip loops."""
    lines = {lp.line for lp in facts.loops if lp.kind in _REWRITTEN and _short_constant_trip(lp, facts)}
    return [lp.bounds for lp in flow_of(facts).loops
            if lp.line in lines and lp.kind in _REWRITTEN and isinstance(lp.bounds, cst.Call)]


class _Rewrite(cst.CSTTransformer):
    def __init__(self, iters: list[cst.Call], language: cst.BaseExpression | None) -> None:
        super().__init__()
        self.iters = {id(c): c for c in iters}
        self.language = language
        self.done = 0

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        if self.iters.get(id(original_node)) is not original_node:
            return updated_node
        func = updated_node.func
        if isinstance(func, cst.Attribute):  # `tl.range(...)`: the file's own spelling of `tl`
            new = func.with_changes(attr=cst.Name("static_range"))
        elif self.language is not None:
            new = cst.Attribute(value=self.language, attr=cst.Name("static_range"))
        else:
            return updated_node
        self.done += 1
        return updated_node.with_changes(func=new)


def apply(module: cst.Module, kernel: str, facts: KernelFacts) -> cst.Module:
    """Turn ``kernel``'s short constant-trip `range` loops into `tl.static_range` loops.
    Raises NothingToRewriteError when it has none (or the file does not import triton.language)."""
    rewrite = _Rewrite(_short_loops(facts), _language(module))
    out = module.visit(rewrite)
    if not rewrite.done:
        raise NothingToRewriteError(f"{kernel}: no `range` loop with a short compile-time trip count (a literal or a "
                                    "constexpr that is no tile, length or dimension)"
                                    + ("" if rewrite.language else ", or the file does not import triton.language"))
    return out
