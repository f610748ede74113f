"""Visit GEMM tiles in GROUP_SIZE_M super-rows so tiles running together share A and B in L2.

## What it does
A 2-D tiled matmul usually maps its program id to output tiles in row-major order
(`pid_m = pid // num_pid_n; pid_n = pid % num_pid_n`) or takes `pid_m`/`pid_n` straight
from `tl.program_id(0)`/`tl.program_id(1)`. The grouped order walks `GROUP_SIZE_M` rows
of tiles column by column before moving on:

    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

(`tl.swizzle2d(pid_m, pid_n, num_pid_m, num_pid_n, GROUP_SIZE_M)` does the same.)

## Why it is faster
The programs resident at one time form a roughly square patch of output tiles instead
of one long row, so the A row-panels and B column-panels they read overlap: each panel
is fetched from HBM once and then served from L2 to the other tiles of the group. For
large GEMMs this cuts HBM traffic for A/B substantially and lifts a bandwidth-limited
matmul toward its compute roof; it is free to compute (a few integer ops per program).

## Applies when
- the kernel is a 2-D tiled matmul (a `tl.dot` inside a K loop) whose output tile
  indices come from one program id with `//`/`%` (row-major order) or from
  `program_id(0)`/`program_id(1)` directly;
- M and N are both large (many tiles in each direction), so one row of tiles does not
  fit in L2 together with its B panels.

## Does not apply when
- the GEMM is small (a few tiles, or all of B fits in L2): neutral;
- one of M/N has a single tile (GEMV-like, decode): there is nothing to group;
- the grid uses a 2-D launch and you do not want to change it: switch to a 1-D grid of
  `num_pid_m * num_pid_n` programs first (the grouping needs a linear pid);
- the kernel already groups tiles (`GROUP_SIZE_M`, `num_pid_in_group`, `tl.swizzle2d`,
  a `*_swizzle` helper) or uses a persistent tile scheduler that already orders tiles;
- attention/recurrence kernels whose "tiles" are (query block, head): K/V per head are
  small and already reused within the program.
On AMD MI300 the analogous lever is XCD-aware remapping (tiles are spread round-robin
over XCDs with separate L2s); GROUP_SIZE_M alone may not capture it.

## References
- Triton tutorial `03-matrix-multiplication.py` (`matmul_kernel`, "L2 cache optimizations")
- Liger-Kernel `src/liger_kernel/ops/experimental/mm_int8int2.py` (`matmul_kernel`: `GROUP_SIZE_M` grouped program order) — at `5e3bf99abb`, before 2025-07-01
- flash-linear-attention `fla/ops/utils/matmul.py` (`matmul_kernel`: `tl.swizzle2d(i_m, i_n, NM, NN, G)`) — at `49b00f0a94`, before 2025-07-01
- Triton `tl.swizzle2d` documentation
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import assign_targets, calls, custom, loop, soft, split_top, uses_name
from skel.skeletons.patterns import calls_where

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts

_M_TILE = re.compile(r"(pid|tile|block|blk|bid)_?m|m_?(pid|tile|block|blk)")
_N_TILE = re.compile(r"(pid|tile|block|blk|bid)_?n|n_?(pid|tile|block|blk)")


def _tile_indices(k: KernelFacts) -> list[int]:
    """pid_m / pid_n from one program id with // and %, or from program_id(0) and (1): a
    comparison of two assignments, read against every program id name."""
    pid_src: dict[str, str] = {}  # name -> the text that defines it
    for a in k.assigns:
        tg = assign_targets(a)
        vals = split_top(a.value) if len(tg) > 1 else [a.value]
        if len(vals) != len(tg):
            vals = [a.value] * len(tg)
        for t, v in zip(tg, vals):
            pid_src[t] = v
    pids = {t for t, v in pid_src.items() if "tl.program_id" in v}
    m_line = n_line = 0
    m_axis = n_axis = None
    for a in k.assigns:
        tg = assign_targets(a)
        vals = split_top(a.value) if len(tg) > 1 else [a.value]
        if len(vals) != len(tg):
            vals = [a.value] * len(tg)
        for t, v in zip(tg, vals):
            is_m, is_n = bool(_M_TILE.fullmatch(t)), bool(_N_TILE.fullmatch(t))
            if not (is_m or is_n):
                continue
            direct = re.search(r"tl\.program_id\(\s*(?:axis\s*=\s*)?(\d)", v)
            from_pid = ("//" in v or "%" in v) and ("tl.program_id" in v or set(re.findall(r"\w+", v)) & pids)
            if direct and not from_pid:
                axis = direct.group(1)
            elif from_pid:
                axis = "linear"
            else:
                continue
            if is_m:
                m_line, m_axis = a.line, axis
            else:
                n_line, n_axis = a.line, axis
    if m_line and n_line and (m_axis == n_axis == "linear" or {m_axis, n_axis} == {"0", "1"}):
        return [m_line, n_line]
    return []


GROUPED_ORDER = (
    uses_name(r"num_pid_in_group|first_pid_m|GROUP_SIZE_M|GROUP_M|group_size_m|GROUP_SIZE_N",
              name="group-size-m", describe="a grouped tile order (`GROUP_SIZE_M`/`num_pid_in_group`)")
    | calls("tl.swizzle2d", name="swizzle2d", describe="`tl.swizzle2d`")
    | calls_where(like=r"(?i)swizzle", search=True, name="swizzle-helper",
                  describe="a `*swizzle*` tile-order helper call")
)
DOT_K_LOOP = calls("tl.dot", in_loop=True, name="dot-in-loop", describe="a `tl.dot` inside a K loop")
TILE_INDICES = custom(
    "row-major-tile-indices",
    "output tile indices `pid_m`/`pid_n` taken from one program id with `//`/`%` or from "
    "`program_id(0)`/`program_id(1)`",
    _tile_indices,
)

#: the subject: the GEMM K loop whose tiles the swizzle keeps in L2
GEMM_K_LOOP = soft(DOT_K_LOOP, relaxed=calls("tl.dot", name="dot", describe="a `tl.dot`")
                   | loop(containing="tl.load", name="loading-loop", describe="a loop calling `tl.load`"))

SKELETON = Skeleton(
    id="grouped-l2-swizzle",
    title="Grouped (L2-friendly) GEMM tile order",
    summary="Remap the program id so GROUP_SIZE_M rows of output tiles run together and share A/B panels in L2.",
    category=Category.DECOMPOSITION,
    doc=__doc__,
    ruled_out_by=(r"\bswizzl\w*", r"\bGROUP_SIZE_M\b", r"\bgrouped (ordering|launch order)\b"),
    present=GROUPED_ORDER,
    # 2-D output tiles are the evidence; a `tl.dot` K loop is where the shared panels are
    # largest, so tiles over a loading loop or a single `tl.dot` make a near miss
    preconditions=[GEMM_K_LOOP,
                   TILE_INDICES],
    subject=GEMM_K_LOOP,
    env=Env(),
    helps=("memory",),
)
