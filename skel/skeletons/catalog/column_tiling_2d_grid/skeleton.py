"""Split very wide elementwise rows into fixed column tiles on a second grid axis.

## What it does
An elementwise row kernel launched with one program per row loads the whole row in one
block: `BLOCK_SIZE = next_power_of_2(n_cols)`, so a 14,336-wide MLP activation is a
16,384-element block per program (and 32K-65K for the widest models). Column tiling
fixes the block at a moderate width (1K-4K) and adds a grid axis over the column tiles:

    grid = (n_rows, triton.cdiv(n_cols, BLOCK))
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)

(or the column tile on axis 0 and the row on axis 1, as Liger's DyT kernel does). Each
program then handles `BLOCK` elements of one row; nothing else changes.

## Why it is faster
A block of the whole row makes every thread hold `n_cols / (32 * num_warps)` elements of
every live tensor (inputs, fp32 upcasts, outputs): with 16K columns and 16 warps that is
32 fp32 values per tensor per thread, enough to push a SwiGLU/GeGLU backward (five live
rows) past 128 registers, which caps occupancy at one or two blocks per SM or spills to
local memory. Memory-bound kernels need many loads in flight, i.e. occupancy. Fixed
column tiles keep register use constant whatever the width, let several blocks share an
SM, and give `n_rows x n_tiles` programs instead of `n_rows` — more parallelism when there
are few rows (decode, small batches). Liger reports the tiled SwiGLU/GeGLU helping most
on wide rows on Blackwell.

## Applies when
- one program per row (`ptr + row * stride`, a 1-D grid), and the row is loaded in one
  block (no loop over column blocks) of 1-D vectors;
- the work is elementwise along the row: no reduction over it (`tl.sum`, `tl.max`) —
  activations (SwiGLU, GeGLU, DyT), their backward, elementwise losses, residual adds;
- rows can be wide (the block is sized from `n_cols`, e.g. `next_power_of_2(n_cols)` or
  `calculate_settings(n_cols)`): thousands to tens of thousands of columns.

## Does not apply when
- the row is reduced (norms, softmax, cross-entropy): a tile does not see the whole row,
  so it needs a two-pass or atomics scheme instead (see `online-softmax`, split
  reductions);
- rows are narrow (hundreds of columns): the block is already small; process several
  rows per program instead (`multi-row-per-program`). A row whose block is named for, or
  launched from, a head dim, a quantisation group or a top-k list (`HEAD_DIM`,
  `N = group_size`, `k = topk_ids.shape[1]`), or a literal of at most 256, is narrow;
- the kernel already reads a second grid axis for the columns, or loops over column
  blocks inside the program;
- the grid would exceed the y/z limit: CUDA caps grid axes 1 and 2 at 65,535, so put the
  row count (which can be millions of tokens) on axis 0 and the column tiles on axis 1.

## References
- Liger-Kernel `src/liger_kernel/ops/swiglu.py` (`_swiglu_backward_kernel`: one program per row, the — at `5e3bf99abb`, before 2025-07-01
  whole row in one `BLOCK_SIZE` block, v0.5.10)
- Liger-Kernel `src/liger_kernel/ops/dyt.py` (`_dyt_fwd_kernel`: `col = tl.program_id(0) * BLOCK_N + ...`, — at `5e3bf99abb`, before 2025-07-01
  `row_id = tl.program_id(1)`, grid `(cdiv(N, BLOCK_N), M)`, v0.5.10)
- Liger-Kernel `src/liger_kernel/ops/geglu.py` (`_geglu_tanh_backward_kernel`, one block per row, v0.5.10)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.patterns import absent, assigns, calls_where
from skel.skeletons.predicates.dots import NO_DOT
from skel.skeletons.predicates.names import IDENT, TILE_NAME
from skel.skeletons.predicates.programs import pid_names, program_axes
from skel.skeletons.predicates.rows import ONE_ROW_PER_PROGRAM, ROW_IN_ONE_BLOCK, ROW_IS_1D, SHORT_ROW

if TYPE_CHECKING:
    from skel.kernels.model import Assign, Call, KernelFacts

_REDUCTIONS = ("tl.sum", "tl.max", "tl.min", "tl.argmax", "tl.argmin", "tl.reduce", "tl.xor_sum", "tl.cumsum")
#: Host calls that size a block from the row width.
_WIDTH_SIZED = re.compile(r"(?:^|\.)(next_power_of_2|calculate_settings)$")


def _column_tile(a: Assign, k: KernelFacts) -> bool:
    """A 1-D column offset `pid_c * BLOCK + tl.arange(...)` on one grid axis while another
    axis indexes the row (of a 1-D row)."""
    names = set(IDENT.findall(a.value))
    if not any(TILE_NAME.fullmatch(n) for n in names):
        return False
    if not (names & set(pid_names(k)) or "tl.program_id" in a.value):
        return False
    return len(program_axes(k) - {-1}) >= 2 and ROW_IS_1D.check(k) is not None


#: A `@triton.jit` helper that reduces the row it is given (`_compute_rms_norm(x, w, ...)`,
#: `softmax(x)`): its body is not in this kernel's facts, its name says what it does.
_REDUCING_HELPER = re.compile(r"(?i)\w*(norm|softmax|sum|reduc|mean|var|lse|logsumexp|rms)\w*")


def _reduces_row(c: Call, k: KernelFacts) -> bool:
    """A reduction over a block (`tl.sum`, `tl.max` ...), or a call of a helper named for one."""
    return c.name in _REDUCTIONS or (not c.name.startswith(("tl.", ".")) and bool(_REDUCING_HELPER.fullmatch(c.name)))


def _single_axis(k: KernelFacts) -> list[int] | bool | None:
    if not program_axes(k) <= {0}:
        return None
    # why-lines point at the statements that read the grid, not the signature
    return [c.line for c in k.calls_named("tl.program_id")] or True


def _block_sized_from_width(k: KernelFacts) -> list[int] | bool | None:
    """The launcher in this file sizes the block from the row width (or is not in sight)."""
    own = [ln for ln in k.launches if ln.kernel == k.name]
    if not own:
        return True
    lines = [ln.line for ln in own if any(_WIDTH_SIZED.search(c) for c in ln.host_calls)]
    return lines or None


COLUMN_TILES_ON_SECOND_AXIS = assigns(
    calling=("tl.arange",), where=_column_tile, name="column-tile-axis",
    describe="column tiles on their own grid axis (`pid_c * BLOCK + tl.arange`, row on another axis)")
ELEMENTWISE_ROW = absent(
    calls_where(where=_reduces_row, name="row-reduction",
                describe="a reduction over the row (`tl.sum`, `tl.max` ..., or a helper named for one)"),
    name="elementwise-row", describe="no reduction over the row (elementwise work)")
ONE_GRID_AXIS = custom("one-grid-axis", "a 1-D grid (`tl.program_id(0)` only)", _single_axis)
WHOLE_ROW_BLOCK = custom(
    "whole-row-block", "a block sized from the row width (`next_power_of_2(n_cols)` / `calculate_settings`)",
    _block_sized_from_width)

SKELETON = Skeleton(
    id="column-tiling-2d-grid",
    title="Column tiles on a second grid axis for wide elementwise rows",
    summary="Split very wide rows into fixed column tiles with a second grid axis (program_id(1)): occupancy, registers.",
    category=Category.DECOMPOSITION,
    doc=__doc__,
    present=COLUMN_TILES_ON_SECOND_AXIS,
    # a row known to be short (a head, a quant group, a top-k list) already makes a small block
    preconditions=[ONE_ROW_PER_PROGRAM, ONE_GRID_AXIS, ROW_IN_ONE_BLOCK, ROW_IS_1D, ELEMENTWISE_ROW, NO_DOT,
                   WHOLE_ROW_BLOCK, ~SHORT_ROW],
    subject=ONE_ROW_PER_PROGRAM,
    env=Env(),
    helps=("occupancy", "memory"),
)
