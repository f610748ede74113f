"""Clamp a pairwise decay exponent to <= 0 (`exp(tl.minimum(g_i - g_j, 0))`) so no lane can overflow.

## What it does
In chunked linear-attention and state-space kernels the intra-chunk decay matrix is
`exp(g[:, None] - g[None, :])` over a cumulative log-decay `g` (gated linear attention,
Gated DeltaNet, Mamba-2's `dA_cumsum`). The rewrite bounds the exponent before the
exponential: `tl.exp(tl.minimum(dA_m[:, None] - dA_k[None, :], 0.0))` (Mamba-2), or
`exp(tl.where(x <= 0, x, float('-inf')))` (flash-linear-attention's `safe_exp`). On the
causal half the exponent is <= 0 already and nothing changes; every other lane gets at most
`exp(0) = 1` instead of `inf`.

## Why it is faster
It is not: this is a correctness fix for one `min` per element. `g` falls along the chunk, so
`g_i - g_j` is as large as the chunk's whole decay on the non-causal half (i before j), and
on padded lanes: a masked or boundary-checked load pads `g` with 0, so a
padded row or column against a valid one has exponent `-g_j`, up to the chunk's total
decay. Past 88 fp32 `exp` returns `inf`; the score there is `0 * inf = NaN` (the padded
q / k are 0). A causal `tl.where` removes the non-causal half, but not the padded lanes
that sit on its causal side, and those feed a `tl.dot` over the chunk: `NaN * 0` in the
contraction, so valid outputs become NaN (Mamba-2's `dx`, the `dv` of an attention-like
backward). It shows only on the last, partial chunk of a sequence with strong gates,
never in tests with full chunks or mild gates. Clamping the exponent makes every factor
finite whatever the masks do.

## Applies when
- a `tl.exp` / `tl.exp2` / `exp` helper takes a pairwise difference of one tensor's loaded
  values, `g[:, None] - g[None, :]` or `dA_m[:, None] - dA_k[None, :]` (both read from the same
  pointer: a cumulative decay), with no clamp on the exponent;
- no `tl.where` that selects the product tests both the triangle and the range of the chunk
  (`(o_t[:, None] >= o_t[None, :]) & (m_t[:, None] & m_t)`, `m_t = o_t < T`): a causal mask
  alone, or none, leaves the padded lanes' `inf` in place.

## Does not apply when
- the exponent is already clamped (`tl.minimum(.., 0.0)`, `tl.where(x <= 0, x, -inf)`, a
  `safe_exp` helper) or masked to `-inf` before the exponential;
- the product is selected by a `tl.where` whose mask holds the causal and the range tests
  (flash-linear-attention's Gated DeltaNet after it removed `safe_exp`): the overflowed lanes
  are all discarded;
- the difference is a softmax's `qk - m_i[:, None]` (a row maximum, not one tensor's values
  against themselves) or of two different tensors;
- `g` is scanned in the kernel (`tl.cumsum` of loads padded with 0): padded lanes repeat the
  last cumulative value and their exponent stays <= 0;
- an off-diagonal block of the chunk (`b_g1[:, None] - b_g0[None, :]`, later rows against
  earlier columns) selected by a range mask: it has no non-causal half;
- a 1-D `exp(g_last - g)`: padded lanes load `g = 0` and the exponent stays <= 0;
- the product is filtered for NaN afterwards (`tl.where(x == x, x, 0.)`).

## References
Promoted from the candidate cluster "+ call tl.minimum" (message "precision"; `skel skeletons
candidates`), with the flash-linear-attention commits that introduced and later replaced
`safe_exp`:
- mamba `mamba_ssm/ops/triton/ssd_chunk_scan.py` (`_chunk_scan_fwd_kernel`: `cb *= tl.exp(tl.minimum((dA_cs_m[:, None] - dA_cs_k[None, :]), 0.0))`, the same clamp in every chunk-scan kernel and on `dA_cs_last - dA_cs_k` in `ssd_chunk_state.py`) — at `2e16fc3062`, 2025-03-31, "Add numerical instability patch and enable nheads to be a non multiple of 8 (#713)"
- mamba `mamba_ssm/ops/triton/ssd_combined.py` (`_chunk_scan_chunk_state_bwd_dx_kernel`: the failure, in its comment: `dA_cs_m = 0.0` on padded lanes, `tl.exp` returns `inf`, times `cb = 0.0` is NaN in `dx`; fixed there by a range test in the mask) — at `bb3a82a7c8`, 2024-06-11, "Fix mask in _chunk_scan_chunk_state_bwd_dx that could cause NaN"
- flash-linear-attention `fla/ops/gated_delta_rule/chunk.py` (`chunk_gated_delta_rule_fwd_kernel_o`: `b_s * safe_exp(b_g[:, None] - b_g[None, :])`, `safe_exp(x) = exp(tl.where(x <= 0, x, -inf))`) — at `737550ff9b`, 2024-12-28, "Fix NaN exp gate values"
- flash-linear-attention `fla/ops/simple_gla/chunk.py` (`chunk_simple_gla_fwd_kernel_o`: the clamped `safe_diff_exp` replaces `tl.exp(b_g[:, None] - b_g[None, :])` under a causal-only mask) — at `39fc5878e1`, 2024-12-27, "[Simple GLA] Use safe diff-exp. Add stress test for detecting nan"
- flash-linear-attention `fla/ops/common/chunk_o.py` (`chunk_fwd_kernel_o`: the alternative, `safe_exp` dropped for a `tl.where` whose mask adds the range test `m_t = o_t < T` to the causal one) — at `356d59d7e4`, 2025-06-18, "[GDN] Remove `safe_exp` & add gate 1 tests (#463)"
On the before sides of these commits the rule matches Mamba-2's `_chunk_scan_fwd_kernel`, both
`ddAcs_stable` kernels and `_chunk_scan_chunk_state_bwd_dx_kernel`, and simple GLA's forward and
`dqkg` kernels; on flash-linear-attention 0.6 (472 kernels, whose Gated DeltaNet kernels carry
the range masks, one with a comment naming this `0 * inf`) and Liger-Kernel 0.8.5 (187) it
matches none.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, cast

from skel.kernels.flow import (args_of, binary, call_name, calls_in, comparison, flow_of, has_call, is_call,
                               name_of, names_in, operands, receiver, walk)
from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.predicates.addresses import is_vector_expr
from skel.skeletons.predicates.pointers import pointer_bases

if TYPE_CHECKING:
    import libcst as cst

    from skel.kernels.flow import Flow, Node
    from skel.kernels.model import KernelFacts

#: exponentials that overflow to inf, Triton's, libdevice's and the bare helpers kernels import
_EXP = frozenset({"tl.exp", "tl.math.exp", "exp", "tl.extra.cuda.libdevice.exp", "tl.extra.libdevice.exp",
                  "tl.exp2", "tl.math.exp2", "exp2", "tl.extra.cuda.libdevice.exp2", "tl.extra.libdevice.exp2",
                  "fast_exp", "fast_exp2"})
#: helpers that clamp the exponent themselves (flash-linear-attention's `safe_exp`)
_SAFE_EXP = re.compile(r"safe_\w*exp\w*")
#: in-kernel scans: a cumulative decay computed from padded loads repeats its last value
_SCANS = ("tl.cumsum", "tl.associative_scan", "cumsum")
_ROW = re.compile(r"\[:,None\]$")
_COL = re.compile(r"\[None,:\]$")


def _value_names(e: Node) -> set[str]:
    """Names ``e``'s value is computed from: not the addresses and masks of its loads."""
    out = names_in(e)
    for c in calls_in(e):
        if call_name(c) == "tl.load":
            for a in c.args:
                out -= names_in(a.value)
    return out


def _value_exprs(fl: Flow, e: Node, hops: int = 8) -> list[Node]:
    """``e`` and the definitions its value flows from (a few hops back), never into the
    addresses of the loads on the way."""
    out: list[Node] = [e]
    seen: set[str] = set()
    frontier = _value_names(e)
    for _ in range(hops):
        frontier -= seen
        if not frontier:
            break
        seen |= frontier
        nxt: set[str] = set()
        for n in frontier:
            for d in fl.defs.get(n, ()):
                out.append(d.value)
                nxt |= _value_names(d.value)
        frontier = nxt
    return out


def _loaded_from(fl: Flow, k: KernelFacts, e: Node) -> set[str]:
    """The pointer arguments whose loads ``e``'s value reads, through its definitions."""
    lines = {id(c.node): c.line for c in fl.loads()}
    out: set[str] = set()
    for x in _value_exprs(fl, e):
        for c in calls_in(x):
            if call_name(c) == "tl.load" and args_of(c):
                out |= pointer_bases(fl.text(args_of(c)[0]), k, lines.get(id(c)))
    return out


def _exponent(fl: Flow, call: cst.Call) -> Node | None:
    """The exponent of an exponential call, read through one single-definition name
    (`b_D = g[:, None] - g[None, :]`, then `exp(b_D)`)."""
    if call_name(call) not in _EXP or not args_of(call):
        return None
    top: Node = _uncast(args_of(call)[0])
    n = name_of(top)
    if n is not None and len(fl.defs.get(n, [])) == 1:
        top = _uncast(fl.defs[n][0].value)
    return top


def _uncast(e: Node) -> Node:
    """``e`` without `.to(...)` casts: `exp((a - b).to(tl.float32))` -> `a - b`."""
    while is_call(e, ".to") and receiver(cast("cst.Call", e)) is not None:
        e = cast("Node", receiver(cast("cst.Call", e)))
    return e


def _pairwise_decay(fl: Flow, k: KernelFacts, top: Node) -> bool:
    """`a[:, None] - b[None, :]` (either order) with ``a`` and ``b`` loaded from one pointer,
    not scanned in the kernel (a `tl.cumsum` of loads padded with 0 repeats its last value on
    padded lanes: their exponent stays <= 0)."""
    if not binary(top, "-"):
        return False
    a, b = operands(top)
    ka, kb = fl.key(a), fl.key(b)
    if not ((_ROW.search(ka) and _COL.search(kb)) or (_COL.search(ka) and _ROW.search(kb))):
        return False
    if any(has_call(_value_exprs(fl, x), *_SCANS) for x in (a, b)):
        return False
    return bool(_loaded_from(fl, k, a) & _loaded_from(fl, k, b))


def _diagonal(fl: Flow, top: Node) -> bool:
    """Both sides of the difference are the same vector (`g[:, None] - g[None, :]`): the
    tile has a non-causal half. Two blocks' vectors (`b_g1[:, None] - b_g0[None, :]`, an
    off-diagonal block of the chunk) have none: only padded lanes can overflow there."""
    a, b = operands(top)
    return _ROW.sub("", fl.key(a)) == _COL.sub("", fl.key(b)) or _COL.sub("", fl.key(a)) == _ROW.sub("", fl.key(b))


def _tests(fl: Flow, mask: Node) -> tuple[bool, bool, bool]:
    """What a `tl.where` mask tests: the triangle (offsets against offsets, `o[:, None] >=
    o[None, :]`), the range (offsets against a scalar limit, `o_t < T`), or NaN itself
    (`x == x`, false only on NaN lanes)."""
    tri = rng = nan = False
    for e in fl.closure(mask)[1]:
        for n in walk(e):
            cmp = comparison(n)
            if cmp is None:
                continue
            if cmp[1] == "==" and fl.key(cmp[0]) == fl.key(cmp[2]):
                nan = True
                continue
            left, right = is_vector_expr(fl, cmp[0]), is_vector_expr(fl, cmp[2])
            tri |= left and right
            rng |= left != right
    return tri, rng, nan


def _guarded(fl: Flow, call: cst.Call, diagonal: bool) -> bool:
    """A `tl.where` selects a value computed from ``call`` with a mask that removes every
    lane that can overflow: the range (and, on a diagonal tile, the triangle), or the NaN
    lanes themselves."""
    for w in fl.named("tl.where"):
        args = args_of(w.node)
        if len(args) != 3:
            continue
        tri, rng, nan = _tests(fl, args[0])
        if not (nan or (rng and (tri or not diagonal))):
            continue
        if any(c is call for x in _value_exprs(fl, args[1]) for c in calls_in(x)):
            return True
    return False


def _unclamped_pairwise(k: KernelFacts) -> list[int] | None:
    fl = flow_of(k)
    if not fl.ok or not any(c.name in _EXP for c in fl.calls):
        return None
    lines = []
    for c in fl.calls:
        top = _exponent(fl, c.node)
        if top is not None and _pairwise_decay(fl, k, top) and not _guarded(fl, c.node, _diagonal(fl, top)):
            lines.append(c.line)
    return lines


def _clamped_exponent(fl: Flow, k: KernelFacts, top: Node) -> bool:
    """`tl.minimum(<pairwise decay>, 0)` or `tl.where(.., <pairwise decay>, -inf)`."""
    if is_call(top, "tl.minimum", "minimum") or is_call(top, "tl.where"):
        return any(_pairwise_decay(fl, k, a) or _pairwise_decay(fl, k, _exponent_name(fl, a))
                   for a in args_of(top))  # type: ignore[arg-type]  # is_call: a call
    return False


def _exponent_name(fl: Flow, e: Node) -> Node:
    n = name_of(e)
    defs = fl.defs.get(n, []) if n is not None else []
    return defs[0].value if len(defs) == 1 else e


def _clamped_pairwise(k: KernelFacts) -> list[int] | None:
    fl = flow_of(k)
    if not fl.ok:
        return None
    lines = []
    for c in fl.calls:
        if _SAFE_EXP.fullmatch(c.name.rsplit(".", 1)[-1]) and args_of(c.node):
            if _pairwise_decay(fl, k, _exponent_name(fl, args_of(c.node)[0])):
                lines.append(c.line)
            continue
        top = _exponent(fl, c.node)
        if top is not None and _clamped_exponent(fl, k, top):
            lines.append(c.line)
    return lines


UNCLAMPED_PAIRWISE_DECAY = custom(
    "unclamped-pairwise-decay-exp", "an exponential of a pairwise decay `g[:, None] - g[None, :]` (one tensor's "
    "loaded values) with no clamp on the exponent and no `tl.where` testing both the triangle and the range "
    "selecting it: `inf` on padded lanes, `0 * inf` NaN in the `tl.dot` it feeds", _unclamped_pairwise)
CLAMPED_PAIRWISE_DECAY = custom(
    "clamped-pairwise-decay-exp", "a pairwise decay exponent clamped to <= 0 (`tl.minimum(.., 0.0)`, "
    "`tl.where(x <= 0, x, -inf)`, `safe_exp`)", _clamped_pairwise)

SKELETON = Skeleton(
    id="clamped-decay-exponent",
    title="Clamp the pairwise decay exponent: exp(min(g_i - g_j, 0))",
    summary="Bound exp(g[:, None] - g[None, :]) with tl.minimum(.., 0): padded lanes give 1, not inf and 0*inf NaN.",
    category=Category.ARITHMETIC,
    doc=__doc__,
    present=CLAMPED_PAIRWISE_DECAY & ~UNCLAMPED_PAIRWISE_DECAY,
    preconditions=[UNCLAMPED_PAIRWISE_DECAY],
    subject=UNCLAMPED_PAIRWISE_DECAY,
    pays_in="correctness",
    env=Env(),
    helps=(),
)
