"""Flatten a nest of (outer count, inner BLOCK-stepped extent) loops into one loop.

## What it does
A kernel that walks a small per-item extent inside a loop over items — the channels of a
group norm, each `hidden_size_per_channel` long; the heads of a row, each `D` wide —

    for c in range(c0, c0 + channels_per_group):
        w = tl.load(W + c)
        for i in range(0, hw, BLOCK):
            offs = i + tl.arange(0, BLOCK)
            x = tl.load(X + c * hw + offs, mask=offs < hw)
            ...

becomes one loop over the product, each element recovering its item index:

    for i in range(0, channels_per_group * hw, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        c = c0 + offs // hw                       # the item of every element
        w = tl.load(W + c, mask=offs < channels_per_group * hw)   # a gather, cached
        x = tl.load(X + c0 * hw + offs, mask=offs < channels_per_group * hw)

## Why it is faster
When the inner extent is small next to `BLOCK` (a 7x7 or 8x8 feature map, 49-64 values
per channel, with a 1,024-wide block), every inner iteration runs a full block of which
most lanes are masked off: 95 % of the loads, math and stores are wasted, and the nest
runs `channels` short iterations with a loop setup each. The flat loop fills every lane
with useful elements, runs `cdiv(channels * hw, BLOCK)` iterations instead of
`channels * cdiv(hw, BLOCK)`, and the contiguous items of a group are read as one
contiguous stream. The per-element `//` and the gathered per-item parameters (a few
cached loads) are cheap next to that.

## Applies when
- an inner loop steps over an extent by a tile size (`range(0, n, BLOCK)` with 1-D
  `tl.arange` offsets) inside an outer loop that counts items one by one (channels,
  heads, groups);
- the inner extent does not depend on the outer index (every item has the same length),
  so the product is a plain rectangle;
- no `tl.dot`: the loops stream elementwise or reduction work.

## Does not apply when
- the inner extent is large (thousands of elements per item): the masked tail of each
  item is a small fraction and the nest already fills the lanes;
- items have different lengths (varlen sequences, ragged groups): flattening needs an
  offsets table and a search per element;
- the outer loop carries per-item state that must finish before the next item starts
  (a recurrence over items), or the inner loop is a tile loop of a matmul;
- the outer loop is a grid-stride/persistent loop over rows: that is scheduling, not a
  padding problem.

## References
- Liger-Kernel `src/liger_kernel/ops/group_norm.py` (`_group_norm_forward_kernel`: the — at `5e3bf99abb`, before 2025-07-01
  `for channel_idx in tl.range(...)` / `for i in range(0, hidden_size_per_channel, BLOCK_SIZE)` nest, v0.5.10)
- Liger-Kernel `src/liger_kernel/ops/group_norm.py` (`_group_norm_backward_kernel`: the same nest, v0.5.10)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skel.kernels.flow import binary, flow_of, names_in, operands, walk
from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.predicates.addresses import vector_names
from skel.skeletons.predicates.dots import NO_DOT
from skel.skeletons.predicates.names import IDENT, TILE_NAME
from skel.skeletons.predicates.programs import grid_stride_loops

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts, Loop


def _steps_by_tile(lp: Loop) -> bool:
    return len(lp.args) == 3 and bool(TILE_NAME.fullmatch(lp.args[2].strip()))


def _counts_items(lp: Loop) -> bool:
    """A loop that counts one by one: no step, or a literal 1."""
    return lp.kind in ("range", "tl.range") and (len(lp.args) < 3 or lp.args[2].strip() == "1")


def _padded_nests(k: KernelFacts) -> list[int]:
    """Lines of (outer item loop, inner BLOCK-stepped loop) nests whose inner extent does
    not depend on the outer index."""
    strided = set(grid_stride_loops(k))
    fl = flow_of(k)
    bounds = {lp.line: lp.bounds for lp in fl.loops} if fl.ok else {}
    lines = []
    for outer in k.loops:
        if not _counts_items(outer) or outer.line in strided:
            continue
        for inner in k.loops:
            if not (outer.line < inner.line <= outer.end_line and inner.depth == outer.depth + 1):
                continue
            if not _steps_by_tile(inner):
                continue
            reads = set(IDENT.findall(" ".join(inner.args[:2])))
            bound = bounds.get(inner.line)
            if bound is not None:
                reads |= fl.closure(bound)[0]
            if reads & set(outer.targets):
                continue  # ragged: the inner extent follows the outer index (directly or via loads)
            if not any(c.name in ("tl.load", "tl.store") and inner.line <= c.line <= inner.end_line
                       for c in k.calls):
                continue
            lines += [outer.line, inner.line]
    return lines


def _flat_item_index(k: KernelFacts) -> list[int] | None:
    """Lines in a loop where an item index is recovered from a flat offset vector
    (`c = offs // hw`)."""
    fl = flow_of(k)
    if not fl.ok:
        return None
    vec = vector_names(fl)
    lines = []
    for defs in fl.defs.values():
        for d in defs:
            if not d.loops:
                continue
            for n in walk(d.value):
                if binary(n, "//"):  # the item; `%` alone is also a wrap (`offs % M`), not flattening
                    left, right = operands(n)
                    if names_in(left) & vec and not names_in(right) & vec:
                        lines.append(d.line)
                        break
    return lines


FLAT_ITEM_INDEX = custom(
    "flat-item-index", "one loop over a flattened extent recovering the item with `offs // inner`",
    _flat_item_index)
PADDED_NEST = custom(
    "item-loop-over-block-loop",
    "an outer loop over items (channels, heads) around an inner `range(0, n, BLOCK)` loop of the same length "
    "for every item", _padded_nests)

SKELETON = Skeleton(
    id="loop-flattening",
    title="Flatten an item loop around a short BLOCK loop",
    summary="Replace nested loops whose inner trip is small by one loop over the product with idx // inner.",
    category=Category.DECOMPOSITION,
    doc=__doc__,
    present=FLAT_ITEM_INDEX,
    preconditions=[PADDED_NEST, NO_DOT],
    subject=PADDED_NEST,
    env=Env(),
    helps=("occupancy", "latency"),
)
