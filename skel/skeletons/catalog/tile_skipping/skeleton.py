"""Skip key/value tiles that a causal (or block-sparse) mask empties, instead of masking them.

## What it does
An attention-like kernel that loops over *all* key blocks and applies the causal mask
with `tl.where(offs_m[:, None] >= offs_n[None, :], s, -inf)` computes the full square
and throws half of it away. Tile skipping bounds the loop by the query tile instead:

    # blocks strictly below the diagonal: no mask needed
    for start_n in range(0, start_m * BLOCK_M, BLOCK_N):
        ...unmasked body...
    # the diagonal block(s): masked
    for start_n in range(start_m * BLOCK_M, (start_m + 1) * BLOCK_M, BLOCK_N):
        ...masked body...

(the Triton tutorial's `STAGE` constexpr runs the same inner function for both ranges).
Block-sparse variants skip blocks listed as empty (`if` on a loaded block mask, an early
`return`, or a loop over a list of selected block indices).

## Why it is faster
For causal attention over N keys, a query tile at row block i only needs blocks 0..i:
on average half the QK^T/PV MMAs, half the K/V loads and half the `exp`s are wasted in
the full-range loop. Skipping them removes close to half of the work for long sequences
(the triangle is half the square; arithmetic, not a measurement), and splitting
off the diagonal block also removes the `tl.where` (a select per score) from every
off-diagonal block.

## Applies when
- the kernel loops over key/value blocks with bounds that do not depend on the query
  tile (`range(0, N_CTX, BLOCK_N)`), and inside the loop applies a triangular mask
  comparing a query-side offset (from the program id) with a key-side offset (from
  the loop variable): `q_idx[:, None] >= k_idx[None, :]`.

## Does not apply when
- the mask is not triangular across tiles: a mask within one chunk
  (`o_i[:, None] >= o_i[None, :]`, FLA intra-chunk kernels) or a padding mask;
- the loop bound already depends on the query tile (`hi = (start_m + 1) * BLOCK_M`,
  `range(0, i_t * BT, BS)`), there is a `STAGE` split, or blocks are already selected
  from an index list / skipped with an `if`;
- non-causal attention or a bidirectional mask (nothing to skip);
- heavy load imbalance matters more than the saved work: the last query tiles do N/BLOCK
  iterations, the first do one — pair with a reversed/longest-first tile order for
  many heads, or a persistent schedule.
The diagonal handling must be exact: when BLOCK_M != BLOCK_N, the masked range is
`[start_m * BLOCK_M, (start_m + 1) * BLOCK_M)` stepped by BLOCK_N; keep the
`tl.where` there.

## References
- Triton tutorial `06-fused-attention.py` (`_attn_fwd_inner`, `STAGE` with `lo, hi`)
- flash-linear-attention `fla/ops/attn/parallel.py` (`parallel_attn_fwd_kernel`: `range(0, i_t * BT, BS)` over the blocks below the diagonal, then the diagonal block) — at `49b00f0a94`, before 2025-07-01
- flash-linear-attention `fla/ops/nsa/parallel.py` (`parallel_nsa_fwd_kernel`, selected block indices) — at `49b00f0a94`, before 2025-07-01
- flash-linear-attention `fla/ops/simple_gla/parallel.py` (`parallel_simple_gla_fwd_kernel`) — at `49b00f0a94`, before 2025-07-01
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Callable, TypeVar, cast

from skel.kernels.flow import flow_of
from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import assign_calls, assign_targets, custom, param, split_top
from skel.skeletons.patterns import any_of, assigns, ifs, loops_where
from skel.skeletons.predicates.names import IDENT
from skel.skeletons.predicates.tiles import COL_AXIS, ROW_AXIS

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts, Loop

T = TypeVar("T")

_NAME = "(" + IDENT.pattern + ")"  # a captured identifier
# a[:, None] OP b[None, :]   |   a[None, :] OP b[:, None]   |   (a[:, None] - b[None, :] OP w)
_TRI = re.compile(
    _NAME + r"\s*" + COL_AXIS + r"\s*(?:>=|<=|>|<)\s*\(?\s*" + _NAME + r"[^&|,]*?" + ROW_AXIS
    + r"|" + _NAME + r"\s*" + ROW_AXIS + r"\s*(?:>=|<=|>|<)\s*\(?\s*" + _NAME + r"[^&|,]*?" + COL_AXIS
    + r"|" + _NAME + r"\s*" + COL_AXIS + r"\s*-\s*" + _NAME + r"\s*" + ROW_AXIS + r"\s*(?:>=|<=|>|<)")


_TILE_PARAM = re.compile(r"i_[a-z]{1,3}|start_[mn]|pid(_\w+)?|\w*_block_id|\w*tile_id")
_PURE = {".to", "tl.cdiv", "triton.cdiv", "cdiv", "tl.maximum", "tl.minimum", "min", "max", "tl.multiple_of"}


def _tile_names(k: KernelFacts) -> set[str]:
    """Names holding a program id, or integer arithmetic on program ids and scalar arguments
    (``i_b, i_h = i_bh // H, i_bh % H``): tile indices and positions, not loaded values.
    In a `@triton.jit` helper without `tl.program_id`, index-like parameters (`i_t`, `start_m`)."""
    tiles: set[str] = set()
    for a in k.assigns:
        if any("program_id" in c for c in a.calls):
            tiles |= set(assign_targets(a))
    if not k.calls_named("tl.program_id") and not tiles:
        tiles = {p.name for p in k.params if not p.constexpr and _TILE_PARAM.fullmatch(p.name)}
    scalars = {p.name for p in k.params if p.constexpr or not p.annotation and not _is_pointer(p.name)}
    scalars |= {"tl", "int64", "int32"}
    for a in k.assigns:  # counts such as NT = tl.cdiv(T, BT)
        if a.loop_depth == 0 and a.op == "=" and assign_calls(a) <= _PURE and set(a.names) <= scalars | {"cdiv"}:
            scalars |= set(assign_targets(a))
    loaded = {t for a in k.assigns if "tl.load" in a.calls for t in assign_targets(a)}
    direct = set(tiles)
    changed = True
    while changed:
        changed = False
        for a in k.assigns:
            if set(assign_targets(a)) & loaded - direct:
                continue  # also assigned from memory in another branch (varlen bos/eos/T)
            if a.loop_depth or a.op != "=" or not assign_calls(a) <= _PURE or not set(a.names) & tiles:
                continue
            if not set(a.names) <= tiles | scalars | {c for c in a.calls if "." not in c}:
                continue
            new = set(assign_targets(a)) - tiles
            if new:
                tiles |= new
                changed = True
    return tiles


def _is_pointer(name: str) -> bool:
    return name.endswith("ptr") or name.lower() in ("q", "k", "v", "o", "g", "x", "y")


def _once(k: KernelFacts, key: str, compute: Callable[[KernelFacts], T]) -> T:
    """``compute(k)``, once per kernel: three conditions of this skeleton ask for the same
    views, and every kernel is graded against them (kept with the kernel's data-flow view)."""
    memo = flow_of(k).memo
    key = "tile-skipping:" + key
    if key not in memo:
        memo[key] = compute(k)
    return cast(T, memo[key])  # what ``compute`` gave for this key


def _single_defs(k: KernelFacts) -> dict[str, list[str]]:
    """Each name assigned outside loops -> the values assigned to it ("" for one read from memory)."""
    defs: dict[str, list[str]] = {}
    for a in k.assigns:
        tg = assign_targets(a)
        vals = split_top(a.value) if len(tg) > 1 else [a.value]
        if a.loop_depth == 0 and len(vals) == len(tg):
            for t, v in zip(tg, vals):
                # a value read from memory is never substituted (it hides nothing about the tile)
                defs.setdefault(t, []).append("" if "tl.load" in v or "program_id" in v else v.strip())
    return defs


def _substitutions(k: KernelFacts, text: str, depth: int = 3) -> list[str]:
    """``text``, then ``text`` with names assigned once outside loops replaced by their
    value, level by level (up to ``depth`` levels, fewer when nothing changes)."""
    defs = _once(k, "defs", _single_defs)
    out = [text]
    for _ in range(depth):
        new = IDENT.sub(lambda m: "(" + defs[m.group(0)][0] + ")"
                        if len(defs.get(m.group(0), ())) == 1 and defs[m.group(0)][0] else m.group(0), text)
        if new == text:
            break
        text = new
        out.append(text)
    return out


def _bound_by_tile(k: KernelFacts, arg: str, tiles: set[str]) -> bool:
    return any(_tile_scaled(text, tiles) for text in _substitutions(k, arg))


def _tile_scaled(text: str, tiles: set[str]) -> bool:
    """The tile index scales a bound (`i_t * BT`, `(start_m + 1) * BLOCK_M`, `(i_t + 1) // BS`),
    not only subtracted from a length (`T - i_t * BT`, a boundary guard)."""
    for _ in range(3):  # drop subtracted terms: `- (..)`, `- a * b`
        text = re.sub(r"-\s*\((?:[^()]|\([^()]*\))*\)", "-0", text)
        text = re.sub(r"-\s*[\w.]+(\s*[*/]+\s*[\w.]+)*", "-0", text)
    for m in IDENT.finditer(text):
        if m.group(0) not in tiles:
            continue
        before = text[:m.start()].rstrip()
        after = text[m.end():]
        if re.match(r"\s*(\*|\+\s*[\w\s+]*\)\s*(\*|//))", after) or re.search(r"[\w)]\s*\*\s*\(?\s*$", before):
            return True
    return False


def _causal_compares(k: KernelFacts, lp: Loop) -> list[tuple[int, str, str]]:
    out = []
    texts = [(a.line, a.value) for a in k.assigns if lp.line <= a.line <= lp.end_line]
    texts += [(c.line, x) for c in k.calls if lp.line <= c.line <= lp.end_line for x in c.args]
    for line, text in texts:
        for m in _TRI.finditer(text):
            g = [x for x in m.groups() if x]
            if len(g) == 2 and g[0] != g[1]:
                out.append((line, g[0], g[1]))
    return out


def _any_triangular(k: KernelFacts) -> bool:
    texts = [a.value for a in k.assigns] + [x for c in k.calls for x in c.args]
    return any(_TRI.search(t) for t in texts) or bool(re.search(r"(?i)causal", " ".join(p.name for p in k.params)))


def _tile_bounded(lp: Loop, k: KernelFacts) -> bool:
    """A loop whose range is bounded by the query tile (with a triangular mask in the kernel)."""
    if lp.kind == "while":
        return False
    tiles = _once(k, "tiles", _tile_names)
    if not tiles or not _once(k, "triangular", _any_triangular):
        return False
    return any(_bound_by_tile(k, a, tiles) for a in lp.args)


def _skips_block(f: dict[str, Any], k: KernelFacts) -> bool:
    """An `if` inside a loop comparing the block position with the tile (skip the block)."""
    if not (f.get("loop_depth", 0) and re.search(r"<=|>=|<|>", f["test"])) or "tl.load" in f["test"]:
        return False
    lp = max((lp for lp in k.loops if lp.line <= f["line"] <= lp.end_line), key=lambda x: x.line, default=None)
    if lp is None:  # an `if` folded in from a helper whose loop is the caller's: no range here
        return False
    tiles = _once(k, "tiles", _tile_names)
    variant = set(lp.assigned) | set(lp.targets)
    names = set(f["names"])
    return bool((names & tiles) - variant and (names & variant) - tiles)


def _sparse_loop(lp: Loop, k: KernelFacts) -> bool:
    """A loop whose bounds are read from a block-sparse structure (``_sparse_bounds``)."""
    return _sparse_bounds(k, lp)


#: a block index loaded from a list and scaled to a position (`i_s = tl.load(block_indices + i) * BS`)
_LOADED_BLOCK_INDEX = re.compile(
    r"tl\.load\(\s*\w*(indices|_idx|block_table|block_ids)\w*\b[^()]*\)(\.to\([^()]*\))?\s*\*\s*[A-Z]\w*")


_SPARSE = re.compile(r"(?i)csr|block_(count|indices|idx|offsets|mask)|kv_indices|nnz|sparse")


def _sparse_bounds(k: KernelFacts, lp: Loop) -> bool:
    """Loop bounds read from a block-sparse structure (CSR offsets, block counts)."""
    texts = list(lp.args)
    seen: set[str] = set()
    for _ in range(3):
        names = {n for t in texts for n in IDENT.findall(t)} - seen
        seen |= names
        for a in k.assigns:
            if a.loop_depth == 0 and set(assign_targets(a)) & names:
                texts.append(a.value)
    return any("tl.load" in t and _SPARSE.search(t) for t in texts)


def _full_range_causal(k: KernelFacts) -> list[int]:
    """A loop over all key blocks (bounds independent of the tile) applying a mask that compares
    a query-side offset (loop-invariant) with a key-side offset (loop-variant)."""
    lines = []
    for lp in k.loops:
        if lp.kind in ("while", "tl.static_range"):
            continue
        has_where = any(c.name == "tl.where" and lp.line <= c.line <= lp.end_line for c in k.calls)
        has_score = any(c.name in ("tl.dot", "tl.sum") and lp.line <= c.line <= lp.end_line for c in k.calls)
        if not (has_where and has_score):  # the cheap test first
            continue
        if any(_bound_by_tile(k, a, _once(k, "tiles", _tile_names)) for a in lp.args) or _sparse_bounds(k, lp):
            continue
        variant = set(lp.assigned) | set(lp.targets)
        for line, a, b in _causal_compares(k, lp):
            if (a in variant) != (b in variant):
                lines.append(line)
    return lines


STAGE_SPLIT = param("STAGE", constexpr=True, name="stage-constexpr", describe="a `STAGE` constexpr (causal split)")
TILE_BOUNDED_LOOP = loops_where(
    where=_tile_bounded, name="tile-bounded-loop",
    describe="a key loop bounded by the query tile (`range(0, (start_m + 1) * BLOCK_M, ...)`)")
#: An `if` inside a loop comparing the block position with the tile (skip the block), or a
#: loop over loaded block indices (`i_s = tl.load(block_indices + i) * BS`).
SKIPPED_BLOCKS = any_of(
    ifs(where=_skips_block, name="block-position-test",
        describe="an `if` in a loop comparing the block position with the tile"),
    loops_where(where=_sparse_loop, name="sparse-bounded-loop",
                describe="a loop bounded by a block-sparse structure (CSR offsets, block counts)"),
    assigns(value=_LOADED_BLOCK_INDEX, calling=("tl.load",), in_loop=True, name="loaded-block-index",
            describe="a block position loaded from a block-index list in a loop"),
    name="skipped-blocks", describe="blocks skipped by an `if` on their position, or iterated from a block-index list")
FULL_RANGE_CAUSAL_LOOP = custom(
    "full-range-causal-loop",
    "a loop over all key blocks (bounds independent of the query tile) masking `q_idx[:, None] >= k_idx[None, :]`",
    _full_range_causal,
)

SKELETON = Skeleton(
    id="tile-skipping",
    title="Skip fully-masked tiles (causal / block-sparse)",
    summary="Bound the key loop by the query tile (causal lo/hi, STAGE split) instead of masking every block.",
    category=Category.DECOMPOSITION,
    doc=__doc__,
    present=STAGE_SPLIT | TILE_BOUNDED_LOOP | SKIPPED_BLOCKS,
    preconditions=[FULL_RANGE_CAUSAL_LOOP],
    subject=FULL_RANGE_CAUSAL_LOOP,
    env=Env(),
    helps=("compute", "memory"),
)
