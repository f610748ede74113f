"""Inverse-CDF sampling must fall back to the last token with p > 0 when the scan ends below the draw.

## What it does
A sampler that walks a row's probabilities with a running sum (`tl.cumsum`) and picks the
first position where the sum passes a uniform draw `u` also says what it returns when no
position does: not a constant (`pick = V - 1`, `-1`, the `V` of a `tl.min(tl.where(hit,
cols, V))`, the 0 of an `tl.argmax` over an all-false mask), but the last position whose
probability is non-zero, kept during the scan: `last = tl.maximum(last, tl.max(tl.where(p > 0,
cols, -1), 0))`, then `pick = tl.where(pick == V, last, pick)`.

## Why it is faster
It is not: this is a correctness fix for one `tl.max` a block. The probabilities of a row are
renormalised after top-k / top-p / min-p filtering, and their fp32 running sum can end a few
ulps below 1; `u` from `torch.rand` / `tl.rand` reaches 1 - 2**-24. When the whole
row's running sum stays below `u` the scan finds nothing, and the constant default is a
token the filter removed (probability 0), an index past the vocabulary, or token 0: flashinfer
called it "an impossible value" and made its samplers return the last valid index; lmdeploy's
TurboMind sampler returned index -1 ("prevent potential index error"). It happens once in
millions of draws, so no test shows it and a long generation eventually does.

## Applies when
- a kernel compares a uniform draw (`tl.rand`, or a per-row value loaded from a pointer named
  like one: `u`, `uniform`, `rand`, `samples`, `coins`) with a running sum of probabilities
  (`tl.cumsum` / `tl.associative_scan`), to pick the position where the sum passes the draw;
- nothing handles the draw that no position passes: no last-non-zero index (`tl.where(p > 0,
  cols, -1)` reduced by `tl.max`), no default read from the row's own candidates kept while
  nothing is found (`out = tl.where(found, idx, out)` after `out = tl.load(indices + ...)`),
  and the draw is not scaled by the row's computed total (`u * tl.sum(p)`).

## Does not apply when
- a top-p filter compares the running sum with the `top_p` threshold (a parameter, not a
  random draw) to mask probabilities: it picks no position;
- the sampler is an argmax of perturbed logits (Gumbel / exponential race): it has no running
  sum and always returns a real token;
- the default is a real candidate already (lmdeploy's Triton sampler starts from the row's
  first sorted index, the most probable token, and keeps it while nothing is found);
- the draw is scaled by the same row's computed total (`target = u * total`): the deficit
  is absorbed but for the rounding between the two sums.

## References
Promoted from the candidate cluster "+ fp32 values" (flashinfer's sampling commit), in place of
cluster "- call tl.math.round; + call tl.extra.cuda.libdevice.round", whose two commits only
follow Triton 3.0's move of `round` to libdevice (flash-linear-attention caa61b3931, lmdeploy
7dc0a5c777): an API change, no technique.
- flashinfer `include/flashinfer/sampling.cuh` (`TopKSamplingFromProbKernel`: `temp_storage.sampled_id = d` as "not found", a `last_valid_id` reduced over the positions with `prob > 0`, returned when `sampled_id == d`; the same in every inverse-CDF sampler of the file) — at `fb578e7eaa`, 2025-03-09, "feat: improve sampling algorithm robustness (#923)" ("address the abnormal case of sum(probs) < u, where our earlier implementation might return an impossible value")
- lmdeploy `src/turbomind/kernels/reduce_kernel_utils.cuh` (the argmax pair starts at index 0 and `-inf` instead of index -1 and `-max`, so a row of `-inf` / overflowed logits still yields a token) — at `3afd6c0c34`, 2025-05-01, "fix sampling if data overflow after temperature penalty (#3508)"
On the kernels of the catalog's fixtures and the mined history the rule matches inverse-CDF samplers only
(the race skeleton's two, lmdeploy's Triton sampler as already falling back); flash-linear-attention 0.6 and
Liger-Kernel 0.8.5 have no sampler and no match.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, cast

from skel.kernels.flow import (args_of, call_name, calls_in, comparison, constant, flow_of, has_call, is_call,
                               name_of, names_in, walk)
from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.predicates.addresses import is_vector_expr
from skel.skeletons.predicates.pointers import pointer_bases

if TYPE_CHECKING:
    import libcst as cst

    from skel.kernels.flow import Flow, Node
    from skel.kernels.model import KernelFacts

#: running sums of a row
_SCANS = ("tl.cumsum", "tl.associative_scan", "cumsum")
#: random draws made in the kernel
_DRAWS = ("tl.rand", "tl.randn", "tl.randint", "tl.randint4x", "tl.random.rand", "tl.random.randint")
#: pointers a per-row uniform draw is loaded from
_DRAW_POINTER = re.compile(r"(?i)(?:u|us|uniforms?|uniform_\w+|rand\w*|\w*_rand|coins?|samples?|draws?)(?:_ptr)?")
_ORDER = (">", ">=", "<", "<=")


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


def _is_draw(fl: Flow, k: KernelFacts, e: Node) -> bool:
    """``e``'s value is a random draw: made in the kernel, or loaded from a draw-named pointer."""
    exprs = _value_exprs(fl, e)
    if has_call(exprs, *_DRAWS):
        return True
    lines = {id(c.node): c.line for c in fl.loads()}
    return any(_DRAW_POINTER.fullmatch(b) for x in exprs for c in calls_in(x)
               if call_name(c) == "tl.load" and args_of(c)
               for b in pointer_bases(fl.text(args_of(c)[0]), k, lines.get(id(c))))


def _draw_comparisons(fl: Flow, k: KernelFacts) -> list[tuple[int, Node]]:
    """(line, draw side) of comparisons of a random draw with a running sum."""
    out = []
    seen: set[int] = set()
    for defs in fl.defs.values():
        for d in defs:
            if id(d.value) in seen:
                continue
            seen.add(id(d.value))
            for x in _value_exprs(fl, d.value, hops=0):
                for n in _walk_comparisons(x):
                    cmp = comparison(n)
                    if cmp is None or cmp[1] not in _ORDER:
                        continue
                    for draw, other in ((cmp[0], cmp[2]), (cmp[2], cmp[0])):
                        if has_call(_value_exprs(fl, other), *_SCANS) and _is_draw(fl, k, draw):
                            out.append((d.line, draw))
    return out


def _walk_comparisons(e: Node) -> list[Node]:
    return [n for n in walk(e) if comparison(n) is not None]


def _inverse_cdf(k: KernelFacts) -> list[int] | None:
    fl = flow_of(k)
    if not fl.ok or not any(c.name in _SCANS for c in fl.calls):
        return None
    return [line for line, _ in _draw_comparisons(fl, k)]


def _last_positive_index(fl: Flow) -> list[int]:
    """`tl.where(p > 0, cols, ..)` (or `p != 0`): the positions with a non-zero probability."""
    lines = []
    for w in fl.named("tl.where"):
        args = args_of(w.node)
        if len(args) != 3:
            continue
        cmp = comparison(args[0])
        if cmp is not None and cmp[1] in (">", "!=") and constant(cmp[2]) == 0 and is_vector_expr(fl, args[1]):
            lines.append(w.line)
    return lines


def _kept_loaded_default(fl: Flow) -> list[int]:
    """`out = tl.load(indices + ...)` then `out = tl.where(found, idx, out)`: a real candidate
    is the default, kept while nothing is found."""
    lines = []
    for n, defs in fl.defs.items():
        if not any(is_call(d.value, "tl.load") for d in defs):
            continue
        for d in defs:
            args = args_of(cast("cst.Call", d.value)) if is_call(d.value, "tl.where") else []
            if len(args) == 3 and name_of(args[2]) == n:
                lines.append(d.line)
    return lines


def _fallback(k: KernelFacts) -> list[int] | None:
    fl = flow_of(k)
    if not fl.ok or not any(c.name in _SCANS for c in fl.calls):
        return None
    scaled = [line for line, draw in _draw_comparisons(fl, k) if has_call(_value_exprs(fl, draw), "tl.sum")]
    return _last_positive_index(fl) + _kept_loaded_default(fl) + scaled


INVERSE_CDF_DRAW = custom(
    "inverse-cdf-draw", "a uniform draw (`tl.rand`, a loaded `u`) compared with a running sum of probabilities "
    "(`tl.cumsum`): inverse-CDF sampling", _inverse_cdf)
VALID_FALLBACK = custom(
    "inverse-cdf-valid-fallback", "a fallback for a draw no position passes: the last index with `p > 0`, a "
    "loaded candidate kept while nothing is found, or the draw scaled by the row's total", _fallback)

SKELETON = Skeleton(
    id="inverse-cdf-sample-fallback",
    title="Inverse-CDF sampling falls back to the last token with p > 0",
    summary="When no running sum passes the draw (fp32 total < u), return the last index with p > 0, not V - 1 or -1.",
    category=Category.ARITHMETIC,
    doc=__doc__,
    present=VALID_FALLBACK & INVERSE_CDF_DRAW,
    preconditions=[INVERSE_CDF_DRAW],
    subject=INVERSE_CDF_DRAW,
    pays_in="correctness",
    env=Env(),
    helps=(),
)
