"""The site's pictures, drawn with matplotlib into standalone SVG files.

Each function takes verification runs and returns an SVG document (or None when the runs
hold nothing to draw), so pages show a number as a picture only where there is one.
matplotlib is imported here, lazily, and only by ``skel site`` / ``skel verify --report``.
"""

from __future__ import annotations

import io
import math
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skel.store.evidence import Verification

VERDICT_COLOURS = {"faster": "#1a7f37", "correct": "#0969da", "no-effect": "#6e7781", "slower": "#cf222e",
                   "wrong": "#8250df", "failed": "#8250df", "tests-failed": "#8250df", "not-applied": "#bf8700",
                   "no-op": "#bf8700"}
# a length parameter in a shape ("T=4096", "S=4096", "seq_len=…", "N=…"), for error-vs-length plots
_LENGTH = re.compile(r"(?:^|[,(])(T|S|seq_len|seqlen|L|N)=(\d+)")



def kernel_label(kernel: str) -> str:
    """A run's kernel as a short label: its file name, or for a skeleton's runnable pair
    (``example:skel/skeletons/catalog/<id>/example.py``) the skeleton's folder, as the pairs
    were named when they lived in one flat folder (``<id>.py``)."""
    parts = kernel.removeprefix("example:").rsplit("/", 2)
    if parts[-1] == "example.py" and len(parts) > 1:
        return f"{parts[-2]}.py"
    return parts[-1]

def _pyplot():
    import matplotlib  # 0.18 s to import (pyplot 0.35 s), and the optional site extra: only drawing needs it

    matplotlib.use("Agg")  # never a window, never a display
    matplotlib.rcParams.update({"svg.hashsalt": "skel", "svg.fonttype": "none", "font.size": 9,
                                "axes.spines.top": False, "axes.spines.right": False})
    import matplotlib.pyplot as plt  # after use("Agg"): pyplot picks its backend on import

    return plt


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": "skel"})
    _pyplot().close(fig)
    return buf.getvalue()


def speedups(runs: list[Verification], title: str) -> str | None:
    """Speedup per kernel and shape (median, with its spread as an error bar) against the
    noise floor of its run (the original timed against itself: the shaded band)."""
    rows = []  # (label, speedup, spread, noise, verdict)
    for r in runs:
        if r.measure != "kernel":
            continue
        kernel = kernel_label(r.kernel)
        for s in r.per_shape:
            if s.speedup is not None and s.speedup > 0:
                rows.append((f"{kernel} · {s.shape[:40]} {s.dtype}", s.speedup, s.spread or 0.0, r.noise, r.verdict))
    if not rows:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 0.9 + 0.32 * len(rows)))
    ys = list(range(len(rows)))[::-1]
    for y, (_, sp, spread, noise, verdict) in zip(ys, rows):
        if noise:
            ax.add_patch(plt.Rectangle((1 - noise, y - 0.4), 2 * noise, 0.8, color="#d0d7de", lw=0))
        ax.errorbar([sp], [y], xerr=[[spread], [spread]], fmt="o", ms=5, capsize=3,
                    color=VERDICT_COLOURS.get(verdict, "#24292f"))
    ax.axvline(1.0, color="#24292f", lw=0.8, ls="--")
    ax.set_yticks(ys, [r[0] for r in rows])
    ax.set_xscale("log")
    lo = min(min(r[1] - r[2] for r in rows), 0.8)
    hi = max(max(r[1] + r[2] for r in rows), 1.25)
    ax.set_xlim(max(lo * 0.85, 0.05), hi * 1.15)
    ticks = [t for t in (0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 20, 50) if lo * 0.85 <= t <= hi * 1.15]
    ax.set_xticks(ticks, [f"{t:g}×" for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel("speedup (original time / candidate time); grey band: noise floor of the run")
    ax.set_title(title, loc="left")
    return _svg(fig)


def errors(runs: list[Verification], title: str) -> str | None:
    """Largest error per shape, against the shape's sequence length when its shapes name one
    (the drift a precision change shows as sequences grow), else per shape."""
    points = []  # (run label, shape label, length or None, error)
    for r in runs:
        label = f"{kernel_label(r.kernel)} ({r.device or '?'})"
        for s in r.per_shape:
            if s.max_error is None:
                continue
            m = _LENGTH.search(s.shape)
            points.append((label, f"{s.shape[:32]} {s.dtype}", int(m.group(2)) if m else None, s.max_error))
    if len(points) < 2:
        return None
    plt = _pyplot()
    by_length = all(p[2] is not None for p in points) and len({p[2] for p in points}) > 1
    fig, ax = plt.subplots(figsize=(7.5, 3.2))
    floor = min((p[3] for p in points if p[3] > 0), default=1e-12) / 10
    for label in dict.fromkeys(p[0] for p in points):
        mine = [p for p in points if p[0] == label]
        if by_length:
            mine.sort(key=lambda p: p[2] or 0)  # by_length: every point has a length
            ax.plot([p[2] for p in mine], [max(p[3], floor) for p in mine], "o-", label=label)
        else:
            ax.plot([p[1] for p in mine], [max(p[3], floor) for p in mine], "o", label=label)
    if by_length:
        m = _LENGTH.search(next(r.per_shape[0].shape for r in runs if r.per_shape))
        ax.set_xscale("log", base=2)
        ax.set_xlabel(f"sequence length ({m.group(1) if m else 'length'})")
    else:
        ax.tick_params(axis="x", labelrotation=30)
        for t in ax.get_xticklabels():
            t.set_horizontalalignment("right")
    ax.set_yscale("log")
    ax.set_ylabel("max |error| vs the original")
    ax.set_title(title, loc="left")
    ax.legend(fontsize=7, frameon=False)
    return _svg(fig)


def triton_status(runs: list[Verification], title: str) -> str | None:
    """Each run's verdict and speedup by Triton version and device: where a technique
    stopped paying (or started) shows as a column changing colour."""
    timed = [r for r in runs if r.triton]
    if not timed:
        return None
    plt = _pyplot()
    versions = sorted({r.triton or "" for r in timed}, key=_version_key)
    fig, ax = plt.subplots(figsize=(6.0, 2.6))
    seen = set()
    for r in timed:
        x = versions.index(r.triton or "")
        y = r.speedup if r.speedup and r.speedup > 0 else 1.0
        verdict = r.verdict
        marker = "o" if r.speedup else "s"
        ax.scatter([x], [y], color=VERDICT_COLOURS.get(verdict, "#24292f"), marker=marker, s=36,
                   label=verdict if verdict not in seen else None, zorder=3)
        seen.add(verdict)
    ax.axhline(1.0, color="#24292f", lw=0.8, ls="--")
    ax.set_xticks(range(len(versions)), [f"Triton {v}" for v in versions])
    ax.set_xlim(-0.6, len(versions) - 0.4)
    ax.set_yscale("log")
    ys = [r.speedup for r in timed if r.speedup and r.speedup > 0] + [1.0]
    lo, hi = min(ys) * 0.85, max(ys) * 1.15
    ax.set_ylim(min(lo, 0.8), max(hi, 1.25))
    ticks = [t for t in (0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 20, 50) if min(lo, 0.8) <= t <= max(hi, 1.25)]
    ax.set_yticks(ticks, [f"{t:g}×" for t in ticks])
    ax.minorticks_off()
    ax.set_ylabel("speedup (squares: untimed, drawn at 1×)")
    ax.set_title(title, loc="left")
    ax.legend(fontsize=7, frameon=False, loc="best")
    return _svg(fig)


def _version_key(v: str) -> tuple:
    return tuple(int(x) if x.isdigit() else math.inf for x in re.split(r"[.+]", v)[:3])
