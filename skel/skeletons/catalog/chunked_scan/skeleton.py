"""Turn a token-by-token linear recurrence into a chunkwise-parallel scan with tensor-core matmuls.

## What it does
A linear-attention / SSM-style recurrence written step by step,

    for t in range(T):
        h = h * decay_t + k_t[:, None] * v_t[None, :]     # [K, V] state, outer product
        o_t = sum(h * q_t[:, None], 0)

is reorganised over chunks of `BT` tokens. Inside a chunk everything is dense matrix
algebra (`tl.dot`): the intra-chunk part of the output is a masked
`(Q K^T ⊙ decay mask) V`, the inter-chunk part is `Q h`; the state is then advanced
once per chunk, `h = h * decay_chunk + K^T V`. Across chunks only `h` is carried
(sequentially, or by a separate `chunk_*_fwd_h` kernel that stores `h` per chunk so the
output kernel can run in parallel over chunks).

## Why it is faster
The step form does `T` rank-1 updates with elementwise CUDA-core math and a strict
dependency from one token to the next: it cannot use tensor cores and has little
parallelism along T. The chunked form turns the work (plus an intra-chunk term of
about T*BT*(K+V) extra FLOPs) into `T / BT` matmuls of `[BT, K] x [K, V]` on tensor
cores (dense bf16 matmul throughput is far above what elementwise fp32 math reaches)
and lets the intra-chunk work of all chunks run in parallel. It is the core of FLA's
`chunk_*` kernels.

## Applies when
- the kernel loops over time steps (`for t in range(T)`) carrying a 2-D state updated
  with an outer product `k[:, None] * v[None, :]` (plus decay/gating), and uses no
  `tl.dot`;
- sequences are long (training, prefill): hundreds of tokens or more per sequence.

## Does not apply when
- decoding one token at a time (T = 1 per call) or very short sequences: the step
  kernel is the right tool (FLA keeps `fused_recurrent_*` for exactly this);
- the recurrence is not linear in the state (a non-linear update of `h` breaks the
  chunked algebra), or its transition is a dense per-step matrix without a compact
  chunk form (delta-rule variants need the WY/UT transform: extra kernels, `solve_tril`);
- the decay is fine-grained and large in magnitude: the intra-chunk decay ratios
  `exp(g_i - g_j)` can overflow in fp32; FLA uses chunk-local cumulative gates,
  secondary chunking (`BC` sub-chunks) and sometimes fp32 `tl.dot` with tf32x3;
- the kernel already chunks (a loop over `NT = cdiv(T, BT)` carrying `b_h` updated
  with `tl.dot`).
- q and k are not normalised and sequences are long: the chunk form rounds `q * scale`,
  the scores and the state to fp16/bf16 for its dots, and the state grows like sqrt(T);
  with randn q, k at T = 4096 its fp16 output missed a (2e-2, 1e-2) tolerance that the
  step form met (simulated in torch). L2-normalised q, k (or an fp32 state dot) keep it
  within (5e-3, 5e-3) to T = 16384.
This is a rewrite of the algorithm, not a local edit: verify against the step kernel
on random inputs in fp32 before timing.

## References
- flash-linear-attention `fla/ops/common/chunk_h.py` (`chunk_fwd_kernel_h`) — at `49b00f0a94`, before 2025-07-01
- flash-linear-attention `fla/ops/common/chunk_delta_h.py` (`chunk_gated_delta_rule_fwd_kernel_h_blockdim64`) — at `49b00f0a94`, before 2025-07-01
- flash-linear-attention `fla/ops/common/fused_chunk.py` (`fused_chunk_fwd_kernel`) — at `49b00f0a94`, before 2025-07-01
- flash-linear-attention `fla/ops/common/fused_recurrent.py` (`fused_recurrent_fwd_kernel`, the step form) — at `49b00f0a94`, before 2025-07-01
- Yang et al., "Gated Linear Attention Transformers with Hardware-Efficient Training" (2024)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import assign_targets
from skel.skeletons.patterns import assigns, loops_where
from skel.skeletons.predicates.dots import NO_DOT
from skel.skeletons.predicates.loops import loop_carried
from skel.skeletons.predicates.tiles import OUTER_PRODUCT

if TYPE_CHECKING:
    from skel.kernels.model import Assign, KernelFacts, Loop

_CHUNK = re.compile(r"BT|BS|BC|CHUNK_SIZE|chunk_size|BLOCK_T|CHUNK|BLOCK_SIZE_T")


def _dot_updates(k: KernelFacts, lp: Loop) -> dict[str, list[int]]:
    """Carried names updated with a tl.dot inside the loop -> update lines."""
    carried = loop_carried(k, lp)
    out: dict[str, list[int]] = {}
    for a in k.assigns:
        if lp.line <= a.line <= lp.end_line and "tl.dot" in a.calls:
            for t in set(assign_targets(a)) & set(carried):
                if a.op != "=" or t in a.names or re.search(r"tl\.dot\(.*,\s*" + re.escape(t) + r"\s*\)", a.value):
                    out.setdefault(t, []).append(a.line)
    return out


def _carries_chunk_state(lp: Loop, k: KernelFacts) -> bool:
    """A loop over chunks (in a kernel with a chunk-size constexpr) carrying a state updated
    with tl.dot and also used in the loop (stored per chunk, or multiplied with the chunk's
    queries)."""
    if lp.kind == "while" or not any(p.constexpr and _CHUNK.fullmatch(p.name) for p in k.params):
        return False
    for name, upd in _dot_updates(k, lp).items():
        word = re.compile(r"\b" + re.escape(name) + r"\b")
        used = any(lp.line <= c.line <= lp.end_line and c.line not in upd and c.target != name
                   and any(word.search(x) for x in c.args) for c in k.calls)
        used = used or any(lp.line <= a.line <= lp.end_line and a.line not in upd
                           and name not in assign_targets(a) and name in a.names for a in k.assigns)
        if used:
            return True
    return False


def _outer_product_step(a: Assign, k: KernelFacts) -> bool:
    """An outer-product update (not a load) of a 2-D state carried by a loop over time
    steps that loads."""
    if not OUTER_PRODUCT.search(a.value) or "tl.load" in a.calls:
        return False
    for lp in k.loops:
        if lp.kind in ("while", "tl.static_range") or not lp.args or not (lp.line <= a.line <= lp.end_line):
            continue
        if not any(c.name == "tl.load" and lp.line <= c.line <= lp.end_line for c in k.calls):
            continue
        if set(assign_targets(a)) & set(loop_carried(k, lp)):
            return True
    return False


CHUNKED_STATE_LOOP = loops_where(
    where=_carries_chunk_state, name="chunked-state-loop",
    describe="a loop over chunks carrying a state updated with `tl.dot` (`b_h += tl.dot(k, v)`) and used per chunk",
)
STEP_RECURRENCE = assigns(
    where=_outer_product_step, name="step-recurrence",
    describe="a loop over time steps carrying a 2-D state updated with an outer product "
             "(`h += k[:, None] * v[None, :]`)",
)

SKELETON = Skeleton(
    id="chunked-scan",
    title="Chunkwise-parallel scan for linear recurrences",
    summary="Replace a per-token outer-product recurrence with chunks of BT tokens: tl.dot inside, state carried across.",
    category=Category.DECOMPOSITION,
    doc=__doc__,
    present=CHUNKED_STATE_LOOP,
    preconditions=[STEP_RECURRENCE, NO_DOT],
    subject=STEP_RECURRENCE,
    env=Env(),
    helps=("compute",),
)
