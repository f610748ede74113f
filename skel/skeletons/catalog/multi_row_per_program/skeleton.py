"""Give each program a [BLOCK_ROW, BLOCK_D] tile of several rows when rows are short.

## What it does
A row-wise op (norm, softmax, gating, rope over a head dimension) written with one row
per program — `row = tl.program_id(0)`, a 1-D `tl.arange(0, BLOCK_D)` over the columns,
a reduction over that vector — is rewritten so each program handles `BLOCK_ROW` rows at
once with 2-D tiles:

    rows = tl.program_id(0) * BLOCK_ROW + tl.arange(0, BLOCK_ROW)
    x = tl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=...)
    rstd = tl.rsqrt(tl.sum(x * x, axis=1) / n_cols + eps)     # one value per row
    y = x * rstd[:, None] * w[None, :]

The grid shrinks to `cdiv(n_rows, BLOCK_ROW)`; `BLOCK_ROW` is autotuned or picked from
the hidden size.

## Why it is faster
With a hidden size of 64–256 (per-head q/k norms, small MLPs), one row is a few hundred
bytes: a program with one row leaves most of its warps' lanes idle or does a tiny
amount of work per launch-scheduling cost, and row-invariant data (the norm weight)
is reloaded by every program. A [BLOCK_ROW, BLOCK_D] tile gives every thread useful
work, issues wider loads and amortises the weight load over BLOCK_ROW rows. It is the
tile-level alternative to a persistent grid-stride loop (skeleton `persistent-kernel`).
The gain shrinks as rows widen, until the kernel is memory-bound.

## Applies when
- the kernel is a row-wise op with one row per program: 1-D grid, program id times a
  row stride, 1-D column tiles, a reduction over the row, no column loop;
- the hidden size is small (≲ 1–2K columns) and there are many rows.

## Does not apply when
- rows are wide: one row already fills the program (and a [BLOCK_ROW, BLOCK_D] tile of
  wide rows spills registers); at thousands of columns the kernel is memory-bound. In a
  serving engine's module (sglang, vLLM...) a row kernel's row is the model's hidden size
  unless its block is named for, or launched from, a head dim, a quantisation group or a
  top-k list (`HEAD_DIM`, `N = group_size`, a literal of at most 256), so the skeleton
  needs that there;
- a serving engine's per-step bookkeeping (a module under `sample/`, `spec_decode/`,
  `worker/`...): one row per request, a wave or two of programs, nothing to amortise;
- the kernel already tiles rows in 2-D (`rows[:, None]` with a `BLOCK_ROW`/`BT`
  constexpr and reductions over `axis=1`);
- the op is not independent per row (a scan along rows).
Mind `BLOCK_ROW * BLOCK_D` register pressure: cap it (e.g. 8–16K elements per program)
and keep the per-row statistics (`rstd`) as `[BLOCK_ROW]` vectors.

## References
- Liger-Kernel `src/liger_kernel/ops/rms_norm.py` (`_block_rms_norm_forward_kernel`, `BLOCK_ROW`) — at `5e3bf99abb`, before 2025-07-01
- flash-linear-attention `fla/modules/l2norm.py` (`l2norm_fwd_kernel`, `BT` rows per program) — at `49b00f0a94`, before 2025-07-01
- flash-linear-attention `fla/modules/layernorm.py` (`layer_norm_fwd_kernel`) — at `49b00f0a94`, before 2025-07-01
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.predicates.payoff import short_and_many_rows
from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import assign_targets, custom, soft
from skel.skeletons.predicates.dots import NO_DOT
from skel.skeletons.predicates.rows import (ONE_ROW_PER_PROGRAM, ROW_IN_ONE_BLOCK, ROW_IS_1D, ROW_REDUCTION,
                                            SHORT_ROW_IN_SERVING)
from skel.skeletons.predicates.workload import STEP_MODULE

if TYPE_CHECKING:
    from skel.kernels.model import Call, KernelFacts

_ROW_BLOCK = re.compile(r"BLOCK_ROWS?|BLOCK_SIZE_ROWS?|ROWS_PER_(BLOCK|PROGRAM|PROG|CTA)|BLOCK_M|BLOCK_SIZE_M|"
                        r"BT|BR|BLOCK_T|ROW_BLOCK(_SIZE)?|BLOCK_N_ROWS|NUM_ROWS")


def _axis1(c: Call) -> bool:
    ax = c.kwargs.get("axis", c.args[1] if len(c.args) > 1 else "")
    return ax.strip() in ("1", "-1")


def _row_tiles(k: KernelFacts) -> list[int]:
    """Row offsets from ``tl.arange(0, BLOCK_ROW)`` used as ``rows[:, None]``, reduced over axis 1."""
    row_consts = {p.name for p in k.params if p.constexpr and _ROW_BLOCK.fullmatch(p.name)}
    if not row_consts:
        return []
    if not any(c.name in ("tl.sum", "tl.max", "tl.min") and _axis1(c) for c in k.calls):
        return []
    lines = []
    for a in k.assigns:
        m = re.search(r"tl\.arange\(\s*0\s*,\s*(\w+)\s*\)", a.value)
        if not m or m.group(1) not in row_consts:
            continue
        for t in assign_targets(a):
            if re.search(r"\b" + re.escape(t) + r"\s*\[\s*:\s*,\s*None\s*\]", k.source):
                lines.append(a.line)
    return lines


MULTI_ROW_TILE = custom(
    "multi-row-tile",
    "row offsets `tl.arange(0, BLOCK_ROW)` used as `rows[:, None]` with reductions over `axis=1`",
    _row_tiles,
)

SKELETON = Skeleton(
    id="multi-row-per-program",
    title="Several rows per program for short rows",
    summary="Process BLOCK_ROW rows per program with 2-D [BLOCK_ROW, BLOCK_D] tiles when the hidden size is small.",
    category=Category.DECOMPOSITION,
    doc=__doc__,
    present=MULTI_ROW_TILE & NO_DOT,
    # an elementwise row (no reduction) has the same per-program overhead: a near miss
    preconditions=[ONE_ROW_PER_PROGRAM, soft(ROW_REDUCTION), ROW_IN_ONE_BLOCK, ROW_IS_1D, NO_DOT,
                   SHORT_ROW_IN_SERVING, ~STEP_MODULE],
    subject=ONE_ROW_PER_PROGRAM,
    env=Env(),
    payoff=short_and_many_rows,
    helps=("occupancy", "latency"),
)
