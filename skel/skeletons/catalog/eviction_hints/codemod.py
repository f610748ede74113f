"""eviction-hints, applied mechanically: `eviction_policy=` on the loads the skeleton's conditions
point at, with the policy their role calls for.

- A row streamed by one loop over a runtime length and read again by a later loop (the
  skeleton's `multi-pass-reread`): the earlier passes load it `evict_last` (keep it in L2
  for the next pass), the last pass `evict_first` (no one reads it again).
- A vector every program loads (no program id in its address, a runtime length:
  `shared-vector-load`, a norm's weight): `evict_last`; beside it, the per-program vector
  loads that no later pass re-reads are streamed once: `evict_first`.

Stores are left alone, and so is every load these roles do not name. Hints never change
results; whether they pay (only when the stream exceeds L2) is for `skel verify` on a GPU.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from skel.errors import NothingToRewriteError
from skel.kernels.flow import flow_of, has_call
from skel.skeletons.catalog.eviction_hints.skeleton import _is_vector_load, _shared_vector_loads
from skel.skeletons.predicates.loops import runtime_trip_count

if TYPE_CHECKING:
    from skel.kernels.flow import CallInfo
    from skel.kernels.model import KernelFacts

_NO_SPACE = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


def policies(facts: KernelFacts) -> dict[int, tuple[cst.Call, str]]:
    """id(load call node) -> (the node, "evict_last" | "evict_first") for the loads to hint."""
    fl = flow_of(facts)
    out: dict[int, tuple[cst.Call, str]] = {}
    if not fl.ok:
        return out
    groups: dict[str, list[CallInfo]] = {}
    for c in fl.loads():
        addr = c.arg(0, "pointer")
        if addr is None or not c.loops or not runtime_trip_count(fl, facts, c.loops[-1]) or not _is_vector_load(fl, c):
            continue
        groups.setdefault(fl.key(addr), []).append(c)
    for loads in groups.values():
        passes = sorted({c.loops[-1].line for c in loads})
        if len(passes) < 2:
            continue
        for c in loads:
            out[id(c.node)] = (c.node, "evict_first" if c.loops[-1].line == passes[-1] else "evict_last")
    shared = set(_shared_vector_loads(facts) or ())
    if shared:
        for c in fl.loads():
            addr = c.arg(0, "pointer")
            if addr is None or id(c.node) in out or not _is_vector_load(fl, c):
                continue
            if c.line in shared and not has_call(fl.closure(addr)[1], "tl.program_id", "tl.num_programs"):
                out[id(c.node)] = (c.node, "evict_last")
            elif has_call(fl.closure(addr)[1], "tl.program_id", "tl.num_programs"):
                out[id(c.node)] = (c.node, "evict_first")
    return out


class _Rewrite(cst.CSTTransformer):
    def __init__(self, hints: dict[int, tuple[cst.Call, str]]) -> None:
        super().__init__()
        self.hints = hints
        self.done = 0

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        entry = self.hints.get(id(original_node))
        if entry is None or entry[0] is not original_node:
            return updated_node
        self.done += 1
        args = list(updated_node.args)
        if args and args[-1].comma is not cst.MaybeSentinel.DEFAULT:
            args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        hint = cst.Arg(cst.SimpleString(f'"{entry[1]}"'), keyword=cst.Name("eviction_policy"), equal=_NO_SPACE)
        return updated_node.with_changes(args=[*args, hint])


def apply(module: cst.Module, kernel: str, facts: KernelFacts) -> cst.Module:
    """Add `eviction_policy=` to ``kernel``'s re-read and shared loads (see the module
    docstring). Raises NothingToRewriteError when it has neither."""
    rewrite = _Rewrite(policies(facts))
    out = module.visit(rewrite)
    if not rewrite.done:
        raise NothingToRewriteError(f"{kernel}: no row re-read by a later loop over a runtime length, and no vector "
                                    "every program loads beside per-program data")
    return out
