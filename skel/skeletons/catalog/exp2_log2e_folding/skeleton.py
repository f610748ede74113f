"""Use exp2 with log2(e) folded into an existing scale instead of exp.

## What it does
Rewrites `tl.exp(x)` as `tl.exp2(x * LOG2E)` with `LOG2E = 1.4426950408889634`, and folds
the constant into a multiply the kernel already does: `s = qk * (sm_scale * LOG2E)` then
`p = tl.exp2(s - m)`, keeping the running max `m` in the log2 domain too. A stored
log-sum-exp is converted back once (`m * LN2` / `tl.log2` → natural log) at the end.

## Why it is faster
GPUs implement only a base-2 exponential in hardware (`ex2.approx`, one MUFU op).
`tl.exp(x)` compiles to a multiply by log2(e) plus `ex2`; in a softmax tile that is one
extra FMUL per element. Folding log2(e) into the scale that is applied anyway removes it,
and frees an FMA slot in the exp-bound inner loop of attention and softmax kernels. It
shows where the exp is on the critical path (short rows, attention inner loops); a
memory-bound kernel hides the saved multiply under its loads.

## Applies when
- the kernel calls `tl.exp` (or a natural-exp helper such as `exp` / `safe_exp`) and either
  subtracts a maximum in its argument (`tl.exp(x - m)` with `m` from `tl.max` or a running
  `tl.maximum`) — softmax, log-sum-exp, online-softmax attention — or
  applies the exp to a whole 2-D tile (a broadcast `g[:, None] - g[None, :]`, a 2-D tile
  load, a `tl.dot` result) in a kernel that also runs `tl.dot` — gated decays in chunked
  linear attention, probabilities recomputed from a stored lse in attention backward;
- there is a multiply on the exp argument path (a softmax scale, a temperature) into
  which log2(e) can be folded for free.

## Does not apply when
- the exp is elementwise with no reduction and no `tl.dot` (an activation such as SiLU, a
  KL-divergence gradient over 2-D tiles): memory-bound, the saved multiply is invisible; so
  is an exp of a gate or a decay on per-program scalars beside an unrelated `tl.sum` (a
  recurrent state update), or a SiLU before a quantisation amax;
- the kernel is memory-bound (long rows, one pass): the saved multiply is hidden by
  loads;
- the kernel loops, but every natural exp sits outside its loops (the softmax of an
  accumulator finished by a `tl.dot` loop, an lse written once at the end): it runs once
  per program, not per iteration, and the saved multiply does not show;
- bit-exact agreement with a `torch.exp` reference is required: `exp2(x * log2e)` rounds
  differently in the last bits. Apply log2(e) after a `tl.dot`, not to its operands, so
  the dot's inputs keep their precision, as flash-linear-attention does in
  `fla/ops/attn/parallel.py` (`parallel_attn_fwd_kernel`: `tl.dot(b_q, b_k) * scale * RCP_LN2`);
- the stored statistics (lse, running max) are consumed by other kernels in natural-log
  units: convert them back or change every consumer.

## References
- Triton tutorials `python/tutorials/06-fused-attention.py` (`_attn_fwd`: `qk_scale = sm_scale * 1.44269504`)
- Liger-Kernel `src/liger_kernel/ops/cross_entropy.py` (`liger_cross_entropy_kernel`) — at `5e3bf99abb`, before 2025-07-01
- flash-linear-attention `fla/ops/attn/parallel.py` (`parallel_attn_fwd_kernel`) — at `49b00f0a94`, before 2025-07-01
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.kernels.flow import args_of, broadcast_axes, flow_of, has_call
from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import IDENT, assign_targets, calls, constant, custom, uses_name
from skel.skeletons.patterns import absent, any_of, calls_where, implies, loops_where, names_where, params_where
from skel.skeletons.predicates.addresses import tile_load_2d
from skel.skeletons.predicates.scales import scaled

if TYPE_CHECKING:
    from skel.kernels.model import Call, KernelFacts

NATURAL_EXP = ("tl.exp", "tl.math.exp", "exp", "tl.extra.cuda.libdevice.exp", "tl.extra.libdevice.exp",
               "tl.extra.libdevice.fast_expf", "tl.extra.cuda.libdevice.fast_expf")
EXP2 = ("tl.exp2", "tl.math.exp2", "exp2", "tl.extra.cuda.libdevice.exp2", "tl.extra.libdevice.exp2")

#: An exp2 whose argument is rounded or an integer exponent is a power of two, not an
#: exponential: FP8/MX quantisation scales `tl.exp2(tl.ceil(tl.log2(amax / FP8_MAX)))`, an
#: e8m0 scale decoded as `tl.exp2(e.to(tl.float32) - 127)`. Only an exp2 on an
#: exponential path (softmax, gating, decay) is this technique.
_ROUNDED = re.compile(r"(?:\b|\.)(?:ceil|floor|round|rint|trunc|nearbyint)\s*\(|\.to\(\s*(?:tl\.)?u?int\d*"
                      r"|\b127\b|\bfloor_div\b")


def _argument_closure(c: Call, k: KernelFacts, hops: int = 3) -> str:
    """The source text of a call's first argument and of the assignments its names come
    from (a few hops back), as one string."""
    text = c.args[0] if c.args else ""
    texts = [text]
    seen: set[str] = set()
    names = set(IDENT.findall(text))
    for _ in range(hops):
        names -= seen
        seen |= names
        values = [a.value for a in k.assigns if a.line <= c.line and set(assign_targets(a)) & names]
        texts += values
        names = {n for v in values for n in IDENT.findall(v)}
    return " ".join(texts)


def _exponential_exp2(c: Call, k: KernelFacts) -> bool:
    return not _ROUNDED.search(_argument_closure(c, k))


EXP2_USED = calls(*EXP2, where=_exponential_exp2, name="exp2",
                  describe="`tl.exp2` / `exp2(...)` on an exponential (not a rounded power-of-two scale)") | constant(
    r"1\.44269", name="log2e-constant", describe="the constant log2(e) = 1.44269...") | uses_name(
    r"(?i)log2_?e|rcp_ln2|inv_ln2|ln2_inv", name="log2e-name", describe="a LOG2E / RCP_LN2 name")
# Natural-exp helpers are often wrapped for NaN safety or speed (`safe_exp`, `fast_exp`):
# a bare helper named `<prefix>_exp` is a natural exponential as much as `exp` is.
NATURAL_EXP_HELPER = re.compile(r"(?:[A-Za-z]\w*_)?expf?")


def _is_natural_exp(name: str) -> bool:
    return name in NATURAL_EXP or bool(NATURAL_EXP_HELPER.fullmatch(name))


NATURAL_EXP_CALL = calls(*NATURAL_EXP, name="natural-exp", describe="`tl.exp` (natural exponential)") | calls_where(
    like=NATURAL_EXP_HELPER, name="natural-exp-helper", describe="a natural-exp helper (`safe_exp(...)`, `fast_exp(...)`)")


def _exp_on_2d_tile(k: KernelFacts) -> list[int] | None:
    """Lines of natural exps whose argument is a 2-D tile: built by broadcasting
    (`g[:, None] - g[None, :]`), from a 2-D tile load or from a `tl.dot` result. Each
    element costs an FMUL + MUFU, so an exp over a whole tile is compute that shows even
    without a softmax reduction (gated decays in linear attention, recomputed
    probabilities in attention backward)."""
    fl = flow_of(k)
    if not fl.ok or not fl.named("tl.dot"):
        return None  # elementwise 2-D kernels (KL-div, activations) are memory-bound
    tiles = {t for c in fl.loads() if tile_load_2d(fl, c) for t in c.targets}
    lines = []
    for c in fl.calls:
        if not _is_natural_exp(c.name) or not args_of(c.node):
            continue
        names, exprs = fl.closure(args_of(c.node)[0])
        if broadcast_axes(exprs) or names & tiles or has_call(exprs, "tl.dot"):
            lines.append(c.line)
    return lines


EXP_ON_TILE = custom("exp-on-2d-tile", "a natural exp over a 2-D tile (broadcast, 2-D tile load or `tl.dot` "
                     "result) in a kernel that also does `tl.dot` work", _exp_on_2d_tile)


def _scaled_exp(k: KernelFacts) -> list[int] | None:
    """Lines of natural exps whose argument is scaled on its way (``scaled``)."""
    fl = flow_of(k)
    if not fl.ok:
        return None
    return [c.line for c in fl.calls if _is_natural_exp(c.name) and args_of(c.node)
            and scaled(fl, args_of(c.node)[0])]


#: The documented condition "a multiply on the exp argument path to fold log2(e) into":
#: `tl.exp(x - m)` on loaded logits costs what `exp2` does (Triton lowers `tl.exp` to
#: `ex2` of `x * log2e` itself); the saving is folding log2(e) into a scale applied anyway.
SCALED_EXP = custom("scaled-exp-argument", "a multiply on the exp argument's path (a softmax scale, a "
                    "temperature) to fold log2(e) into", _scaled_exp)


def _softmax_exp(k: KernelFacts) -> list[int] | None:
    """Lines of natural exps whose argument subtracts a maximum (`tl.exp(x - m)` with `m` from
    `tl.max` or a running `tl.maximum`): a softmax, a log-sum-exp, online-softmax attention.
    An exp of a gate or a decay beside an unrelated `tl.sum` (a recurrent state update, a
    SiLU before a quantisation amax) is not one: its exps are few, or elementwise."""
    fl = flow_of(k)
    if not fl.ok:
        return None
    lines = []
    for c in fl.calls:
        if _is_natural_exp(c.name) and args_of(c.node):
            _, exprs = fl.closure(args_of(c.node)[0])
            if has_call(exprs, "tl.max") or has_call(exprs, "tl.maximum") or has_call(exprs, "tl.reduce"):
                lines.append(c.line)
    return lines


#: a softmax-shaped exp: its argument subtracts a max (the reduction that makes it a softmax)
SOFTMAX_EXP = custom("softmax-exp", "a softmax-shaped exp (`tl.exp(x - m)`, `m` from `tl.max` / a running "
                   "`tl.maximum`)", _softmax_exp)

_LOG2E = r"(?:1\.4426\d*|(?i:log2_?e|rcp_ln2|inv_ln2|ln2_inv))"
_TIMES_LOG2E = re.compile(r"\*\s*\(?\s*" + _LOG2E + r"\b|\b" + _LOG2E + r"\s*\*")
_SCALE = re.compile(r"(?i)\w*scale\w*|temperature|\w*softcap\w*|inv_temp\w*")


def _times_log2e(c: Call, k: KernelFacts) -> bool:
    """An `exp2` whose argument multiplies by log2(e) itself (`tl.exp2(qk * sm_scale * LOG2E)`)."""
    return bool(c.args) and bool(_TIMES_LOG2E.search(c.args[0]))


#: No `exp2` argument multiplies by log2(e) itself while the kernel has a scale to fold it
#: into: `tl.exp2(qk * sm_scale * LOG2E)` per element is the same FMUL that `tl.exp` costs,
#: the saving only comes with `qk_scale = sm_scale * LOG2E` applied once.
LOG2E_FOLDED = implies(
    any_of(names_where(_SCALE, name="scale-name", describe="a scale name (`sm_scale`, `temperature`, `softcap`)"),
           params_where(like=_SCALE, name="scale-param", describe="a scale parameter (`sm_scale`, `temperature`)"),
           name="scale-to-fold-into", describe="a scale (`sm_scale`, `temperature`, `softcap`) to fold log2(e) into"),
    absent(calls_where(*EXP2, where=_times_log2e, name="exp2-times-log2e",
                       describe="an `exp2` argument multiplying by LOG2E per element"),
           name="no-exp2-times-log2e", describe="no `exp2` argument multiplying by LOG2E per element"),
    name="log2e-folded-into-scale",
    describe="log2(e) folded into the scale applied anyway (an `exp2` argument still multiplies by "
    "LOG2E per element)")

#: Where the kernel loops, its exps pay only inside the loop: an exp after the loop (the
#: softmax of a finished accumulator, an lse written once) runs once per program, and the
#: saved multiply is noise next to the loop's loads and dots. A kernel with no loop is one
#: pass, and its exp is the body.
EXP_ON_HOT_PATH = implies(
    loops_where(name="kernel-loop", describe="a loop"),
    calls(*NATURAL_EXP, in_loop=True, name="natural-exp-in-loop", describe="`tl.exp` inside a loop")
    | calls_where(like=NATURAL_EXP_HELPER, in_loop=True, name="natural-exp-helper-in-loop",
                  describe="a natural-exp helper inside a loop"),
    name="exp-on-hot-path",
    describe="a natural exp on the hot path: inside the kernel's loop, or in a kernel with no loop (one pass)")

SKELETON = Skeleton(
    id="exp2-log2e-folding",
    title="exp2 with folded log2(e)",
    summary="Replace tl.exp(x) by tl.exp2(x * log2e), folding log2(e) into an existing scale (softmax, attention).",
    category=Category.ARITHMETIC,
    doc=__doc__,
    ruled_out_by=(r"\bexp2\b", r"\blog2_?e\b", r"log2\(e\)", r"\bRCP_LN2\b"),
    present=EXP2_USED,
    preconditions=[NATURAL_EXP_CALL, (SOFTMAX_EXP & SCALED_EXP) | EXP_ON_TILE, EXP_ON_HOT_PATH],
    subject=NATURAL_EXP_CALL,
    env=Env(),
    helps=("compute",),
    refine=[LOG2E_FOLDED],
)
