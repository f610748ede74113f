"""Launch about one program per SM and let each loop over many rows (grid-stride).

## What it does
A row kernel launched with one program per row (`grid = (n_rows,)`) becomes a
persistent kernel: the host launches about `NUM_SMS` (times a small occupancy factor)
programs, and each program walks the rows `pid, pid + num_programs, ...`:

    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        ...the old body, with `row` in place of `tl.program_id(0)`...

A variant gives each program a contiguous slice of `rows_per_program` rows (Liger's norm
backward, which also keeps a private partial dW per program).

## Why it is faster
When each row is small (hidden size of a few hundred), a program does very little work
and the launch is dominated by per-program overhead: block scheduling, the prologue
(offsets, masks), loads of row-invariant data such as a norm weight, and the tail wave.
A persistent program pays these once and streams rows back to back, and the compiler
can pipeline loads of the next row under the math of the current one (`tl.range` with
`num_stages`). The gain shrinks as rows widen: a memory-bound row's own work already
hides the per-program overhead.

## Applies when
- the kernel uses a 1-D grid (`tl.program_id(0)` only) with the program id as a row
  index (`ptr + pid * row_stride`);
- the row fits in one block (no loop over column blocks) and is reduced (`tl.sum`,
  `tl.max`): norms, softmax, losses over small rows;
- there are many more rows than SMs (tokens x heads in a head-dim norm).

## Does not apply when
- rows are wide (thousands of columns or a column loop): the kernel is memory-bound and
  persistence buys little. In a serving engine's module (sglang, vLLM...) a row kernel's
  row is the model's hidden size unless its block is named for, or launched from, a head
  dim, a quantisation group or a top-k list (`HEAD_DIM`, `N = group_size`, a literal of at
  most 256), so the skeleton needs that there;
- there are few rows (fewer than a few waves of programs): launch overhead is small;
  a serving engine's per-step bookkeeping (a module under `sample/`, `spec_decode/`,
  `worker/`...) has one row per request, a wave or two;
- the kernel only moves or indexes data (no float math): it is memory-bound, and the
  row-invariant work a persistent program would keep is nil;
- the kernel already loops over rows with a `tl.num_programs`/`NUM_SMS` stride or a
  `rows_per_program` slice. Over a grid of one program per row it is refined (size the
  grid from the SM count); over a capped grid (`min(n_rows, 8192)`) or an axis of a fixed
  count (`(rows, 32)`) it is complete;
- tiled GEMMs: a persistent matmul (TT 09-persistent-matmul) is a different, larger
  rewrite (tile scheduler, TMA, epilogue overlap) that this skeleton does not cover.
The host must launch `min(n_rows, k * NUM_SMS)` programs (query
`torch.cuda.get_device_properties(...).multi_processor_count`); launching `n_rows`
programs with the loop still works but only adds overhead.
- measured on an H200 (Triton 3.6, `benchmarks/results/gpu-2026-12-01-suite/verify_suite_2026-12-01.md`): a grid-stride loop lost to one program per row on
  RMSNorm at 262,144 × 512 (0.43×) and 32,768 × 4,096 (0.92×), and on the KernelBench RMSNorm (0.76×), while
  it paid 2.2× and 3.6× on 4M × 128 and 8M × 64 rows (`benchmarks/results/gpu-2026-12-01-catalog/verify_catalog_2026-12-01.md`): it pays for very short rows, not for rows of
  hundreds of elements or more.

## References
- Triton tutorial `02-fused-softmax.py` (`softmax_kernel`: `tl.range(row_start, n_rows, row_step, num_stages=...)`)
- Liger-Kernel `src/liger_kernel/ops/rms_norm.py` (`_rms_norm_backward_kernel`, `rows_per_program`) — at `5e3bf99abb`, before 2025-07-01
- Liger-Kernel `src/liger_kernel/ops/layer_norm.py` (`_layer_norm_backward_kernel`) — at `5e3bf99abb`, before 2025-07-01
- Triton tutorial `09-persistent-matmul.py` (`matmul_kernel_persistent`, the GEMM analogue)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.predicates.payoff import many_short_programs
from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import custom, soft
from skel.skeletons.patterns import implies, launches
from skel.skeletons.predicates.dots import NO_DOT
from skel.skeletons.predicates.programs import grid_stride_loops
from skel.skeletons.predicates.rows import (ONE_ROW_PER_PROGRAM, ROW_IN_ONE_BLOCK, ROW_IS_1D, ROW_REDUCTION,
                                            SHORT_ROW_IN_SERVING)
from skel.skeletons.predicates.workload import MOVES_DATA_ONLY, STEP_MODULE

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts, Launch


def _grid_stride_loops(k: KernelFacts) -> list[int]:
    """``grid_stride_loops``: loops read against the program-id names and the assignments
    of their steps and row starts."""
    return grid_stride_loops(k)


PERSISTENT_LOOP = custom(
    "grid-stride-row-loop",
    "a loop over rows/tiles starting at the program id with a `tl.num_programs`/`NUM_SMS` stride, "
    "or a `rows_per_program` slice",
    _grid_stride_loops,
)

_SM_COUNT = re.compile(r"(?i).*(multi_processor_count|num_?sms?|sm_?count|n_?sms?|get_num_sms|cu_count).*")


# a grid capped at a fixed program count: `min(num_tokens, 8192)`, `min(m, MAX_GRID)`
_CAPPED = re.compile(r"\bmin\(")
# an axis of a fixed program count: `(rows, 32)`, `(B, _MASK_GRID_COLS)` (a module constant;
# a one-letter size such as `B` or `N` is a runtime size)
_FIXED_AXIS = re.compile(r"[2-9]|\d{2,}|_*[A-Z][A-Z0-9]*_[A-Z0-9_]+")


def _fixed_axis(grid: str) -> bool:
    """A grid tuple (or a `grid = (...)` line before the launch) with an axis of fixed size."""
    g = grid.split(" [if ", 1)[0].split(" = ", 1)[-1].strip()
    if not (g.startswith("(") and g.endswith(")")):
        return False
    return any(_FIXED_AXIS.fullmatch(x.strip()) for x in g[1:-1].split(","))


def _sized_grid(ln: Launch, k: KernelFacts) -> bool:
    """A launch whose grid is sized from the SM count, in the launching function or in a
    function of the file it calls (sglang's `_get_launch_config_2d`), capped at a fixed program
    count (`grid = (min(num_tokens, 8192),)`), or with an axis of a fixed count (`(rows, 32)`,
    a module constant)."""
    return any(_SM_COUNT.fullmatch(x) for x in (ln.grid, *ln.host_calls, *ln.host_names, *ln.helper_names)) or any(
        _CAPPED.search(t) or _fixed_axis(t) for t in (ln.grid, *ln.grid_sources))


#: Some launch in the file sizes its grid from the SM count or caps it (``_sized_grid``):
#: sglang's MoE scatter/gather and vLLM's packed fp8 quant stride their rows over such a
#: grid, and sizing it from the SM count instead buys nothing measurable; so does a grid axis
#: of a fixed count that the loop strides over. A launch we cannot see counts as sized: a
#: grid-stride loop launched over every row only adds overhead.
GRID_FROM_SM_COUNT = implies(
    launches(name="any-launch", describe="a launch in the file"),
    launches(where=_sized_grid, name="sized-grid-launch",
             describe="a launch whose grid reads the SM count, or is capped or fixed"),
    name="persistent-grid-from-sm-count",
    describe="a launch of about one program per SM (the grid reads `multi_processor_count`/`NUM_SMS`) or of a "
    "capped program count (`min(n_rows, 8192)`)")

SKELETON = Skeleton(
    id="persistent-kernel",
    title="Persistent grid-stride row kernel",
    summary="Launch ~NUM_SMS programs that loop over rows with a tl.num_programs stride instead of one program per row.",
    category=Category.DECOMPOSITION,
    doc=__doc__,
    ruled_out_by=(r"\bpersistent\b",),
    present=PERSISTENT_LOOP,
    # an elementwise row (no reduction) has the same per-program overhead: a near miss
    preconditions=[ONE_ROW_PER_PROGRAM, soft(ROW_REDUCTION), ROW_IN_ONE_BLOCK, ROW_IS_1D, NO_DOT, SHORT_ROW_IN_SERVING,
                   ~MOVES_DATA_ONLY, ~STEP_MODULE],
    subject=ONE_ROW_PER_PROGRAM,
    env=Env(),
    payoff=many_short_programs,
    helps=("latency", "occupancy"),
    refine=[GRID_FROM_SM_COUNT],
)
