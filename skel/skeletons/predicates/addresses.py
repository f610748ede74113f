"""Addresses, masks and index vectors: how a load's address and mask are built.

Read through the kernel's data-flow view (``skel.kernels.flow``): block pointers against
manual 2-D offset grids, bounds masks against data masks, gathered (index-tensor)
addresses, and which names hold vectors derived from ``tl.arange``."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, cast

from skel.kernels.flow import (ORDERING, CallInfo, Flow, Node, args_of, broadcast_axes, call_name, comparison,
                               elements, has_call, is_call, is_comparison, kwarg, name_of, names_in, walk)

if TYPE_CHECKING:
    import libcst as cst

#: Calls that produce a block pointer.
BLOCK_PTR_MAKERS = ("tl.make_block_ptr", "tl.advance")
#: A project helper returning a block pointer (`make_block_ptr`, `_get_block_ptr` ...).
BLOCK_PTR_HELPER = re.compile(r"\w*block_ptr")


def is_block_ptr_address(fl: Flow, addr: Node) -> bool:
    """The address is (a name bound to) a block pointer."""
    if is_call(addr, *BLOCK_PTR_MAKERS):
        return True
    name = name_of(addr)
    if name is not None:
        return any(is_call(d.value) and (call_name(cast("cst.Call", d.value)) in BLOCK_PTR_MAKERS
                                         or bool(BLOCK_PTR_HELPER.fullmatch(call_name(cast("cst.Call", d.value)))))
                   for d in fl.defs.get(name, ()))
    return False


def manual_2d_address(fl: Flow, addr: Node) -> bool:
    """`base + rows[:, None] * stride + cols[None, :]`, directly or through names."""
    if is_block_ptr_address(fl, addr):
        return False
    _, exprs = fl.closure(addr)
    return broadcast_axes(exprs) == {"col", "row"}


def tile_load_2d(fl: Flow, c: CallInfo) -> bool:
    """A load of a 2-D tile, by manual offsets or through a 2-D block pointer."""
    addr = c.arg(0, "pointer")
    if addr is None:
        return False
    if is_block_ptr_address(fl, addr):
        name = name_of(addr)
        for d in fl.defs.get(name, ()) if name is not None else ():
            if is_call(d.value, "tl.make_block_ptr"):
                maker = cast("cst.Call", d.value)
                args = args_of(maker)
                shape = args[4] if len(args) > 4 else kwarg(maker, "block_shape")
                items = elements(shape) if shape is not None else None
                if items is not None and len(items) >= 2:
                    return True
        return False
    return manual_2d_address(fl, addr)


def vector_names(fl: Flow) -> set[str]:
    """Names holding tensors derived from `tl.arange` (offsets, masks, index vectors)."""
    cached = fl.memo.get("vector_names")
    if isinstance(cached, set):
        return cached
    vec: set[str] = set()
    changed = True
    while changed:
        changed = False
        for n, defs in fl.defs.items():
            if n in vec:
                continue
            if any(has_call([d.value], "tl.arange") or names_in(d.value) & vec for d in defs):
                vec.add(n)
                changed = True
    fl.memo["vector_names"] = vec
    return vec


def is_vector_expr(fl: Flow, e: Node) -> bool:
    """``e`` is a tensor of offsets or indices: it calls ``tl.arange`` or reads a name that
    holds one (see :func:`vector_names`)."""
    return has_call([e], "tl.arange") or bool(names_in(e) & vector_names(fl))


def bounds_mask(fl: Flow, mask: Node) -> bool:
    """The mask only compares offsets against scalar limits (`offs < N`), the kind a
    block pointer's `boundary_check` or a tensor descriptor's bounds replace."""
    names, exprs = fl.closure(mask)
    if gathered(fl, names):
        return False  # a mask read from memory is data, not bounds
    seen = False
    for e in exprs:
        for n in walk(e):
            if not is_comparison(n):
                continue
            cmp = comparison(n)
            if cmp is None or cmp[1] not in ORDERING:
                return False
            if is_vector_expr(fl, cmp[0]) and is_vector_expr(fl, cmp[2]):
                return False  # offsets against offsets: causal/triangular, not bounds
            seen = True
    return seen


def gathered_address(fl: Flow, addr: Node) -> list[int]:
    """Lines of vector loads whose values feed ``addr`` (an index-tensor gather)."""
    return gathered(fl, fl.closure(addr)[0])


def gathered(fl: Flow, names: set[str]) -> list[int]:
    """Lines of vector (tile) loads whose results are among ``names``."""
    lines = []
    for c in fl.loads():
        if set(c.targets) & names:
            src = c.arg(0, "pointer")
            if src is not None and has_call(fl.closure(src)[1], "tl.arange"):
                lines.append(c.line)
    return lines
