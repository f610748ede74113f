"""Sample a token in one pass: argmax of logit + Gumbel noise (an exponential race), no sort, no cumsum.

## What it does
A sampler that draws one token per row by inverse CDF, over probabilities the host sorted
first (`probs.sort(descending=True)` over the whole vocabulary, softmax, then a Triton kernel
that walks the sorted row with `tl.cumsum` until the running sum passes one uniform draw
`tl.rand(seed, row)`, and loads the token id from the sort's index tensor), becomes one
kernel over the unsorted logits:

    u = tl.rand(seed, row * V + cols)
    score = x * inv_temp - tl.log(-tl.log(u))       # Gumbel noise
    better = score > best; best = tl.where(better, score, best); best_i = tl.where(better, cols, best_i)
    ... token = the index of tl.max(best, 0)

Token `i` wins with probability `softmax(x / T)_i`: `argmax_i(p_i / q_i)` with independent
`q_i ~ Exp(1)` (`q_i = -log u_i`) is an exact multinomial draw, and its log is the Gumbel-max
form above, which needs neither the softmax's normaliser nor its maximum.

## Why it is faster
The inverse-CDF sampler needs the row in order: a sort of the vocabulary (152K columns for
Qwen, 128K for Llama 3) is several radix passes over the row that write a value and an index
tensor of the same size, then a softmax pass and the scan. lmdeploy measured the sort as the
cost ("sort logits is too slow") and cut it to `topk(max_top_k)` where top-k is set. The race
reads the logits once and writes one index a row: a memory-bound pass at the bandwidth of
the row, with a Philox draw, two logs and a compare per element in registers. It needs no
order, so it cannot apply top-p (which needs the cumulative mass in sorted order): a top-k
or min-p filter it can apply as a threshold on the logits, a top-p one keeps the sort (or a
rejection sampler, FlashInfer's). It does not pay when the scanned row is already a short
candidate list (the top-k few hundred of them): the race would read the whole vocabulary
again to save a scan of a few hundred sorted values.

## Applies when
- a kernel samples by inverse CDF: it draws a uniform number (`tl.rand`), takes a running
  sum of loaded probabilities (`tl.cumsum`), and compares the draw with the running sums to
  find the position where the sum passes it;
- the rows are sampled without top-p (temperature, top-k or min-p only; the common setting
  of RL rollouts and of `temperature`-only requests), one draw per row;
- pays when the scanned row is a vocabulary: at least 16,384 columns; it does not pay at
  1,024 or fewer (a top-k candidate list); between, and with the row's width unknown, it is
  conditional (`--shape cols=V`).

## Does not apply when
- many draws per distribution (`torch.multinomial(..., n, replacement=True)`): one CDF and
  a binary search per draw (FlagGems' `multinomial_with_replacement`, which reads a CDF built
  once and has no `tl.cumsum`) cost `log V` a draw, the race `V`;
- the kernel already samples by a perturbed argmax (`tl.rand` feeding the values `tl.max`
  or `tl.argmax` picks from);
- a random number used for something else beside a cumulative sum (dropout in a scan, a
  stochastic rounding): no comparison of the draw with the running sum;
- top-p is requested: the race has no cumulative mass in sorted order.

## References
Promoted from the candidate clusters "+ launch num_warps" and "- decorator
triton_utils.wrap_jit_func" (`skel skeletons candidates`), which hold lmdeploy's sampling
kernel; neither commit made the race: the first cut the sort to a top-k, the second only
dropped a decorator. The race itself is in FlagGems:
- FlagGems `src/flag_gems/ops/multinomial.py` (`multinomial`: one draw without replacement as
  `torch.argmax(prob / q)` with `q = torch.empty_like(prob).exponential_(1.0)`, "s = argmax( p / q ) where q ~ Exp(1)";
  `multinomial_with_replacement`, the binary search over a CDF, kept for many draws) — at `2f191fecbe`, 2024-09-02,
  "Multinomial (#141)"
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.kernels.flow import Flow, Node, comparison, flow_of, has_call, is_call, walk
from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN, Category, Env, Payoff, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.predicates.dots import no_dot

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts
    from skel.skeletons.base import Workload  # the floor re-exports the type (catalog modules import no kernels.workload)

#: a row this wide is a vocabulary: the sort before the scan is the sampler's cost
VOCAB = 16384
#: a row this short is a candidate list already (top-k): nothing left to save
CANDIDATES = 1024
#: the draws a sampler takes: Triton's Philox uniform (and a project's `uniform` helper over it)
_DRAWS = ("tl.rand", "uniform")
#: the transforms of a uniform draw into exponential or Gumbel noise
_LOGS = ("tl.log", "tl.log2", "tl.math.log", "tl.math.log2")
#: a scalar parameter holding the row's width (the vocabulary, or the scanned candidates)
_WIDTH = re.compile(r"(?i)^(v|vocab\w*|n_?vocab|num_tokens|n_?tokens|n_?cols|num_cols|cols|n|num_classes|"
                    r"n_?categories|k)$")


def _drawn(fl: Flow) -> tuple[set[str], list[int]]:
    """Names holding a uniform draw, and the draws' lines."""
    draws = [c for c in fl.calls if c.name in _DRAWS or c.name.endswith(".uniform")]
    return {t for c in draws for t in c.targets}, [c.line for c in draws]


def _draw_against_sum(fl: Flow, left: Node, right: Node, drawn: set[str], summed: set[str]) -> bool:
    """One side of a comparison reads the draw (and no running sum), the other the running
    sum: `samp <= cum_scores`, `cdf > u * total`. A running sum of values the draw already
    changed (dropout before a scan) compared with a constant is not a draw."""
    a, b = fl.closure(left)[0], fl.closure(right)[0]
    return any(x & drawn and not x & summed and y & summed for x, y in ((a, b), (b, a)))


def inverse_cdf_scans(k: KernelFacts) -> list[int] | None:
    """Lines of an inverse-CDF draw: a comparison that reads both a uniform draw and a
    running sum (`tl.cumsum`) of loaded values, with the draw and the sum."""
    fl = flow_of(k)
    if not fl.ok:
        return None
    drawn, draw_lines = _drawn(fl)
    sums = [c for c in fl.named("tl.cumsum") if c.targets and has_call(fl.closure(c.node)[1], "tl.load")]
    summed = {t for c in sums for t in c.targets}
    if not drawn or not summed:
        return None
    lines: list[int] = []
    for defs in fl.defs.values():
        for d in defs:
            for n in walk(d.value):
                cmp = comparison(n)
                if cmp is not None and _draw_against_sum(fl, cmp[0], cmp[2], drawn, summed):
                    lines.append(d.line)
    if not lines:
        return None
    return sorted(set(lines) | set(draw_lines) | {c.line for c in sums})


def perturbed_argmax(k: KernelFacts) -> list[int] | None:
    """Lines of a `tl.max`/`tl.argmax` over values perturbed by noise made from a random
    draw through a log (`-tl.log(u)`, exponential; `-tl.log(-tl.log(u))`, Gumbel): a race.
    An argmax of a mask that compares the draw with a running sum (`tl.argmax(hit, 1)`, the
    inverse CDF's search) is not one."""
    fl = flow_of(k)
    if not fl.ok:
        return None
    drawn, _ = _drawn(fl)
    if not drawn:
        return None
    lines = []
    for c in fl.named("tl.max", "tl.argmax"):
        for e in fl.closure(c.node)[1]:
            if any(is_call(n, *_LOGS) and fl.closure(n)[0] & drawn for n in walk(e)):
                lines.append(c.line)
                break
    return lines or None


#: the subject: a uniform draw compared with a running sum of probabilities (inverse CDF)
INVERSE_CDF_SCAN = custom(
    "inverse-cdf-scan",
    "an inverse-CDF draw: a uniform number (`tl.rand`) compared with a `tl.cumsum` of loaded probabilities",
    inverse_cdf_scans)
#: the technique: an argmax over randomly perturbed values
PERTURBED_ARGMAX = custom(
    "perturbed-argmax",
    "a `tl.max`/`tl.argmax` over values perturbed by noise made from a random draw through a log (an exponential "
    "or Gumbel race)",
    perturbed_argmax)


def row_is_a_vocabulary(k: KernelFacts, wl: Workload) -> Payoff:
    """The scanned row (``cols``, or a width parameter: `V`, `vocab_size`, `num_tokens`)
    is a vocabulary: ≥ 16,384 columns pays, ≤ 1,024 (a candidate list) does not."""
    cols = wl.size("cols")
    name = "cols"
    if cols is None:
        for p in k.params:
            if not p.constexpr and _WIDTH.match(p.name) and wl.size(p.name) is not None:
                cols, name = wl.size(p.name), p.name
                break
    if cols is None:
        return Payoff(UNKNOWN, f"pays if each row scans a vocabulary (≥ {VOCAB:,} columns) sampled without top-p",
                      "--shape cols=V")
    if cols >= VOCAB:
        return Payoff(PAYS, f"rows of {name}={cols:,} columns are a vocabulary: the race reads them once where the "
                      "sort makes several passes and writes an index tensor (rows sampled without top-p)")
    if cols <= CANDIDATES:
        return Payoff(DOES_NOT_PAY, f"rows of {name}={cols:,} columns are a candidate list (≤ {CANDIDATES:,}): a race "
                      "over the whole vocabulary would read more than the scan it saves")
    return Payoff(UNKNOWN, f"rows of {name}={cols:,} columns, between {CANDIDATES:,} and {VOCAB:,}: measure it with "
                  "`skel verify`")


SKELETON = Skeleton(
    id="exponential-race-sampling",
    title="Exponential-race (Gumbel-max) sampling instead of sort + cumsum",
    summary="Draw a token as argmax(logit/T - log(-log u)) in one pass over the row: no sort, no cumsum, no search.",
    category=Category.MEMORY,
    doc=__doc__,
    ruled_out_by=(r"\bgumbel\b", r"\bexponential\b", r"\bargmax\b.*\bnoise\b", r"\brace\b"),
    present=PERTURBED_ARGMAX,
    preconditions=[INVERSE_CDF_SCAN, no_dot("a sampler, not a matmul")],
    subject=INVERSE_CDF_SCAN,
    env=Env(),
    payoff=row_is_a_vocabulary,
    helps=("memory", "latency"),
)
