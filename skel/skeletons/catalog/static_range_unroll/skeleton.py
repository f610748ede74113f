"""Unroll short loops with a compile-time trip count (`tl.static_range`).

## What it does
Rewrites a short loop whose bounds are literals or `tl.constexpr` parameters —
`for i_w in range(W)` over the taps of a width-4 convolution, `for i in range(4)` over the
four 2-bit fields of a packed byte, `for i_k in range(NK)` over one or two head-dim
blocks — as `for i_w in tl.static_range(W)`. The front end then emits the body once per
iteration, with the loop index a compile-time constant in each copy. For a loop that must
stay a loop in the source but may unroll in the compiler, `tl.range(lo, hi,
loop_unroll_factor=U)` (Triton 3.2+) asks the IR unroller for a partial unroll instead.

## Why it is faster
A plain `range` with constant bounds is still an `scf.for`: each iteration pays the
index increment, compare and branch, and — what matters more — the loads of iteration
`i + 1` cannot be issued before the arithmetic of iteration `i` finishes, because the
body is one basic block the scheduler sees one trip at a time. Unrolled, all `W` shifted
tile loads of a convolution are issued back to back and their latencies overlap, the
index arithmetic (`t - (W - 1) + i_w`, shift amounts `2 * i`, `o_w == i_w` selections)
folds to constants, and masks that are provably true for some taps disappear. For a body
of a few loads and FMAs per iteration this is the difference between a latency-bound and a
bandwidth-bound loop.

## Applies when
- a `range` / `tl.range` loop (no `loop_unroll_factor`, no `num_stages`) has bounds made
  only of literals and `tl.constexpr` parameters, so its trip count is fixed at compile
  time;
- the trip count is short: a literal trip of at most 32, or a constexpr count of small
  things (convolution width `W`, bit fields, `NK` head-dim blocks, sort stages, top-k)
  — not a tile size (`BT`, `BC`, `BLOCK_*`), a model dimension (`K`, `D`, `hidden_size`)
  or a sequence length;
- the loop does not step over tiles of a dimension (`range(0, K, BLOCK_K)`,
  `range(tl.cdiv(K, BK))`): those are the loops software pipelining (`num_stages`) is for.

## Does not apply when
- the trip count is a runtime value (`T`, `n_cols`, a length loaded from memory):
  `tl.static_range` requires constexpr bounds and fails to compile otherwise;
- the loop is long (a tile size of 64 scalar steps, a sequence of chunks): unrolling
  multiplies code size and compile time, raises register pressure (every iteration's
  values can be live at once) and may spill — keep `range`, or use
  `tl.range(..., loop_unroll_factor=2..4)`;
- the loop feeds `tl.dot` over K tiles and relies on `num_stages` software pipelining:
  an unrolled body has no loop left to pipeline;
- each constexpr value of the bound compiles its own variant anyway, so a bound that
  varies per call (a specialized length) recompiles on every new value.

## References
- flash-linear-attention `fla/modules/convolution.py` (`causal_conv1d_fwd_kernel`: `for i_w in — at `49b00f0a94`, before 2025-07-01
  tl.static_range(-W + 1, 1)` over the taps, v0.2.2)
- flash-linear-attention `fla/ops/nsa/utils.py` (`_bitonic_merge`: `tl.static_range(stage)`, v0.2.2)
- Liger-Kernel `src/liger_kernel/ops/experimental/mm_int8int2.py` (`matmul_kernel`: the — at `5e3bf99abb`, before 2025-07-01
  `for i in range(4)` unpack loop still a plain `range`, v0.5.10)
- Triton API: `triton.language.static_range`, `triton.language.range` (`loop_unroll_factor`)
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.kernels.flow import flow_of
from skel.skeletons.conditions import loop
from skel.skeletons.patterns import loops_where
from skel.skeletons.predicates.loops import at_most_one_trip
from skel.skeletons.predicates.names import IDENT, TILE_NAME, VARYING_LENGTH

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts, Loop

#: Constexpr names that are model dimensions or sizes: a loop of that many steps is long.
_DIMENSION = re.compile(r"[KVDNMHCSL]|HEAD_DIM|HEAD_SIZE|\w*(?i:dim|size|hidden|cols|rows|len|length)\w*")
#: The longest literal trip count worth unrolling.
_MAX_LITERAL_TRIP = 32
_ALLOWED_CALLS = {"tl", "triton", "cdiv", "min", "max"}


def _literal(text: str) -> int | None:
    """The value of an integer-literal expression (`4`, `2 * 8`, `-1`), else None."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None
    return _int_value(node)


def _int_value(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, int) and not isinstance(node.value, bool) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _int_value(node.operand)
        return None if v is None else (-v if isinstance(node.op, ast.USub) else v)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
        a, b = _int_value(node.left), _int_value(node.right)
        if a is None or b is None:
            return None
        return a + b if isinstance(node.op, ast.Add) else a - b if isinstance(node.op, ast.Sub) else a * b
    return None


def _guard(lp: Loop, k: KernelFacts) -> bool:
    """`range(0, HAS_W, 1)`: a loop that runs at most once is an `if`."""
    fl = flow_of(k)
    return any(f.line == lp.line and at_most_one_trip(fl, k, f) for f in fl.loops)


def _short_constant_trip(lp: Loop, k: KernelFacts) -> bool:
    """A short, compile-time trip count: literal, or constexpr names that are no tile, length
    or model dimension."""
    if lp.kwargs or not lp.args or len(lp.args) > 3 or _guard(lp, k):
        return False
    text = " ".join(lp.args)
    if "cdiv" in text or "//" in text:
        return False  # blocks of a dimension: a tile loop, pipelined rather than unrolled
    if len(lp.args) == 3 and _literal(lp.args[2]) is None:
        return False  # stepping by a tile size: a tile loop
    names = set(IDENT.findall(text)) - _ALLOWED_CALLS
    if not names <= {p.name for p in k.params if p.constexpr}:
        return False  # a runtime bound: static_range cannot take it
    if any(TILE_NAME.fullmatch(n) or VARYING_LENGTH.fullmatch(n) or _DIMENSION.fullmatch(n) for n in names):
        return False  # a tile, a length or a model dimension: many steps
    if not names:
        start, stop = (0, _literal(lp.args[0])) if len(lp.args) == 1 else (_literal(lp.args[0]),
                                                                             _literal(lp.args[1]))
        step = _literal(lp.args[2]) if len(lp.args) == 3 else 1
        if start is None or stop is None or not step:
            return False
        if not 1 < len(range(start, stop, step)) <= _MAX_LITERAL_TRIP:
            return False
    return True


UNROLLED = loop(kind="tl.static_range", name="static-range", describe="a `tl.static_range` loop") | loop(
    kind="tl.range", kw="loop_unroll_factor", name="loop-unroll-factor",
    describe="a `tl.range(..., loop_unroll_factor=)` loop")
SHORT_CONSTANT_LOOP = loops_where(
    kind=("range", "tl.range"), where=_short_constant_trip, name="short-constant-trip-loop",
    describe="a `range` loop with a short compile-time trip count (literal or constexpr count, not a tile or dimension)")

SKELETON = Skeleton(
    id="static-range-unroll",
    title="Unroll short constant-trip loops with tl.static_range",
    summary="tl.static_range (or tl.range(..., loop_unroll_factor=)) for short constant-trip loops so they unroll.",
    category=Category.TUNING,
    doc=__doc__,
    present=UNROLLED,
    preconditions=[SHORT_CONSTANT_LOOP],
    subject=SHORT_CONSTANT_LOOP,
    env=Env(),
    helps=("latency",),
)
