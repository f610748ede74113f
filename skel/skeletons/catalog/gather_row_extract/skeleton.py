"""Extract one row (or column) of a register tile with `tl.gather`, not a one-hot sum.

## What it does
Inside a loop over the rows of a tile held in registers, row `j` is read out with a
one-hot select and a reduction — `b_kj = tl.sum(tl.where(o_i[:, None] == j, b_k, 0), 0)`
(or `tl.sum(b_k * (o_i == j)[:, None], 0)`). The rewrite reads it directly:
`b_kj = tl.gather(b_k, tl.full([1, BK], j, dtype=tl.int32), axis=0)`, a `[1, BK]` row.

## Why it is faster
The one-hot form touches the whole `[BC, BK]` tile to produce `BK` values: `BC x BK`
compares, selects and adds per extracted row, plus a cross-thread reduction along the
row axis (shuffles, and shared memory when the axis spans warps). Over a loop of `BC`
rows that is `BC^2 x BK` work for `BC x BK` useful values. `tl.gather` lowers to a
register/shared-memory shuffle that moves only the `BK` values, with no arithmetic and no
reduction tree. FLA's DPLR intra-chunk kernels use it (behind a Triton-version switch)
for exactly these per-row loops.

## Applies when
- a `tl.sum(..., axis)` reduces `tl.where(idx == j, x, 0)` (or `x * (idx == j)`), where
  `idx` is a `tl.arange` index vector (possibly broadcast with `[:, None]`): a one-hot row
  or column extract;
- Triton 3.3 or newer (`tl.gather` landed after the 3.2 branch cut, triton-lang/triton#5826;
  FLA guards it with `is_gather_supported = hasattr(triton.language, 'gather')` and keeps
  the one-hot form as the fallback).

## Does not apply when
- the mask is a range, not one index (`o_i < n`, `o_i >= j`): that is a masked
  reduction, not an extract;
- the reduction really sums several selected rows (a segment sum by `idx == group`):
  `tl.gather` picks one;
- older Triton (< 3.3), or a backend without `tl.gather`: keep the one-hot fallback
  (both paths behind a constexpr flag is the portable form).

## References
- flash-linear-attention `fla/ops/generalized_delta_rule/dplr/chunk_A_fwd.py` (`chunk_dplr_fwd_A_kernel_intra_sub_intra`: — at `49b00f0a94`, before 2025-07-01
  `gather(b_k, row_idx, axis=0)` under `GATHER_SUPPORTED`, the `tl.sum(tl.where(mask[:, None], b_k, 0), 0)` fallback,
  v0.2.2)
- flash-linear-attention `fla/ops/utils/op.py` (`gather = tl.gather` when `is_gather_supported`, v0.2.2)
- flash-linear-attention issue #265 ("Replace `tl.where` with `tl.gather` for better performance in Triton >= 3.3.0",
  2025-03-31)
- flash-linear-attention `fla/ops/generalized_delta_rule/iplr/wy_fast.py` (`prepare_wy_repr_fwd_kernel_chunk32`: — at `49b00f0a94`, before 2025-07-01
  the one-hot row extract in a forward substitution, v0.2.2)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import split_top
from skel.skeletons.patterns import calls_where
from skel.skeletons.predicates.names import IDENT

if TYPE_CHECKING:
    from skel.kernels.model import Call, KernelFacts

_ZERO = re.compile(r"0|0\.|0\.0|0\.0+")


def _eq_masks(k: KernelFacts) -> set[str]:
    """Names bound to an equality test of an index vector (`mask = tl.arange(0, BC) == j`)."""
    aranged = {t for a in k.assigns if "tl.arange" in a.calls for t in a.targets}
    out = set()
    for a in k.assigns:
        if a.op != "=" or len(a.targets) != 1 or a.value.count("==") != 1:
            continue
        test = re.sub(r"\.to\([^()]*\)", "", a.value)
        if ("tl.arange" in a.calls or set(a.names) & aranged) and not re.search(r"[*+&|]", test.replace("tl.arange", "")):
            out.add(a.targets[0])
    return out


def _one_hot(text: str, masks: set[str], aranged: set[str]) -> bool:
    """`text` is an equality test of an index vector, or a name bound to one."""
    t = re.sub(r"\.to\([^()]*\)", "", text)
    if "==" in t and ("tl.arange" in t or set(IDENT.findall(t)) & aranged):
        return True
    m = re.fullmatch(r"\(?\s*(\w+)\s*\)?\s*(\[[^\]]*\])?\s*", t)
    return bool(m and m.group(1) in masks)


def _inner_call(text: str, fn: str) -> list[str] | None:
    """The top-level arguments of `fn(...)` when `text` is exactly that call."""
    t = text.strip()
    if not t.startswith(fn + "(") or not t.endswith(")"):
        return None
    return [x.strip() for x in split_top(t[len(fn) + 1:-1])]


def _sums_one_hot(c: Call, k: KernelFacts) -> bool:
    """A `tl.sum` of a one-hot selection: `tl.where(mask, x, 0)` or `x * mask`, written in
    the call or in the assignment of the name it sums."""
    if not c.args:
        return False
    masks = _eq_masks(k)
    aranged = {t for a in k.assigns if "tl.arange" in a.calls for t in a.targets}
    values = {a.targets[0]: a.value for a in k.assigns if len(a.targets) == 1 and a.op == "="}
    arg = c.args[0].strip()
    arg = values.get(arg, arg) if IDENT.fullmatch(arg) else arg
    where = _inner_call(arg, "tl.where")
    if where and len(where) == 3 and _ZERO.fullmatch(where[2]) and _one_hot(where[0], masks, aranged):
        return True
    factors = [f.strip() for f in re.split(r"\*(?![^()\[\]]*[)\]])", arg)]
    return len(factors) == 2 and any(_one_hot(f.strip("() "), masks, aranged) or
                                     _one_hot(f, masks, aranged) for f in factors)


ONE_HOT_EXTRACT = calls_where(
    "tl.sum", where=_sums_one_hot, name="one-hot-extract",
    describe="a one-hot row extract `tl.sum(tl.where(idx == j, x, 0), axis)` over an index vector")
#: `tl.gather`, or any `gather` (`.gather`, a wrapper) but torch's
GATHER = calls_where(like=r"tl\.gather|(?!torch)(?:.*\.)?gather", name="gather",
                     describe="`tl.gather` (or a `gather` wrapper)")

SKELETON = Skeleton(
    id="gather-row-extract",
    title="tl.gather row extract instead of a one-hot sum",
    summary="Replace one-hot tl.sum(tl.where(idx == j, x, 0), axis) with tl.gather: O(BK) moves, not O(BC*BK) work.",
    category=Category.ARITHMETIC,
    doc=__doc__,
    present=GATHER,
    preconditions=[ONE_HOT_EXTRACT],
    subject=ONE_HOT_EXTRACT,
    env=Env(triton=">=3.3"),
    helps=("compute",),
)
