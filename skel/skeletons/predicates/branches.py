"""Runtime branches on switch arguments (flags passed as ordinary, non-constexpr values)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from skel.skeletons.patterns import ifs, per_kernel
from skel.skeletons.predicates.names import VARYING_LENGTH
from skel.skeletons.predicates.pointers import pointer_arg, pointer_bases

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts

#: names that are sizes, strides, lengths or indices, never on/off switches
_DIMENSION = re.compile(r"[A-Z]|[A-Z]{1,2}[0-9]?|(?i:n|num|max|min)_\w+|\w*(stride|size|dim|len|length|offset)\w*"
                        r"|(?i:n)[A-Z]\w*"
                        r"|i_\w+|\w+_(?i:id|idx|index)|(?i:pid|idx)\w*")  # program / chunk indices
_CONSTANTS = {"None", "True", "False", "tl"}


@per_kernel  # read by every element tested: once per kernel
def _pointer_params(k: KernelFacts) -> set[str]:
    out: set[str] = set()
    for c in k.calls:
        if c.name in ("tl.load", "tl.store") or c.name.startswith("tl.atomic_"):
            out |= pointer_bases(pointer_arg(c), k, c.line)
    return out


def _runtime_switch_if(i: dict[str, Any], k: KernelFacts) -> bool:
    """An `if` that branches only on kernel arguments, one of them a runtime switch."""
    params = {p.name: p for p in k.params}
    names = set(i["names"]) - _CONSTANTS
    if not names or not names <= set(params):
        return False
    if re.search(r"\bis\s+(not\s+)?None\b", i["test"]):
        return False
    pointers = _pointer_params(k)
    return any(not params[n].constexpr and n not in pointers
               and not VARYING_LENGTH.fullmatch(n) and not _DIMENSION.fullmatch(n) for n in names)


def runtime_switch_ifs(k: KernelFacts) -> list[int]:
    """Lines of `if`s that branch only on kernel arguments, one of them a runtime switch."""
    return [i["line"] for i in k.ifs if _runtime_switch_if(i, k)]


#: An ``if`` on a non-constexpr switch argument: both sides are compiled and the branch is
#: taken at run time, where a ``tl.constexpr`` flag would compile the unused side away.
RUNTIME_SWITCH_BRANCH = ifs(
    where=_runtime_switch_if, name="runtime-switch-branch",
    describe="an `if` on a non-constexpr switch argument (a runtime branch on a flag)")
