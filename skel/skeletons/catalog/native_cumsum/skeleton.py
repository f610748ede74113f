"""Prefix sums with `tl.cumsum` instead of a triangular-mask matmul.

## What it does
Replaces a prefix sum computed on tensor cores — build a lower-triangular ones matrix
`m = tl.where(o[:, None] >= o[None, :], 1., 0.)` and multiply `tl.dot(m, x)` — with the
native scan `tl.cumsum(x, axis=0)` (`reverse=True` for the upper-triangular, suffix-sum
form; `tl.associative_scan` for other combine functions).

## Why it is faster
The matmul spends `BT x BT x BD` multiply-adds to do `BT x BD` additions, and for fp32
data it must run either in TF32 (10-bit mantissa: visible error in gate cumsums) or as an
`allow_tf32=False`/`"ieee"` dot that leaves the tensor cores idle. The native scan does
`O(BT x BD)` exact fp32 additions in registers and warp shuffles, needs no `[BT, BT]` mask
tile (fewer registers), and keeps full precision. flash-linear-attention's cumsum
kernels use `tl.cumsum` but form the reverse (suffix) sum by subtracting the prefix from
the total (`-b_o + b_z + b_s`), which loses small suffix contributions next to a large
total; a native reverse scan (`tl.cumsum(..., reverse=True)`) does not.

## Applies when
- a `tl.dot` consumes a mask built from comparing an index vector with itself
  (`o[:, None] >= o[None, :]`, `>`, `<=`, `<`) turned into constant 1/0 values;
- the target Triton has reverse scans (`tl.cumsum(..., reverse=True)`; present in Triton
  3.0, added in 2024 — triton-lang/triton#3177).

## Does not apply when
- older Triton without reverse scans (before triton-lang/triton#3177): only the forward
  prefix sum is native there, so a suffix sum keeps the matmul form;
- the scan is fused into a larger matmul chain (the ones-matrix product is one term of a
  bigger `tl.dot` expression), where tensor cores do the work for free;
- the mask is a causal mask applied to data (`tl.where(m, b_A, 0)`), not constant ones:
  that is attention masking, not a prefix sum;
- custom combine functions with `tl.associative_scan(..., reverse=True)` on Triton 3.0:
  reverse associative scans returned wrong results there (triton-lang/triton#4362) —
  test them.

## References
- flash-linear-attention `fla/ops/utils/cumsum.py` (`chunk_local_cumsum_scalar_kernel`: `tl.cumsum`, the reverse form as `-b_o + b_z + b_s`) — at `49b00f0a94`, before 2025-07-01
- flash-linear-attention `fla/ops/utils/logcumsumexp.py` (`logcumsumexp_fwd_kernel`: still the matmul form) — at `49b00f0a94`, before 2025-07-01
- flash-linear-attention `fla/ops/rwkv6/chunk.py` (`chunk_rwkv6_fwd_cumsum_kernel`: matmul form) — at `49b00f0a94`, before 2025-07-01
- Liger-Kernel `src/liger_kernel/ops/sparsemax.py` (`_sparsemax_forward_kernel`: `tl.cumsum(z_valid, 0)` over the sorted row) — at `5e3bf99abb`, before 2025-07-01
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skel.kernels.flow import args_of, flow_of
from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import calls, custom
from skel.skeletons.predicates.masks import triangular_ones

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts


def _mask_matmuls(k: KernelFacts) -> list[int]:
    fl = flow_of(k)
    return [c.line for c in fl.named("tl.dot") if any(triangular_ones(fl, a) for a in args_of(c.node)[:2])]


NATIVE_SCAN = calls("tl.cumsum", "tl.associative_scan", name="native-scan",
                    describe="`tl.cumsum` / `tl.associative_scan`")
TRIANGULAR_MASK_MATMUL = custom(
    "triangular-mask-matmul",
    "a `tl.dot` with a constant triangular ones matrix `tl.where(o[:, None] >= o[None, :], 1., 0.)`",
    _mask_matmuls)

SKELETON = Skeleton(
    id="native-cumsum",
    title="Native scan instead of cumsum-by-matmul",
    summary="Replace tl.dot(tril_ones, x) prefix sums with tl.cumsum / tl.associative_scan (exact fp32, O(n) work).",
    category=Category.ARITHMETIC,
    doc=__doc__,
    ruled_out_by=(r"\bcumsum\b", r"\bassociative_scan\b"),
    present=NATIVE_SCAN,
    preconditions=[TRIANGULAR_MASK_MATMUL],
    subject=TRIANGULAR_MASK_MATMUL,
    env=Env(triton=">=3.0"),
    helps=("compute",),
)
