"""int64-offsets, applied mechanically: the program ids whose values reach an int32
`pid * stride` product in a load/store address get `.to(tl.int64)`.

The products are the ones the skeleton's `int32-pid-times-runtime-size` condition finds: a
program-id-derived index (directly, through assignments, or through a grid-stride loop
started at a program id) times a runtime argument, in the address of a load, store or
atomic. Each `tl.program_id(axis)` that index is computed from becomes
`tl.program_id(axis).to(tl.int64)`, so everything computed from it (rows, tile offsets) is
64-bit and the product can pass 2**31 elements. Program ids that feed no such product
(an id used only in a mask, a tile index multiplied by a constexpr block) stay int32.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from skel.errors import NothingToRewriteError
from skel.kernels.flow import binary, call_name, calls_in, flow_of, operands, walk
from skel.skeletons.catalog.int64_offsets.skeleton import _pid_dependent, _pid_loops, _runtime_factor
from skel.skeletons.patterns import POINTER_CALLS

if TYPE_CHECKING:
    from skel.kernels.flow import Flow, Node
    from skel.kernels.model import KernelFacts


def _program_ids(fl: Flow, index: Node) -> list[cst.Call]:
    """The `tl.program_id(...)` calls ``index`` is computed from (through names, and through
    the bounds of a grid-stride loop whose index it reads)."""
    names, exprs = fl.closure(index)
    for lp in fl.loops:
        if lp.bounds is not None and lp.targets & names:
            exprs += fl.closure(lp.bounds)[1]
    return [c for e in exprs for c in calls_in(e) if call_name(c) == "tl.program_id"]


def _promoted(facts: KernelFacts) -> list[cst.Call]:
    """Program-id calls behind an int32 `pid * runtime` product in an address."""
    fl = flow_of(facts)
    if not fl.ok:
        return []
    runtime = {p.name for p in facts.params if not p.constexpr}
    pid_loops = _pid_loops(fl)
    out: dict[int, cst.Call] = {}
    for c in fl.calls:
        addr = c.arg(0, "pointer") if c.name in POINTER_CALLS else None
        if addr is None:
            continue
        for e in fl.closure(addr)[1]:
            for n in walk(e):
                if not binary(n, "*"):
                    continue
                a, b = operands(n)
                for index, factor in ((a, b), (b, a)):
                    if _pid_dependent(fl, index, pid_loops) and _runtime_factor(fl, factor, runtime):
                        out.update((id(p), p) for p in _program_ids(fl, index))
    return list(out.values())


def _to_int64(call: cst.Call) -> cst.Call:
    """``tl.program_id(0)`` -> ``tl.program_id(0).to(tl.int64)`` (with the call's own spelling of `tl`)."""
    func = call.func
    lang: cst.BaseExpression = func.value if isinstance(func, cst.Attribute) else cst.Name("tl")
    return cst.Call(func=cst.Attribute(value=call, attr=cst.Name("to")),
                    args=[cst.Arg(cst.Attribute(value=lang, attr=cst.Name("int64")))])


class _Rewrite(cst.CSTTransformer):
    def __init__(self, calls: list[cst.Call]) -> None:
        super().__init__()
        self.calls = {id(c): c for c in calls}
        self.done = 0

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        if self.calls.get(id(original_node)) is not original_node:
            return updated_node
        self.done += 1
        return _to_int64(updated_node)


def apply(module: cst.Module, kernel: str, facts: KernelFacts) -> cst.Module:
    """Promote the program ids behind ``kernel``'s int32 `pid * stride` address products to
    int64. Raises NothingToRewriteError when no address has such a product."""
    rewrite = _Rewrite(_promoted(facts))
    out = module.visit(rewrite)
    if not rewrite.done:
        raise NothingToRewriteError(f"{kernel}: no load/store address multiplies a program-id-derived index by a "
                                    "runtime stride or size")
    return out
