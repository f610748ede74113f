"""Program ids, grid axes and grid-stride (persistent) loops."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.conditions import assign_targets, calls, split_top
from skel.skeletons.predicates.names import IDENT

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts

#: A launched kernel: it reads ``tl.program_id``. ``@triton.jit`` helpers called from
#: other kernels do not, and launch-level techniques (autotuning, specialization,
#: launch options) do not apply to them.
KERNEL_ENTRY = calls("tl.program_id", name="kernel-entry",
                     describe="a launched kernel (reads `tl.program_id`)")


def program_id_vars(k: KernelFacts) -> set[str]:
    """Names holding a program id, directly or through one level of arithmetic."""
    names: set[str] = set()
    for c in k.calls_named("tl.program_id"):
        names.update(IDENT.findall(c.target))
    for _ in range(2):
        for a in k.assigns:
            if a.loop_depth == 0 and names & set(a.names) and "tl.arange" not in a.calls:
                names.update(t for t in a.targets if IDENT.fullmatch(t))
    return names


def program_axes(k: KernelFacts) -> set[int]:
    """The grid axes the kernel reads (``tl.program_id(0)`` -> 0); -1 for an axis that is
    not a literal. Its size tells a small 1-D/2-D launch from a 3-D tiled one."""
    axes = set()
    for c in k.calls_named("tl.program_id"):
        arg = c.args[0] if c.args else c.kwargs.get("axis", "0")
        axes.add(int(arg) if arg.strip().isdigit() else -1)
    return axes


def pid_names(k: KernelFacts, fn: str = "tl.program_id") -> dict[str, str]:
    """Names assigned directly from ``fn(axis)`` -> the axis text ("0", "1", ...)."""
    out: dict[str, str] = {}
    for a in k.assigns:
        if fn not in a.calls:
            continue
        tg = assign_targets(a)
        vals = split_top(a.value) if len(tg) > 1 else [a.value]
        for t, v in zip(tg, vals):
            m = re.search(re.escape(fn) + r"\(\s*(?:axis\s*=\s*)?(\d*)", v)
            if m:
                out[t] = m.group(1) or "0"
    return out


_GRID_NAME = re.compile(r"(?i)n?num_?sms|n_?sms|num_?(programs?|progs?|ctas|cores|workers)|grid_?size|n_?progs?")
_PER_PROGRAM = re.compile(r"(?i)\w*(rows|tiles|blocks|items|tokens)_per_(program|prog|pid|cta|sm|core|block)\w*")


def _grid_names(k: KernelFacts) -> set[str]:
    names = set(pid_names(k, "tl.num_programs"))
    names |= {p.name for p in k.params if _GRID_NAME.fullmatch(p.name)}
    names |= {n for n in k.names if _GRID_NAME.fullmatch(n)}
    for a in k.assigns:  # row_step = tl.num_programs(0) * ROWS_PER_BLOCK
        if set(a.names) & names and "tl.load" not in a.calls:
            names |= set(assign_targets(a))
    return names


def grid_stride_loops(k: KernelFacts) -> list[int]:
    """Lines of loops that split work over a fixed set of programs: a loop starting at the
    program id with a ``tl.num_programs``/``NUM_SMS`` stride (or a ``while`` stepping by
    one), or a loop over a ``rows_per_program`` slice starting at ``pid * rows_per_program``.
    Each program then handles many rows/tiles (a persistent kernel, or split partial sums)."""
    pids = set(pid_names(k))
    grid = _grid_names(k)
    lines = []
    for lp in k.loops:
        if lp.kind == "while":
            steps = [a for a in k.assigns if lp.line <= a.line <= lp.end_line and a.op == "+="
                     and (set(a.names) & grid or "tl.num_programs" in a.calls)]
            if steps:
                lines.append(lp.line)
            continue
        if len(lp.args) < 3:
            continue
        start, step = lp.args[0], lp.args[2]
        if ("tl.program_id" in start or set(IDENT.findall(start)) & pids) and (
                "tl.num_programs" in step or set(IDENT.findall(step)) & grid):
            lines.append(lp.line)
    # rows_per_program slices: row_start = pid * rows_per_program; for r in range(row_start, ...)
    per = {n for n in k.names if _PER_PROGRAM.fullmatch(n)}
    if per:
        starts = {t for a in k.assigns if set(a.names) & per and set(a.names) & pids for t in assign_targets(a)}
        for lp in k.loops:
            if lp.args and set(IDENT.findall(lp.args[0])) & (starts | per):
                lines.append(lp.line)
    return lines
