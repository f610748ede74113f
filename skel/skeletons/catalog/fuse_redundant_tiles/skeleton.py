"""Stop repeating V-independent work in every V tile: give one program all of V (or wider tiles).

## What it does
A kernel tiled along the value dimension — `i_v = tl.program_id(0)`, `o_v = i_v * BV +
tl.arange(0, BV)` — often also does work that does not depend on `i_v` at all: it loads
q/k (full K), l2-normalises them, computes the gate `exp(A) * softplus(g)` or `beta`,
all in fp32, before touching its V slice. Every one of the `cdiv(V, BV)` programs of a
head redoes that work. Fusing the V tiles — one program covers all of V, either with
`BV = next_power_of_2(V)` or with an inner `for i_v in range(cdiv(V, BV))` loop after
the shared prologue — does it once per head.

## Why it is faster
The redundant part is paid `NV = cdiv(V, BV)` times: with V = 128 and BV = 32, q/k
normalisation and gating run 4x per (token, head). It helps when that shared work is a
real share of the program's work (compute-bound, or a recurrence whose per-step fp32
work dominates); in a memory-bound step the loads dominate and the extra math hides
under them.

## Applies when
- a program-id axis only offsets the V dimension (`i_v * BV`);
- the kernel computes fp32 normalisation/gating (`tl.sqrt`, `tl.rsqrt`, `exp`,
  `tl.sigmoid`, `softplus`, `tl.log`) on loaded values whose addresses do not involve
  `i_v` (q/k, gates, beta);
- V is moderate (64–256), so a program can hold a [BK, V] state or loop over V tiles;
- the kernel does no `tl.dot` (recurrent/decode steps, elementwise-heavy kernels): in
  tensor-core kernels (FLA `chunk_*`), shared gating is a small share next to the
  matmuls, and the V split is what feeds the MMA pipeline, so they are not flagged.

## Does not apply when
- the grid is small (decode with few heads and sequences): splitting V is what fills
  the SMs, and fusing removes parallelism — compare `B * H * NV` with the SM count;
- the V-independent work is negligible next to the V-dependent loads (memory-bound
  steps);
- the state `[BK, BV]` per program would not fit in registers for `BV = V` (K = V = 256
  in fp32 is 256 KB): use an inner loop over V tiles instead of one wide tile;
- the kernel already covers V in one program (an inner loop over V tiles after the
  shared work, or `BV = next_power_of_2(V)` at launch).
Detection limits: the facts cannot tell the launch-time value of `BV`; a kernel always
launched with `BV >= V` is flagged unless the launch in the same file shows it.

## References
- flash-linear-attention `fla/ops/common/fused_recurrent.py` (`fused_recurrent_fwd_kernel`: `i_v` axis; every V tile reloads q/k and the K-sized gate `gk` and recomputes `exp(b_gk)`) — at `49b00f0a94`, before 2025-07-01
- flash-linear-attention `fla/ops/gated_delta_rule/fused_recurrent.py` (`fused_recurrent_gated_delta_rule_fwd_kernel`: `i_v` axis, q/k l2norm under `USE_QK_L2NORM_IN_KERNEL` redone per V tile) — at `49b00f0a94`, before 2025-07-01
- flash-linear-attention `fla/ops/common/chunk_o.py` (`chunk_fwd_kernel_o`, V-tiled with shared QK^T) — at `49b00f0a94`, before 2025-07-01
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import assign_calls, assign_targets, rx, split_top
from skel.skeletons.patterns import any_of, assigns, launches, loops_where
from skel.skeletons.predicates.dots import no_dot
from skel.skeletons.predicates.names import IDENT

if TYPE_CHECKING:
    from skel.kernels.model import Assign, KernelFacts, Launch, Loop

_BV = r"(BV|BLOCK_V|BLOCK_DV|BLOCK_SIZE_V|BLOCK_D_V)"
_TIMES_BV = re.compile(r"\*\s*" + _BV + r"\b")
_NORM_GATE = {"tl.sqrt", "tl.rsqrt", "tl.exp", "tl.exp2", "exp", "exp2", "tl.sigmoid", "sigmoid", "softplus",
              "tl.log", "log", "tl.math.rsqrt", "tl.math.exp2", "l2norm", "rsqrt", "sqrt", "logsigmoid"}
_PURE = {".to", "tl.cdiv", "triton.cdiv", "cdiv"}


def _pairs(a: Assign) -> list[tuple[str, set[str]]]:
    """(target, names it reads); tuple assignments `a, b = x, y` are split per position."""
    tg = assign_targets(a)
    extra = set(tg) if a.op != "=" else set()
    vals = split_top(a.value) if len(tg) > 1 else []
    if len(tg) > 1 and len(vals) == len(tg):
        return [(t, (set(IDENT.findall(v)) & set(a.names)) | extra) for t, v in zip(tg, vals)]
    return [(t, set(a.names) | extra) for t in tg]


def _closure(k: KernelFacts, seeds: set[str], *, pure_only: bool = False) -> set[str]:
    """Names whose value depends on ``seeds`` (through any assignment, or only through
    integer arithmetic when ``pure_only``)."""
    out = set(seeds)
    changed = True
    while changed:
        changed = False
        for a in k.assigns:
            if pure_only and (a.loop_depth or not assign_calls(a) <= _PURE):
                continue
            for t, reads in _pairs(a):
                if t not in out and reads & out:
                    out.add(t)
                    changed = True
    return out


def _v_axes(k: KernelFacts) -> set[str]:
    """Program-id-derived indices used only to offset V (`o_v = i_v * BV + ...`)."""
    direct = {t for a in k.assigns if any("program_id" in c for c in a.calls) for t in assign_targets(a)}
    tiles = _closure(k, direct, pure_only=True)
    axes = set()
    for t in tiles:
        uses = [a.value for a in k.assigns if t in a.names]
        if not uses:
            continue
        if not all(_TIMES_BV.search(u) for u in uses):  # cheap: what the pattern below ends with
            continue
        scaled = rx(r"\b" + re.escape(t) + r"\s*\*\s*" + _BV + r"\b")
        if all(scaled.search(u) for u in uses):
            axes.add(t)
    return axes


def _loaded(k: KernelFacts) -> set[str]:
    """Names computed from loaded values."""
    return _closure(k, {t for a in k.assigns if "tl.load" in a.calls for t in assign_targets(a)})


#: the kernel last asked about, with its V axes, the names they taint and the loaded names:
#: the assignment tests below need these views of the whole kernel, computed once per kernel
#: rather than once per assignment (the entry holds the kernel, so `is` cannot match a new one)
_VIEWS: list[tuple[KernelFacts, set[str], set[str], set[str]]] = []


def _views(k: KernelFacts) -> tuple[set[str], set[str], set[str]]:
    """(V axes, names depending on them, names depending on loads) of ``k``."""
    entry = _VIEWS[0] if _VIEWS else None  # one read: another thread may replace it meanwhile
    if entry is None or entry[0] is not k:
        axes = _v_axes(k)
        tainted, loaded = (_closure(k, axes), _loaded(k)) if axes else (set(), set())
        entry = (k, axes, tainted, loaded)
        _VIEWS[:] = [entry]
    return entry[1], entry[2], entry[3]


def _reads_v_axis(a: Assign, k: KernelFacts) -> bool:
    return bool(set(a.names) & _views(k)[0])


def _shared_per_tile(a: Assign, k: KernelFacts) -> bool:
    """V-independent work on loaded values, in a kernel tiled over V: every V-tile program
    redoes it."""
    axes, tainted, loaded = _views(k)
    return bool(axes) and not _read(a) & tainted and bool(_read(a) & loaded)


def _read(a: Assign) -> set[str]:
    """Names an assignment reads; an in-place update (`h *= ...`) also reads its target."""
    return set(a.names) | (set(assign_targets(a)) if a.op != "=" else set())


def _bv_covers_v(ln: Launch, k: KernelFacts) -> bool:
    """A launch whose `BV` covers all of V (`BV=triton.next_power_of_2(V)`, `BV=V`)."""
    return bool(re.fullmatch(r"\s*(triton\.)?next_power_of_2\(\s*V\s*\)\s*|\s*V\s*", ln.kwargs.get("BV", "x")))


def _v_loop_after_shared_work(lp: Loop, k: KernelFacts) -> bool:
    """An in-kernel loop over V tiles placed after V-independent fp32 work (the fused form)."""
    text = " ".join(lp.args)
    if not (re.search(r"cdiv\(\s*V\s*,\s*" + _BV + r"\s*\)|\bNV\b", text) or "i_v" in lp.targets
            or re.fullmatch(r"0\s+V\s+" + _BV, " ".join(a.strip() for a in lp.args))):
        return False
    loaded = _loaded(k)
    tainted = _closure(k, set(lp.targets))
    return any(a.line < lp.line and a.loop_depth < lp.depth and assign_calls(a) & _NORM_GATE
               and _read(a) & loaded and not _read(a) & tainted for a in k.assigns)


V_TILES_FUSED = any_of(
    loops_where(where=_v_loop_after_shared_work, name="v-loop-after-shared-work",
                describe="a loop over V tiles after the shared fp32 work"),
    launches(where=_bv_covers_v, name="bv-covers-v", describe="a launch with BV = V"),
    name="v-tiles-fused",
    describe="V tiles looped inside one program after the shared fp32 work (or BV = V at launch)")
V_TILE_AXIS = assigns(where=_reads_v_axis, name="v-tile-axis",
                      describe="a program-id axis that only offsets V (`o_v = i_v * BV + ...`)")
SHARED_WORK_PER_TILE = assigns(
    calling=_NORM_GATE, where=_shared_per_tile, name="v-independent-fp32-work",
    describe="fp32 normalisation/gating on loaded values whose addresses do not involve the V-tile index")

NO_DOT_WORK = no_dot("tensor-core work dwarfs the shared fp32 work")

SKELETON = Skeleton(
    id="fuse-redundant-tiles",
    title="Fuse V tiles that repeat V-independent work",
    summary="When every V-tile program redoes q/k norm and gating, give one program all of V: the shared work runs once.",
    category=Category.DECOMPOSITION,
    doc=__doc__,
    present=V_TILES_FUSED,
    preconditions=[V_TILE_AXIS, SHARED_WORK_PER_TILE, NO_DOT_WORK],
    subject=V_TILE_AXIS,
    env=Env(),
    helps=("compute",),
)
