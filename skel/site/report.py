"""The page of one ``skel verify`` run (``skel verify --report DIR``): the verdict, each
stage, what the run could not check, every shape's numbers, and the same pictures as a
skeleton's page — a result that can be read and shared as it is."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

from skel.site import ASSETS, plots, prepare, require, writing
from skel.site.pages import _save, environment
from skel.verifier.report import MEANING

if TYPE_CHECKING:
    from skel.verifier.run import VerifyResult


def write_report(result: VerifyResult, out: str | Path) -> Path:
    """Write DIR/index.html (and its plots) for ``result``; returns the page's path."""
    require()
    path = prepare(out)
    with writing(path) as tmp:
        shutil.copytree(ASSETS, tmp / "assets")
        rec = result.record
        name = rec.skeleton or "change"
        made = []
        svg = plots.speedups([rec], f"{name}: speedup per shape") if rec.measure == "kernel" else None
        if svg:
            sp = [p.speedup for p in rec.per_shape if p.speedup]
            made.append(_save(tmp, "plots/speedup.svg", svg,
                              f"Speedup per shape, from {min(sp):.2f}× to {max(sp):.2f}×"
                              + (f"; noise floor ±{rec.noise * 100:.1f}%" if rec.noise is not None else "") + ".",
                              "Dot = median ratio, bar = its spread, grey band = noise floor, dashed line = 1×."))
        svg = plots.errors([rec], f"{name}: error by shape")
        if svg:
            made.append(_save(tmp, "plots/error.svg", svg, "Largest absolute error against the original, per shape.",
                              "Largest absolute error against the original per shape (log scale)."))
        html = environment().get_template("report.html").render(
            root="", r=result, rec=rec, meaning=MEANING.get(rec.verdict, ""), plots=made,
            generated=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), store=None,
            target=f"{rec.device or 'this machine'}", status_meaning={},
            nav=False, title=f"skel verify: {rec.verdict} — {Path(result.candidate).name}")
        (tmp / "index.html").write_text(html, encoding="utf-8")
        (tmp / "result.json").write_text(__import__("json").dumps(result.to_dict(), indent=2) + "\n",
                                         encoding="utf-8")
    return path / "index.html"
