"""Prefix sum over a chunk as `tl.dot(tril_ones, x)` when it feeds a matmul.

## What it does
The inverse of `native-cumsum`. A chunk-local prefix sum along the time axis of a
`[BT, D]` tile whose result goes straight into a `tl.dot` (`b_s = tl.cumsum(b_x, axis=0)`
then `tl.dot(b_s.to(dt), b_w)`) is computed on the tensor cores instead: a constant
lower-triangular ones matrix `m = tl.where(o[:, None] >= o[None, :], 1., 0.)` (upper for
a reverse/suffix sum) multiplies the 16-bit tile, `tl.dot(m.to(b_x.dtype), b_x)`, with
an fp32 accumulator.

## Why it is faster
A scan along axis 0 of a 2-D tile crosses threads and warps: log2(BT) rounds of shuffles
and shared-memory exchanges with barriers, on CUDA cores, in a kernel whose other work
already runs on tensor cores. The triangular product is one more MMA of the size the
kernel already issues (BT x BT x D), pipelines with the others, and needs no layout
conversion between the scan's layout and the dot's operand layout. For 16-bit inputs it
loses nothing: the ones are exact, every product is exact, and the sums accumulate in
fp32 — the same precision as an fp32 `tl.cumsum` of the upcast values, in another order.
On Triton before 3.0, which lacks reverse scans, this is also the only way to write a
suffix sum without a subtract-from-total trick.

## Applies when
- a `tl.cumsum`/`tl.associative_scan` along axis 0 (the chunk's time axis) produces a
  value that reaches a `tl.dot` operand (the scan is fused with matmuls);
- the value does not go through `exp`/`log` first (a log-space gate cumsum needs exact
  fp32 sums: see below).

## Does not apply when
- the scanned data is fp32 and exactness matters (log-decay gate cumsums, their
  gradients, anything exponentiated afterwards): the dot would run in TF32 (10-bit
  mantissa) or as a slow `input_precision="ieee"` dot — keep `tl.cumsum` (the
  `native-cumsum` direction; the two are exclusive: a kernel with the triangular product
  never gets this one, a kernel with `tl.cumsum` never gets that one);
- the scan is not fused with matmuls (a standalone cumsum kernel): the native scan is
  O(BT x D) and exact, the matmul O(BT^2 x D);
- large chunks (BT > 128): the `[BT, BT]` mask tile costs registers and the quadratic
  work grows.

## References
- flash-linear-attention `fla/ops/utils/logcumsumexp.py` (`logcumsumexp_fwd_kernel`: the triangular-ones — at `49b00f0a94`, before 2025-07-01
  matmul form, v0.2.2)
- flash-linear-attention `fla/ops/rwkv6/chunk.py` (`chunk_rwkv6_fwd_cumsum_kernel`: inclusive and exclusive — at `49b00f0a94`, before 2025-07-01
  prefix sums as `tl.dot(m_i, b_s)` / `tl.dot(m_e, b_s)`, v0.2.2)
- flash-linear-attention `fla/ops/utils/cumsum.py` (v0.2.2: `chunk_local_cumsum_scalar_kernel` uses the
  native `tl.cumsum`, `chunk_local_cumsum_vector_kernel` still `tl.dot(m_s, b_s, allow_tf32=False)`)
- triton-lang/triton#3177 (reverse scans in Triton 3.0)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.kernels.flow import args_of, flow_of
from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.patterns import calls_where
from skel.skeletons.predicates.masks import triangular_ones
from skel.skeletons.predicates.names import IDENT

if TYPE_CHECKING:
    from skel.kernels.model import Call, KernelFacts

_LOG_SPACE = ("tl.exp", "tl.exp2", "tl.log", "tl.log2", "tl.math.exp", "tl.math.exp2")


def _mask_matmuls(k: KernelFacts) -> list[int]:
    """`tl.dot`s with a triangular ones matrix as an operand (read through the data flow)."""
    fl = flow_of(k)
    return [c.line for c in fl.named("tl.dot") if any(triangular_ones(fl, a) for a in args_of(c.node)[:2])]


def _axis0(call: Call) -> bool:
    axis = call.kwargs.get("axis", call.args[1] if len(call.args) > 1 else "0")
    return axis.strip() in ("0", "-2")


def _scan_feeds_dot(c: Call, k: KernelFacts) -> bool:
    """A scan along axis 0 whose result reaches a `tl.dot` operand within three
    assignments, never passing through exp/log."""
    if not _axis0(c) or not c.target:
        return False
    dot_operands = [(d.line, " ".join(d.args[:2])) for d in k.calls_named("tl.dot")]
    reach, frontier = {c.target}, {c.target}
    for _ in range(3):
        nxt: set[str] = set()
        for a in k.assigns:
            if a.line <= c.line or not set(a.names) & frontier:
                continue
            if set(a.calls) & set(_LOG_SPACE):
                continue  # log-space: exactness matters
            nxt |= set(a.targets)
        frontier = nxt - reach
        reach |= nxt
    return any(set(IDENT.findall(text)) & reach for line, text in dot_operands if line > c.line) \
        or any(re.search(r"tl\.(cumsum|associative_scan)\(", text) for _, text in dot_operands)


TRIANGULAR_MASK_MATMUL = custom(
    "triangular-mask-matmul",
    "a `tl.dot` with a constant triangular ones matrix `tl.where(o[:, None] >= o[None, :], 1., 0.)`",
    _mask_matmuls)
SCAN_FEEDS_DOT = calls_where(
    "tl.cumsum", "tl.associative_scan", where=_scan_feeds_dot, name="scan-feeds-dot",
    describe="a `tl.cumsum`/`tl.associative_scan` along axis 0 whose result feeds a `tl.dot` (not through exp/log)")

SKELETON = Skeleton(
    id="tensor-core-scan",
    title="Prefix sum on tensor cores (triangular-ones matmul)",
    summary="Chunk prefix sum as tl.dot(tril_ones, x) when it feeds a matmul: an MMA instead of a cross-warp scan.",
    category=Category.ARITHMETIC,
    doc=__doc__,
    present=TRIANGULAR_MASK_MATMUL,
    preconditions=[SCAN_FEEDS_DOT],
    subject=SCAN_FEEDS_DOT,
    env=Env(),
    helps=("compute",),
)
