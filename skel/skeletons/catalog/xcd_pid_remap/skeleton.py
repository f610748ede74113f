"""Remap program ids so the tiles that share data run on the same AMD XCD (its own L2).

## What it does
An AMD Instinct GPU (MI300X, MI325X, MI350) is built from several accelerator complex dies
(XCDs, eight on an MI300X), each with its own L2 cache. The hardware hands consecutive
workgroups to the XCDs round-robin: program 0 to XCD 0, program 1 to XCD 1, ...,
program 8 to XCD 0 again. A tile kernel numbered for one shared L2 (row-major tiles,
`GROUP_SIZE_M` super-rows, one attention head's query blocks in a row) therefore spreads
the tiles that read the same A/B panels or K/V blocks over all eight L2s. The remap
renumbers the program id first, so each XCD receives a contiguous range of the original
order:

    per_xcd = tl.cdiv(GRID, NUM_XCDS)      # programs an XCD receives (some get one fewer)
    full = GRID - (per_xcd - 1) * NUM_XCDS  # how many XCDs receive per_xcd
    xcd, nth = pid % NUM_XCDS, pid // NUM_XCDS
    pid = tl.where(xcd < full, xcd * per_xcd,
                   full * per_xcd + (xcd - full) * (per_xcd - 1)) + nth

and the kernel then derives its tile coordinates (and any grouped order) from the new id.
It is a bijection on `[0, GRID)`: every tile is still computed exactly once.

## Why it is faster
Tiles that share an input panel now run on one XCD and hit its L2 instead of each XCD
fetching the panel from HBM (or from another die over the fabric). The grouped L2 order
(`grouped-l2-swizzle`) only pays on AMD once it is applied per XCD. It costs a few
integer operations per program.

## Applies when
- the kernel runs on ROCm (an AMD Instinct GPU with several XCDs): skel suggests it only
  when the kernel says so (an AMD path, an `if _is_hip:` branch, a module-level `aiter`
  import) or `--backend rocm` is given;
- it is a grid of tiles that re-read shared data in a loop: a GEMM (`tl.dot` or
  `tl.dot_scaled` in a K loop), attention (query blocks of one head reading its K/V), a
  MoE GEMM over expert blocks.

## Does not apply when
- the GPU is NVIDIA (one L2 for all SMs) or a single-die AMD part: neutral;
- the grid is small (fewer programs than XCDs times CUs per XCD): each XCD holds one wave
  of programs anyway, and nothing is shared across waves;
- the kernel already remaps (`remap_xcd`, `NUM_XCDS`, an XCD-aware persistent scheduler).

## References
- ROCm aiter `aiter/ops/triton/utils/pid_preprocessing.py` (`remap_xcd`, used by the MoE
  GEMMs before their `GROUP_SIZE_M` order) — at `cff0dab452`, before 2025-07-01
- AMD, "AMD Instinct MI300 Series microarchitecture" (XCDs, per-XCD L2, round-robin
  workgroup dispatch)
"""

from __future__ import annotations

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import calls, uses_name

#: the remap is there: an XCD count or a remap helper (`NUM_XCDS`, `remap_xcd`, `xcd_id`,
#: `_remap_XCD`, a spatial `remap_workgroup*`)
XCD_AWARE = uses_name(r"(?i)\w*xcds?\w*|remap_workgroup\w*", name="xcd-remap",
                      describe="an XCD-aware program order (`NUM_XCDS`, `remap_xcd`)")
SHARED_TILE_LOOP = calls("tl.dot", "tl.dot_scaled", in_loop=True, name="shared-tile-loop",
                         describe="tiles re-reading shared data: a `tl.dot`/`tl.dot_scaled` in a loop "
                                  "(a GEMM's A/B panels, attention's K/V)")

SKELETON = Skeleton(
    id="xcd-pid-remap",
    title="XCD-aware program-id remap (AMD multi-die L2)",
    summary="On MI300-class GPUs give each XCD a contiguous range of tiles, so tiles sharing panels share its L2.",
    category=Category.DECOMPOSITION,
    doc=__doc__,
    ruled_out_by=(r"\bxcds?\b", r"\bremap(ping)? (the )?(program|pid|workgroup)"),
    present=XCD_AWARE,
    preconditions=[SHARED_TILE_LOOP],
    subject=SHARED_TILE_LOOP,
    env=Env(backends=("rocm",), backend_required=True),
    helps=("memory",),
)
