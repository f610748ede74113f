"""Load a `tl.dot` operand already transposed instead of `tl.trans` in registers.

## What it does
When a tile is loaded as `[N, K]` and only ever used transposed in `tl.dot`
(`tl.dot(q, tl.trans(k))`, `tl.dot(tl.trans(b_A), b_du)`), the load itself is turned
around: a block pointer over the transposed view with swapped shape and strides and
`order=(0, 1)` (`tl.make_block_ptr(k, (K, T), (1, H*K), (0, t0), (BK, BT), (0, 1))`), or
a pointer grid with the contiguous index on the first axis
(`k + o_k[:, None] + o_t[None, :] * stride_t`). The tile arrives as `[K, N]` and goes
into `tl.dot` as is.

## Why it is faster
`tl.trans` of a tile held in registers is a layout conversion: the compiler moves it
through shared memory (a store, a barrier, a load in the other layout) before the MMA
can read it, and the scratch buffer adds to shared memory use (fewer pipeline stages fit).
Loading the transposed view puts the data in the operand layout the MMA wants straight
from global memory (on Hopper the wgmma shared-memory descriptor reads either major
order for 16-bit types), so the conversion disappears. The gain is largest when the
transposed tile also goes through elementwise work first (`tl.trans(b_k * tl.exp(b_g))`),
where the compiler cannot fold the transpose into the load.

## Applies when
- a `tl.dot` operand is `tl.trans(x)`, `x.T` or `tl.permute(x, (1, 0))` (directly or
  through a name);
- `x` is a loaded tile (or elementwise work on one);
- `x` is used only transposed in the kernel's dots (one load serves every use).

## Does not apply when
- the same tile is needed both ways (`tl.dot(b_k, ...)` and `tl.dot(..., tl.trans(b_k))`
  in a backward kernel): two loads cost more HBM/L2 traffic than one transpose. Reading
  only the tile's type (`p.to(k.dtype)`, `acc.to(k.dtype)`) is not a second use;
- the transposed value is computed, not loaded (`tl.trans(b_A)` of a `tl.dot` result, an
  attention score tile): there is no load to turn around;
- the transposed view would make the load uncoalesced for a non-16-bit type or a tiny
  tile (fp32 tiles of width 8 or less): measure, the shuffle may be cheaper;
- on recent Triton the compiler often folds `tl.trans` of a plain loaded tile into the
  shared-memory layout by itself: expect a gain mainly where elementwise work sits
  between the load and the transpose, or on older Triton.

## References
- flash-linear-attention `fla/ops/delta_rule/wy_fast.py` (`prepare_wy_repr_bwd_kernel`: `p_A` is a — at `49b00f0a94`, before 2025-07-01
  `(0, 1)`-ordered block pointer over the transposed tile, with no `tl.trans(b_A)` — the change
  came in commit 1a12260e, 2024-09-19, when the kernel was `bwd_prepare_wy_repr_kernel`)
- flash-linear-attention `fla/ops/gla/chunk.py` (`chunk_gla_fwd_A_kernel_intra_sub_inter`: `p_k` over — at `49b00f0a94`, before 2025-07-01
  `(K, T)` with order `(0, 1)`, v0.2.2)
- Triton tutorial `06-fused-attention.py` (`_attn_fwd`: K loaded through a transposed block pointer,
  `order=(0, 1)`, in the 2024 versions)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import custom, rx
from skel.skeletons.predicates.names import IDENT

if TYPE_CHECKING:
    from skel.kernels.model import Assign, Call, KernelFacts

#: `tl.trans(x)`, `x.T`, `tl.permute(x, (1, 0))`, `x.trans()` -> x.
_TRANSPOSED = re.compile(
    r"^\s*(?:tl\.trans\(\s*(\w+)\s*\)|(\w+)\.T|tl\.permute\(\s*(\w+)\s*,\s*\(?\s*1\s*,\s*0\s*\)?\s*\)"
    r"|(\w+)\.trans\(\s*\))\s*(?:\.to\([^()]*\))?\s*$")


def _defs(k: KernelFacts) -> dict[str, list[Assign]]:
    out: dict[str, list[Assign]] = {}
    for a in k.assigns:
        if a.op == "=" and len(a.targets) == 1:
            out.setdefault(a.targets[0], []).append(a)
    return out


def _transposed_name(text: str, defs: dict[str, list[Assign]]) -> str | None:
    """The tile a dot operand transposes (`tl.trans(b_k)` -> b_k), through one name."""
    m = _TRANSPOSED.match(text)
    if m:
        return next(g for g in m.groups() if g)
    name = text.strip()
    if IDENT.fullmatch(name) and len(defs.get(name, ())) == 1:
        m = _TRANSPOSED.match(defs[name][0].value)
        if m:
            return next(g for g in m.groups() if g)
    return None


def _data_names(a: Assign) -> list[str]:
    """Names whose values an assignment reads: `x.dtype` (a cast target) reads no data."""
    return [n for n in a.names
            if rx(r"\b" + re.escape(n) + r"\b(?!\s*\.\s*(dtype|shape)\b)").search(a.value)]


def _loaded_roots(name: str, defs: dict[str, list[Assign]], hops: int = 3) -> set[str] | None:
    """The loaded tiles `name` is made of, when it is a loaded tile or elementwise work on
    loaded tiles (no `tl.dot` in between); None when it is computed otherwise."""
    roots: set[str] = set()
    for a in defs.get(name, ()):
        if "tl.dot" in a.calls or "tl.trans" in a.calls:
            return None
        if "tl.load" in a.calls:
            roots.add(name)
        elif hops > 0:
            for n in _data_names(a):
                if n != name and n in defs:
                    sub = _loaded_roots(n, defs, hops - 1)
                    if sub:
                        roots |= sub
    return roots or None


#: `x.dtype`, `x.dtype.element_ty`, `x.shape`: the tile's type or shape, not its data
_META_READ = re.compile(r"\b\w+\s*\.\s*(?:dtype|shape)\b(?:\s*\.\s*element_ty\b)?")


def _uses(k: KernelFacts, name: str) -> int:
    """How many statements read `name`'s data (assignments, and calls outside assignments);
    `name.dtype` (a cast target: `acc.to(k.dtype)`) reads none."""
    rx = re.compile(r"\b" + re.escape(name) + r"\b(?!\s*\.\s*(dtype|shape)\b)")
    n = sum(1 for a in k.assigns if name in _data_names(a))
    assigned_lines = {a.line for a in k.assigns}
    n += sum(1 for c in k.calls if c.line not in assigned_lines and c.name in ("tl.dot", "tl.store", "tl.sum")
             and any(rx.search(x) for x in (*c.args, *c.kwargs.values())))
    return n


def _dot_operands(k: KernelFacts) -> list[tuple[int, str]]:
    out = []
    for c in k.calls_named("tl.dot"):
        args = list(c.args[:2]) + [c.kwargs[x] for x in ("input", "other") if x in c.kwargs]
        out += [(c.line, a) for a in args]
    return out


def _trans_of_loaded(k: KernelFacts) -> list[int]:
    defs = _defs(k)
    operands = _dot_operands(k)
    transposed: dict[str, list[int]] = {}
    plain: set[str] = set()
    for line, text in operands:
        name = _transposed_name(text, defs)
        if name is not None:
            transposed.setdefault(name, []).append(line)
        else:  # `tl.dot(p.to(k.dtype), v)` reads k's type, not k
            plain.update(IDENT.findall(_META_READ.sub(" ", text)))
    lines = []
    for name, at in transposed.items():
        roots = _loaded_roots(name, defs)
        if name in plain or roots is None:
            continue
        # every loaded tile feeding it is needed only for this transposed use
        if all(r == name or _uses(k, r) <= 1 for r in roots):
            lines += at
    return lines


def _order_of(call: Call) -> str:
    args = list(call.args) + [""] * 6
    return re.sub(r"\s", "", call.kwargs.get("order", args[5]))


def _plus_terms(text: str) -> list[str]:
    """Top-level `+` terms of an expression (`k + o_k[:, None] + o_t[None, :] * s` -> 3 terms)."""
    terms, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "+" and depth == 0:
            terms.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return terms + [cur.strip()]


def _transposed_load(k: KernelFacts) -> list[int]:
    """Block pointers with `order=(0, 1)` or pointer grids whose bare (contiguous) index is
    on the first axis, in a kernel with `tl.dot`."""
    if not k.calls_named("tl.dot"):
        return []
    lines = [c.line for c in k.calls_named("tl.make_block_ptr") if _order_of(c) == "(0,1)"]
    col_bare = re.compile(r"^\(?\s*(\w+)\s*\)?\s*\[\s*:\s*,\s*None\s*\]$")
    row_strided = re.compile(r"\[\s*None\s*,\s*:\s*\](\.to\([^()]*\))?\s*\*|\*\s*\(?\s*\w+\s*\)?\s*\[\s*None\s*,\s*:\s*\]")
    aranged = {t for a in k.assigns if "tl.arange" in a.calls for t in a.targets}
    for a in k.assigns:
        terms = _plus_terms(a.value)
        if any((m := col_bare.match(t)) and m.group(1) in aranged for t in terms) \
                and any(row_strided.search(t) for t in terms):
            lines.append(a.line)
    return lines


TRANS_OF_LOADED = custom(
    "trans-of-loaded-dot-operand",
    "a `tl.dot` operand that is `tl.trans` of a loaded tile used only transposed",
    _trans_of_loaded)
TRANSPOSED_LOAD = custom(
    "transposed-load",
    "a tile loaded transposed (block pointer `order=(0, 1)`, or `x[:, None] + y[None, :] * stride`)",
    _transposed_load)

SKELETON = Skeleton(
    id="transposed-operand-load",
    title="Load the dot operand transposed instead of tl.trans",
    summary="Load a tl.dot operand already transposed (swapped strides, block_ptr order=(0, 1)) instead of tl.trans.",
    category=Category.MEMORY,
    doc=__doc__,
    present=TRANSPOSED_LOAD & ~TRANS_OF_LOADED,
    preconditions=[TRANS_OF_LOADED],
    subject=TRANS_OF_LOADED,
    env=Env(),
    helps=("compute", "occupancy"),
)
