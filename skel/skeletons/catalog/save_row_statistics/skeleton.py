"""Save per-row statistics (rstd, mean, lse) in the forward; load them in the backward.

## What it does
A normalisation or softmax backward that recomputes the row statistic the forward already
had — `rstd = 1 / sqrt(sum(x * x) / N + eps)` for RMSNorm/L2-norm, `mean` and `rstd` for
LayerNorm, `lse = max + log(sum(exp(x - max)))` for softmax or cross-entropy — gets it
from memory instead: the forward stores one fp32 value per row (`tl.store(rstd_ptr + row,
rstd)`) and the backward loads it (`rstd = tl.load(rstd_ptr + row)`).

## Why it is faster
The statistic is a reduction over the whole row: recomputing it means the backward must
finish a full pass over `x` (a sum of squares, or a max and a sum of exponentials) before
it can compute any output element, and for rows streamed in column blocks it costs an
extra read of the row from HBM. Saving it costs 4 bytes per row in the forward (for a
4,096-wide bf16 row that is 0.05 % of the row's traffic) and turns the backward's
reduction into one scalar load. For short rows kept in registers the saving is the
reduction's arithmetic and latency, a smaller but real share of a memory-bound kernel.

## Applies when
- a backward kernel (it loads an upstream gradient: `dy`, `do`, `grad_output`) computes
  a row statistic from the loaded input: a `tl.rsqrt` /
  `tl.sqrt` of a `tl.sum` (rstd of a norm), or a `tl.log` of a `tl.sum` of exponentials
  (a log-sum-exp);
- the forward kernel of the same op is yours to change (it must store the statistic,
  one fp32 per row), and the autograd function can save it (`ctx.save_for_backward`).

## Does not apply when
- the forward does not run before the backward in the same graph (a backward-only
  kernel fed by a framework op, activation recomputation that drops the forward's
  outputs): there is nothing saved to load;
- the statistic is cheap relative to a memory budget that is tight: the saved tensor is
  `[n_rows]` fp32 per layer, kept alive until the backward (for attention's `lse` it is
  `[B, H, T]`);
- the row statistic of the backward differs from the forward's (a norm applied to a
  value recomputed differently, or with another eps): loading it would be wrong;
- the recomputation is of something large (the dropout mask, the attention matrix):
  the other direction — recompute from a seed or from `lse` — is the right trade there.

## References
- Liger-Kernel `src/liger_kernel/ops/rms_norm.py` (`_rms_norm_forward_kernel` stores `RSTD`, — at `5e3bf99abb`, before 2025-07-01
  `_rms_norm_backward_kernel` loads it, v0.5.10)
- Triton tutorial `05-layer-norm.py` (`_layer_norm_fwd_fused` stores `Mean` and `Rstd`; `_layer_norm_bwd_dx_fused`
  loads them)
- flash-linear-attention `fla/modules/l2norm.py` (`l2norm_bwd_kernel`: `b_var = tl.sum(b_x * b_x, ...)` recomputed — at `49b00f0a94`, before 2025-07-01
  in the backward, v0.2.2)
- Triton tutorial `06-fused-attention.py` (`_attn_fwd` stores `M`, the log-sum-exp per query row; the backward
  (`_attn_bwd`, `_attn_bwd_dkdv`, `_attn_bwd_dq`) reads it to rebuild P without a softmax pass)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.kernels.flow import Flow, args_of, flow_of, has_call
from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.patterns import calls_where
from skel.skeletons.predicates.pointers import pointer_arg, pointer_bases

if TYPE_CHECKING:
    from skel.kernels.model import Call, KernelFacts

#: Arguments holding a saved per-row statistic.
_STAT = re.compile(r"(?i)_?(rstd|mean|lse|rrms|inv_?rms|inv_?std|rsigma|variance|logsumexp)"
                   r"(_?ptr)?|\w*_(rstd|lse|mean)\w*|(rstd|lse|mean|inv_?rms)_\w*")
#: Upstream-gradient arguments a backward reads: `dy`, `dY`, `do`, `dout`, `grad_output` ...
_UPSTREAM_GRAD = re.compile(r"(?i)d_?(y|o|out|output)(_?ptr)?|grad_?(y|out|output)\w*|(y|out|output)_grad\w*")
_ROOTS = ("tl.rsqrt", "tl.sqrt", "tl.sqrt_rn", "sqrt", "rsqrt", "tl.math.rsqrt", "tl.math.sqrt")


def _through_statistic(c: Call, k: KernelFacts) -> bool:
    """A load or store through a statistics argument (`rstd`, `mean`, `lse`)."""
    return any(_STAT.fullmatch(b) for b in pointer_bases(pointer_arg(c), k, c.line))


def _reads_upstream_grad(c: Call, k: KernelFacts) -> bool:
    """A load of an upstream gradient: a backward pass that runs after a forward. A kernel
    computing a loss and its gradient in one pass (fused cross-entropy) reads none, and has
    no forward to save anything in."""
    return any(_UPSTREAM_GRAD.fullmatch(b) for b in pointer_bases(pointer_arg(c), k, c.line))


def _reduces(fl: Flow, node) -> bool:
    """A `tl.sum` of loaded data, not of a matmul result: a statistic of the input rows
    (an intermediate built by `tl.dot` is recomputed anyway)."""
    exprs = fl.closure(node)[1]
    return has_call(exprs, "tl.sum") and has_call(exprs, "tl.load") and not has_call(exprs, "tl.dot")


def _recomputed_statistics(k: KernelFacts) -> list[int] | None:
    """Lines computing a row statistic from the data: a root of a `tl.sum` (rstd), or a
    `tl.log` of a `tl.sum` of exponentials (a log-sum-exp). The flow's calls of any root or
    log (`libdevice.rsqrt` too), read through their first argument's definitions."""
    fl = flow_of(k)
    if not fl.ok:
        return None
    lines = []
    for c in fl.calls:
        short = c.name.split(".")[-1]
        args = args_of(c.node)
        if not args:
            continue
        if (c.name in _ROOTS or short in ("rsqrt", "sqrt")) and _reduces(fl, args[0]):
            lines.append(c.line)
        elif short == "log" and _reduces(fl, args[0]) and has_call(fl.closure(args[0])[1], "tl.exp", "tl.exp2",
                                                                    "exp", "exp2"):
            lines.append(c.line)
    return lines


SAVED_STATISTICS = calls_where(
    "tl.load", "tl.store", where=_through_statistic, name="saved-row-statistics",
    describe="a per-row statistic (`rstd`, `mean`, `lse`) stored or loaded through its own argument")
BACKWARD_KERNEL = calls_where("tl.load", where=_reads_upstream_grad, name="backward-kernel",
                              describe="a backward kernel (it loads an upstream gradient: `dy`, `do`, `grad_output`)")
RECOMPUTED_STATISTIC = custom(
    "recomputed-row-statistic",
    "a row statistic recomputed from the input (a root of a `tl.sum`: rstd; a log of a sum of exps: lse)",
    _recomputed_statistics)

SKELETON = Skeleton(
    id="save-row-statistics",
    title="Save per-row statistics in the forward, load them in the backward",
    summary="Store cheap per-row statistics (rstd, mean, lse) in forward and load them in backward instead of recomputing.",
    category=Category.FUSION,
    doc=__doc__,
    present=SAVED_STATISTICS,
    preconditions=[BACKWARD_KERNEL, RECOMPUTED_STATISTIC],
    subject=BACKWARD_KERNEL,
    env=Env(),
    helps=("memory", "latency"),
)
