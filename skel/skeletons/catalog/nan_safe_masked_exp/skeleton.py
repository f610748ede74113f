"""Zero the masked lanes of an exp product with `tl.where`, never by multiplying with the mask.

## What it does
Replaces a mask applied by multiplication to a product that holds an exponential of a
difference, `m_s = (o_i >= j).to(tl.float32)`, `b_a = tl.sum(b_q * b_kj * tl.exp(b_g - b_gj), 1) * m_s`,
by a selection: `b_a = tl.where(o_i >= j, tl.sum(b_q * b_kj * tl.exp(b_g - b_gj), 1), 0.)`.
The exponential is still computed on every lane (same instructions); the masked lanes'
value is discarded instead of multiplied by zero.

## Why it is faster
It is not: this is a correctness fix at no cost (a select costs what the multiply did). In
IEEE arithmetic `0 * inf` and `0 * nan` are NaN, so a mask multiplication only zeroes lanes
whose value is finite. The lanes a mask removes are exactly where the exponential is not
bounded: in a chunked gated linear attention the cumulative log-decay `g` falls along the
chunk, so `g_i - g_j` is <= 0 on the causal half and as large as the whole chunk's decay on the
other half. With strong gates (a per-step log-decay of -2 over 64 tokens) that passes 88, the
exponent where fp32 `exp` overflows to `inf`; the masked product is then NaN, and one NaN in a
row of scores spreads through every `tl.dot` and `tl.sum` it feeds. The bug shows only with
strong decays or long chunks, never in tests with mild random gates. flash-linear-attention's
RWKV-7 kernels went from `tl.where` to mask multiplications for speed and back to `tl.where`
("to avoid `nan`") the same day.

## Applies when
- a multiplication has a boolean mask as a factor (a comparison, `&`/`|` of comparisons, or
  such a mask cast with `.to(...)` / broadcast with `[:, None]`, directly or through a name),
  and another factor of the same product holds a `tl.exp` / `tl.exp2` / `exp` of a difference
  (`b_g - b_gj`, `dA_m[:, None] - dA_k[None, :]`): a decay ratio whose masked half is not
  bounded;
- the exponent's argument is not clamped first (`tl.minimum(x, 0)`, `tl.where(x <= 0, x,
  -inf)`, a `safe_exp` helper): a clamped exponential is at most 1 and times zero is zero.

## Does not apply when
- the mask multiplies a softmax-shaped exponential, `tl.exp(x - tl.max(x, 0))` or one with a
  running `tl.maximum`: it is at most 1 on every lane that has a finite input;
- the masked product holds no exponential (`b_dA * scale * m_s` after a `tl.dot`): its lanes
  are finite when the inputs are;
- the mask is already applied with `tl.where` (`tl.where(m, x * tl.exp(a - b), 0.)`): the
  selected-away `inf` never reaches the result;
- the exponential's argument is not a difference (`tl.exp(-x)` in a sigmoid): it overflows to
  `inf` but `1 / (1 + inf)` is a clean zero.
A `tl.where` whose mask misses some lanes (a causal test without the `< T` range check on a
padded tail) leaves the same NaN; the rule cannot see that, `clamped-decay-exponent` covers
it by bounding the exponent itself.

## References
Promoted from the candidate clusters "+ call tl.where", "- call tl.where" and "+ call tl.full"
(`skel skeletons candidates`): the instances that change how masked exponentials are zeroed.
- flash-linear-attention `fla/ops/generalized_delta_rule/dplr/chunk_A_bwd.py` (`chunk_dplr_bwd_kernel_intra`: the products `m_i1 * b_dAqk_j * b_kj * tmp1`, `tmp1 = exp((b_gi - b_gij).to(tl.float32))`, turned back into `tl.where(m_i, b_dAqk_j * b_kj * tmp1, 0.)`) — at `6cc3736bd2`, 2025-04-11, "[RWKV] Revert to `tl.where` to avoid `nan`"
- flash-linear-attention `fla/ops/generalized_delta_rule/dplr/chunk_o_bwd.py` (`chunk_dplr_bwd_kernel_dv`: the change the revert undid, `tl.where(m_s, ...)` replaced by `* m_s` masks for speed) — at `a1b163cc03`, 2025-04-11, "[RWKV7] Drop some kernels to enhance speed (#346)"
- mamba `mamba_ssm/ops/triton/ssd_combined.py` (`_chunk_scan_chunk_state_bwd_dx_kernel`: the comment says why `tl.exp(dA_cs_k - dA_cs_m)` is `inf` on lanes past `K_MAX` and `inf * 0` makes `dx` NaN; the fix widens the `tl.where` mask to those lanes) — at `bb3a82a7c8`, 2024-06-11, "Fix mask in _chunk_scan_chunk_state_bwd_dx that could cause NaN"
- xformers `xformers/ops/fmha/triton_splitk.py` (`_splitK_reduce`: `tl.where(lse_max == float("-inf"), 0.0, acc)` selects the output of fully masked rows instead of computing `0 / 0` there) — at `3646422985`, 2024-05-28, "export from fbcode (fairinternal/xformers#1116)"
- flash-linear-attention `fla/ops/abc/chunk.py` (`chunk_abc_fwd_kernel_K`: the same `0 * inf`, from cluster "+ call tl.full", avoided another way: the first chunk skips `b_o * tl.exp(b_zp[None, :] - b_z)` under `if i_t > 0`, running maxima start at `tl.full(.., float('-inf'))`) — at `e0aecb613f`, 2024-02-15, "Avoid inf * 0"
The rule matches the forward twin of the first kernel in flash-linear-attention 0.6
(`chunk_dplr_fwd_A_kernel_intra_sub_intra`, `b_A_qk * m_i` with `m_i = (o_i >= j).to(tl.float32)`), and no
other of its 472 kernels nor any of Liger-Kernel 0.8.5's 187.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, cast

from skel.kernels.flow import (args_of, binary, call_name, calls_in, constant, flow_of, has_call, is_call,
                               is_comparison, name_of, names_in, operands, receiver, subscripted, walk)
from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.predicates.addresses import is_vector_expr
from skel.skeletons.predicates.pointers import pointer_bases

if TYPE_CHECKING:
    import libcst as cst

    from skel.kernels.flow import Flow, Node
    from skel.kernels.model import KernelFacts

#: exponentials that overflow to inf: natural and base-2, Triton's and libdevice's, and the
#: bare helpers kernels import (`from fla.ops.utils.op import exp`). `safe_exp` is not one:
#: it clamps its argument to <= 0 itself.
_EXP = frozenset({"tl.exp", "tl.math.exp", "exp", "tl.extra.cuda.libdevice.exp", "tl.extra.libdevice.exp",
                  "tl.exp2", "tl.math.exp2", "exp2", "tl.extra.cuda.libdevice.exp2", "tl.extra.libdevice.exp2",
                  "fast_exp", "fast_exp2"})
#: a softmax-shaped exponent: its argument subtracts a (running) maximum
_MAXES = ("tl.max", "tl.maximum", "tl.reduce", "max")
_ZERO = re.compile(r"0|0\.0*|-?0\.0*")


def _strip(e: Node) -> Node:
    """``e`` without casts and broadcasts: `(o_i >= j).to(tl.float32)[:, None]` -> the comparison."""
    while True:
        if is_call(e, ".to", ".cast") and receiver(cast("cst.Call", e)) is not None:
            e = cast("Node", receiver(cast("cst.Call", e)))  # is_call: a call, with a receiver
        elif is_call(e, "tl.cast") and args_of(cast("cst.Call", e)):
            e = args_of(cast("cst.Call", e))[0]
        elif type(e).__name__ == "Subscript":  # libcst's node class, not imported at run time
            e = subscripted(e)
        else:
            return e


def _is_mask(fl: Flow, e: Node, depth: int = 0) -> bool:
    """``e`` is a boolean mask: a comparison, `&`/`|` of masks, or a name every definition of
    which is one (through casts and broadcasts)."""
    e = _strip(e)
    if is_comparison(e):
        return True
    if binary(e, "&", "|"):
        a, b = operands(e)
        return _is_mask(fl, a, depth + 1) and _is_mask(fl, b, depth + 1)
    n = name_of(e)
    if n is None or depth >= 3:
        return False
    defs = fl.defs.get(n, [])
    return bool(defs) and all(not d.aug and _is_mask(fl, d.value, depth + 1) for d in defs)


def _zeroed(fl: Flow, e: Node, line: int) -> bool:
    """``e`` names a tile zeroed on masked lanes by its latest definition before ``line``,
    `gM = tl.where(m, gM, 0.0)`: multiplying it by an overflowed exponential is `0 * inf` there."""
    n = name_of(_strip(e))
    defs = [d for d in fl.defs.get(n, []) if d.line < line] if n is not None else []
    if not defs or not is_call(defs[-1].value, "tl.where"):
        return False
    args = args_of(defs[-1].value)  # type: ignore[arg-type]  # a tl.where call, checked above
    return len(args) == 3 and constant(args[2]) == 0 and _is_mask(fl, args[0])


def _value_names(e: Node) -> set[str]:
    """Names ``e``'s value is computed from: not the addresses and masks of its loads."""
    out = names_in(e)
    for c in calls_in(e):
        if call_name(c) == "tl.load":
            for a in c.args:
                out -= names_in(a.value)
    return out


def _value_exprs(fl: Flow, e: Node, stop_at_where: bool = False, hops: int = 8) -> list[Node]:
    """``e`` and the definitions its value flows from (a few hops back), never into the
    addresses of the loads on the way. ``stop_at_where``: a name zeroed by `tl.where(...)`
    (in any of its definitions) is a selection, its inputs' overflow discarded: not followed."""
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
            defs = fl.defs.get(n, [])
            if stop_at_where and any(is_call(d.value, "tl.where") for d in defs):
                continue  # `M = tl.exp(..)` then `M = tl.where(m, M, 0.)`: selected
            for d in defs:
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


def _unbounded_exp(fl: Flow, k: KernelFacts, call: cst.Call) -> bool:
    """An exponential of a decay ratio: its argument is a difference of two values loaded
    from the same tensor (`b_g - b_gj`, `dA_m[:, None] - dA_k[None, :]`), neither clamped
    (`tl.minimum(.., 0)`, `tl.where(x <= 0, x, -inf)`) nor softmax-shaped (a max subtracted).
    A difference of two tensors (`logp - old_logp`) is a ratio of unrelated values, not a
    decay whose masked half grows with the chunk."""
    if call_name(call) not in _EXP or not args_of(call):
        return False
    top: Node = _strip(args_of(call)[0])  # `exp((b_gi - b_gij).to(tl.float32))`
    n = name_of(top)
    if n is not None and len(fl.defs.get(n, [])) == 1:
        top = _strip(fl.defs[n][0].value)  # `tmp = b_gi - b_gij` then `exp(tmp)`
    if not binary(top, "-"):
        return False
    if has_call(fl.closure(top)[1], *_MAXES):
        return False
    a, b = operands(top)
    if not (is_vector_expr(fl, a) or is_vector_expr(fl, b)):
        return False  # per-program scalars (a log-ratio of two probabilities), not a tile of decays
    return bool(_loaded_from(fl, k, a) & _loaded_from(fl, k, b))


def _holds_unbounded_exp(fl: Flow, k: KernelFacts, e: Node, selected_stop: bool = True) -> bool:
    """``e`` reads, through its definitions, an unbounded exponential that no `tl.where`
    selects (`tl.where(m_t, exp(b_gn - b_g), 0)` on the way is already the fix)."""
    for x in _value_exprs(fl, e, stop_at_where=selected_stop):
        selected = {id(c) for w in calls_in(x) if call_name(w) == "tl.where"
                    for a in args_of(w)[1:] for c in calls_in(a)}
        if any(id(c) not in selected and _unbounded_exp(fl, k, c) for c in calls_in(x)):
            return True
    return False


def _factors(e: Node) -> list[Node]:
    if binary(e, "*"):
        a, b = operands(e)
        return _factors(a) + _factors(b)
    return [e]


def _mask_multiplied_exp(k: KernelFacts) -> list[int] | None:
    """Lines of products with a mask factor and another factor holding an unbounded
    exponential (``_unbounded_exp``)."""
    fl = flow_of(k)
    if not fl.ok or not any(c.name in _EXP for c in fl.calls):
        return None
    lines: list[int] = []
    seen: set[int] = set()
    for defs in fl.defs.values():
        for d in defs:
            if id(d.value) in seen:
                continue
            seen.add(id(d.value))
            if d.op == "*=" and _is_mask(fl, d.value):  # `b_a *= m_s`: the target's value is the other factor
                if _target_holds_exp(fl, k, d.name, d.line):
                    lines.append(d.line)
                continue
            for node in walk(d.value):
                if not binary(node, "*"):
                    continue
                parts = _factors(node)
                masks = [p for p in parts if _is_mask(fl, p) or _zeroed(fl, p, d.line)]
                if masks and any(_holds_unbounded_exp(fl, k, p) for p in parts if not any(p is m for m in masks)):
                    lines.append(d.line)
                    break
    return lines


def _target_holds_exp(fl: Flow, k: KernelFacts, name: str, line: int) -> bool:
    """A name multiplied in place by a mask holds an unbounded exponential from an earlier
    definition."""
    return any(d.line < line and _holds_unbounded_exp(fl, k, d.value) for d in fl.defs.get(name, []))


def _where_selected_exp(k: KernelFacts) -> list[int] | None:
    """Lines of `tl.where(mask, <...exp of a difference...>, 0)`: the masked lanes selected away."""
    fl = flow_of(k)
    if not fl.ok:
        return None
    lines = []
    for c in fl.named("tl.where"):
        args = args_of(c.node)
        if len(args) != 3 or not _is_mask(fl, args[0]):
            continue
        zero = constant(args[2])
        zeroes = zero == 0 or bool(_ZERO.fullmatch(fl.text(args[2])))
        if zeroes and _holds_unbounded_exp(fl, k, args[1], selected_stop=False):
            lines.append(c.line)
    return lines


MASK_MULTIPLIED_EXP = custom(
    "mask-multiplied-exp", "a mask applied by multiplication (`x * tl.exp(a - b) * m`, `m` a comparison) to a "
    "product holding an exponential of a difference: `0 * inf` is NaN on the masked lanes", _mask_multiplied_exp)
WHERE_SELECTED_EXP = custom(
    "where-selected-exp", "an exponential of a difference zeroed with `tl.where(mask, ..., 0)`", _where_selected_exp)

SKELETON = Skeleton(
    id="nan-safe-masked-exp",
    title="tl.where, not a mask multiplication, on exp products (no 0 * inf = NaN)",
    summary="Zero masked lanes of an exp(a - b) product with tl.where(m, x, 0), not x * m: 0 * inf is NaN.",
    category=Category.ARITHMETIC,
    doc=__doc__,
    present=WHERE_SELECTED_EXP & ~MASK_MULTIPLIED_EXP,
    preconditions=[MASK_MULTIPLIED_EXP],
    subject=MASK_MULTIPLIED_EXP,
    pays_in="correctness",
    env=Env(),
    helps=(),
)
