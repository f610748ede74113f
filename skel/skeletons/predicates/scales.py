"""Scales on a value's path: a multiply or a divide among the operations that compute it.

Folding a constant into "the scale applied anyway" (log2(e) into a softmax scale) needs a
multiply to fold into. The arithmetic that computes *where* a value lives (a load's
address, an index vector, a `tl.where` condition) is not on the value's path."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from skel.kernels.flow import binary, call_name, is_call, name_of, positional
from skel.kernels.tree import children

if TYPE_CHECKING:
    import libcst as cst

    from skel.kernels.flow import Flow, Node

#: Calls whose arguments compute where a value lives or which program runs, not the value:
#: their arithmetic (`row * stride`, `pid * BLOCK`) is never a scale of what they return.
OPAQUE_CALLS = frozenset({"tl.load", "tl.arange", "tl.program_id", "tl.num_programs", "tl.make_block_ptr",
                          "tl.advance"})


def scaled(fl: Flow, expr: Node, hops: int = 6) -> bool:
    """Does the value ``expr`` computes go through a multiply or a divide (a softmax scale,
    a temperature, `qk *= sm_scale`)? Definitions in the data-flow view ``fl`` are followed
    ``hops`` deep; the arguments of ``OPAQUE_CALLS`` and a `tl.where` condition are not."""
    seen: set[str] = set()
    todo = [(expr, 0)]
    while todo:
        start, depth = todo.pop()
        stack = [start]
        while stack:
            n = stack.pop()
            if is_call(n):
                name = call_name(cast("cst.Call", n))
                if name in OPAQUE_CALLS:
                    continue
                if name == "tl.where":  # the condition picks lanes; the branches are the value
                    stack.extend(positional(cast("cst.Call", n))[1:3])
                    continue
            elif binary(n, "*", "/"):
                return True
            elif (ident := name_of(n)) is not None:
                if depth < hops and ident not in seen:
                    seen.add(ident)
                    for d in fl.defs.get(ident, ()):
                        if d.op in ("*=", "/="):
                            return True
                        todo.append((d.value, depth + 1))
                continue
            stack.extend(children(n))
    return False
