"""Pages of the site, rendered with Jinja2 from a ``CatalogSnapshot``.

Every claim on a page comes from the snapshot: the skeleton module (doc, conditions,
template), the store (mined uses, sources, history) and the verification runs (shipped
and the store's). Nothing is written here by hand but the layout.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from skel.site import plots
from skel.site.text import blocks, diff, inline, slug
from skel.skeletons.base import DOC_HEADINGS, Status, Target, doc_sections
from skel.skeletons.status import status_of

if TYPE_CHECKING:
    from skel.api import CatalogSnapshot, SkeletonEvidence
    from skel.skeletons.base import Skeleton
    from skel.store.evidence import Verification

STATUS_MEANING = {
    "validated": "pays beyond noise on a kernel other than its own example",
    "demonstrated": "pays on its own example only",
    "no-effect": "every timed run inside the noise floor",
    "refuted": "wrong, fails to launch, or slower",
    "stale": "verified, but on another Triton version than the target's",
    "draft": "no run in this environment",
}


@dataclass
class Plot:
    file: str  # relative to the site root
    alt: str
    caption: str


@dataclass
class Pages:
    """What was written: page and plot paths relative to the site root."""

    pages: list[str] = field(default_factory=list)
    plots: list[str] = field(default_factory=list)


def environment():
    import jinja2  # jinja2: 26 ms to import, and the optional site extra (skel.site.require says so)

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
                             autoescape=True, trim_blocks=True, lstrip_blocks=True,
                             undefined=jinja2.StrictUndefined)
    env.filters["inline"] = inline
    env.filters["blocks"] = blocks
    env.filters["slug"] = slug
    env.filters["speed"] = speed
    env.filters["error"] = lambda v: "—" if v is None else f"{v:.1e}"
    # a commit as a version reads as its first 12 hex digits (the whole one is in the links)
    env.filters["version"] = lambda v: v[:12] if re.fullmatch(r"[0-9a-f]{40}", v or "") else v
    return env


def speed(r: Verification) -> str:
    if r.speedup is None:
        return "—"
    out = f"{r.speedup:.2f}×"
    if r.spread is not None:
        out += f" ±{r.spread:.2f}"
    return out


def target_words(snap: CatalogSnapshot) -> str:
    t = snap.target
    bits = [t.backend or "any backend", f"sm_{t.cc}" if t.cc else "any architecture",
            f"Triton {t.triton}" if t.triton else "no Triton installed"]
    if t.gpu:
        bits.append(f"GPU {t.gpu}")
    return ", ".join(bits)


def _minor(version: str | None) -> str:
    return ".".join(version.split(".")[:2]) if version else ""


def environments(snap: CatalogSnapshot) -> list[tuple[str, str]]:
    """Every (GPU, Triton major.minor) the evidence was measured on, by GPU then Triton."""
    found = {(r.device, _minor(r.triton)) for _, _, runs in snap.skeletons for r in runs
             if r.device and r.backend != "cpu"}
    return sorted(found, key=lambda e: (e[0], tuple(int(x) for x in e[1].split(".") if x.isdigit())))


def status_by_environment(s: Skeleton, runs: list[Verification],
                          envs: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """The skeleton's status from its runs on each (GPU, Triton) alone, the same status
    function the catalog uses; ``status`` None where it never ran there."""
    out: list[dict[str, Any]] = []
    for gpu, triton in envs:
        here = [r for r in runs if r.device == gpu and _minor(r.triton) == triton and r.backend != "cpu"]
        if not here:
            out.append({"gpu": gpu, "triton": triton, "status": None, "line": "not run there", "runs": 0})
            continue
        # only that environment's runs: no other Triton's can make it stale, no other GPU's count
        rep = status_of(here, Target(), triton_bound="triton" in s.languages, pays_in=s.pays_in)
        out.append({"gpu": gpu, "triton": triton, "status": rep.status.value, "line": rep.line, "runs": len(here)})
    return out


def environment_summary(per_skeleton: list[list[dict[str, Any]]],
                        envs: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """Per (GPU, Triton): how many skeletons have each status there, and the share that
    pays (validated or demonstrated) of the whole catalog."""
    total = len(per_skeleton)
    out = []
    for i, (gpu, triton) in enumerate(envs):
        counts = {st.value: 0 for st in Status if st is not Status.STALE}
        counts["not run"] = 0
        for cells in per_skeleton:
            counts[cells[i]["status"] or "not run"] += 1
        paying = counts[Status.VALIDATED.value] + counts[Status.DEMONSTRATED.value]
        out.append({"gpu": gpu, "triton": triton, "counts": counts, "paying": paying, "total": total,
                    "share": f"{round(100 * paying / total)}%" if total else "0%"})
    return out


def env_words(s: Skeleton) -> str:
    e = s.env
    bits = ["/".join(e.backends)]
    if e.min_cc and e.max_cc:
        bits.append(f"sm_{e.min_cc}–sm_{e.max_cc}")
    elif e.min_cc:
        bits.append(f"sm_{e.min_cc}+")
    elif e.max_cc:
        bits.append(f"up to sm_{e.max_cc}")
    if e.triton:
        bits.append(f"Triton {e.triton}")
    return ", ".join(bits)


def conditions(s: Skeleton) -> list[tuple[str, str]]:
    """(kind, words) for every condition, as `skel skeletons show` lists them."""
    out = [("already present when", s.present.describe)]
    out += [("requires" + (" (soft: a near miss without it)" if c.soft else ""), c.describe) for c in s.preconditions]
    out += [("when present, complete with", c.describe) for c in s.refine]
    out.append(("environment", env_words(s)))
    out += [("known bad", b.reason) for b in s.env.known_bad]
    if s.helps:
        out.append(("addresses", ", ".join(s.helps) + "-bound kernels (from a profile)"))
    return out


def _kernel_name(r: Verification) -> str:
    return r.kernel.removeprefix("example:")


def skeleton_plots(s: Skeleton, runs: list[Verification], out: Path) -> list[Plot]:
    """Draw what the runs hold: speedups, errors (precision skeletons), status by Triton."""
    made: list[Plot] = []
    kernel_runs = [r for r in runs if r.measure == "kernel" and any(p.speedup for p in r.per_shape)]
    svg = plots.speedups(kernel_runs, f"{s.id}: speedup per kernel and shape")
    if svg:
        sp = [p.speedup for r in kernel_runs for p in r.per_shape if p.speedup]
        noise = [r.noise for r in kernel_runs if r.noise is not None]
        alt = (f"Speedup of {s.id} on {len(sp)} kernel shapes, from {min(sp):.2f}× to {max(sp):.2f}×"
               + (f"; noise floor up to ±{max(noise) * 100:.1f}%" if noise else "") + ".")
        made.append(_save(out, f"plots/{s.id}-speedup.svg", svg, alt,
                          "Speedup per kernel and shape: dot = median ratio, bar = its spread, grey band = the "
                          "original timed against itself in the same run (noise floor), dashed line = 1×."))
    if s.category.value == "arithmetic and precision":
        svg = plots.errors(runs, f"{s.id}: error by shape")
        if svg:
            errs = [p.max_error for r in runs for p in r.per_shape if p.max_error is not None]
            alt = f"Largest error of {s.id} against the original over {len(errs)} shapes: {min(errs):.1e} to " \
                  f"{max(errs):.1e}."
            made.append(_save(out, f"plots/{s.id}-error.svg", svg, alt,
                              "Largest absolute error against the original per shape (log scale), by sequence "
                              "length where the shapes name one."))
    svg = plots.triton_status(runs, f"{s.id}: runs by Triton version")
    if svg:
        versions = sorted({r.triton or "" for r in runs if r.triton})
        verdicts = ", ".join(f"{v}: {n}" for v, n in _count(r.verdict for r in runs if r.triton).items())
        alt = f"Verification runs of {s.id} on Triton {', '.join(versions)}: {verdicts}."
        made.append(_save(out, f"plots/{s.id}-triton.svg", svg, alt,
                          "Each run's verdict (colour) and speedup by Triton version."))
    return made


def _count(xs) -> dict[str, int]:
    out: dict[str, int] = {}
    for x in xs:
        out[x] = out.get(x, 0) + 1
    return out


def _save(out: Path, rel: str, svg: str, alt: str, caption: str) -> Plot:
    path = out / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    # a root <title> is what a screen reader or a hover shows for the SVG opened alone
    svg = re.sub(r"(<svg[^>]*>)", lambda m: m.group(1) + f"<title>{_xml(alt)}</title>", svg, count=1)
    path.write_text(svg, encoding="utf-8")
    return Plot(file=rel, alt=alt, caption=caption)


def _xml(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def render_site(snap: CatalogSnapshot, out: Path, *, generated: str,
                progress: Callable[[int, int, str], None] | None = None) -> Pages:
    env = environment()
    done = Pages()
    common = {"target": target_words(snap), "store": snap.store, "generated": generated,
              "status_meaning": STATUS_MEANING}
    sources = {s.record.name: s for s in snap.sources}

    def write(rel: str, template: str, **ctx: Any) -> None:
        depth = rel.count("/")
        html = env.get_template(template).render(root="../" * depth, **common, **ctx)
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(html, encoding="utf-8")
        done.pages.append(rel)

    rows = []
    total = len(snap.skeletons)
    envs = environments(snap)
    by_env = [status_by_environment(s, runs, envs) for s, _, runs in snap.skeletons]
    by_technique: dict[str, list] = {}
    for e in snap.events:  # latest first, as recorded
        by_technique.setdefault(e.technique, []).append(e)
    for i, (s, ev, runs) in enumerate(snap.skeletons):
        if progress:
            progress(i, total, s.id)
        made = skeleton_plots(s, runs, out)
        done.plots += [p.file for p in made]
        events = by_technique.get(s.id, [])
        write(f"skeletons/{s.id}.html", "skeleton.html", s=s, ev=ev, runs=runs, plots=made,
              uses=snap.uses.get(s.id, []), sections=_sections(s), conditions=conditions(s),
              diff=diff(s.before, s.after, "kernel.cu" if "triton" not in s.languages else "kernel.py"),
              events=events, commit_urls=snap.commit_urls, source_pages={n: slug(n) for n in sources},
              env=env_words(s), by_env=by_env[i], title=f"{s.id} — {s.title}")
        rows.append(_row(s, ev) | {"by_env": by_env[i]})
    if progress:
        progress(total, total, "index")
    names = {s.id: s.title for s, _, _ in snap.skeletons}
    for src in snap.sources:
        write(f"sources/{slug(src.record.name)}.html", "source.html", src=src, titles=names,
              title=f"source {src.record.name}")
    categories = sorted({r["category"] for r in rows})
    write("index.html", "index.html", rows=rows, categories=categories,
          statuses=[s for s in STATUS_MEANING if any(r["status"] == s for r in rows)],
          languages=sorted({lang for r in rows for lang in r["languages"]}),
          sources=[(s, slug(s.record.name)) for s in snap.sources], events=len(snap.events),
          drafts=len(snap.drafts), envs=environment_summary(by_env, envs), title="skel — the catalog")
    write("history.html", "history.html", events=snap.events, drafts=snap.drafts, commit_urls=snap.commit_urls,
          title="history: techniques introduced, removed, refined")
    return done


def _sections(s: Skeleton) -> list[tuple[str, str]]:
    found = doc_sections(s.doc)
    return [(h, found.get(h, "")) for h in DOC_HEADINGS]


def _row(s: Skeleton, ev: SkeletonEvidence) -> dict[str, Any]:
    return {"id": s.id, "title": s.title, "summary": s.summary, "category": s.category.value,
            "status": ev.status.status.value, "line": ev.status.line, "languages": list(s.languages),
            "env": env_words(s), "kernels": ev.kernels, "sources": ev.sources,
            "search": " ".join([s.id, s.title, s.summary, s.category.value, " ".join(s.languages)]).lower()}


def catalog_markdown(snap: CatalogSnapshot) -> str:
    """The catalog as a markdown table: the same rows as the site's index (README's table)."""
    lines = [f"<!-- generated by `skel site`; statuses for {target_words(snap)} -->",
             "| skeleton | language | status | category | summary |", "|---|---|---|---|---|"]
    for s, ev, _ in snap.skeletons:
        summary = s.summary.replace("|", "\\|")
        lines.append(f"| `{s.id}` | {', '.join(s.languages)} | {ev.status.status.value} | {s.category.value} | "
                     f"{summary} |")
    return "\n".join(lines) + "\n"


def site_json(snap: CatalogSnapshot, pages: Pages) -> str:
    """What the site holds, for programs (and the tests): one entry per skeleton, with its
    status on each (GPU, Triton) the evidence was measured on."""
    envs = environments(snap)
    by_env = [status_by_environment(s, runs, envs) for s, _, runs in snap.skeletons]
    return json.dumps({
        "target": target_words(snap), "store": snap.store,
        "environments": environment_summary(by_env, envs),
        "skeletons": [{"id": s.id, "status": ev.status.status.value, "kernels": ev.kernels,
                       "sources": ev.sources, "runs": len(runs), "page": f"skeletons/{s.id}.html",
                       "by_environment": [{k: c[k] for k in ("gpu", "triton", "status")} for c in cells]}
                      for (s, ev, runs), cells in zip(snap.skeletons, by_env)],
        "sources": [{"name": s.record.name, "version": s.record.version, "kernels": s.kernels,
                     "page": f"sources/{slug(s.record.name)}.html"} for s in snap.sources],
        "pages": pages.pages, "plots": pages.plots}, indent=2) + "\n"
