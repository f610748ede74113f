"""A skeleton rendered for people and programs — generated from the skeleton module
itself, never written twice."""

from __future__ import annotations

import json

from skel.skeletons.base import DOC_HEADINGS, Skeleton, doc_sections


def conditions(s: Skeleton) -> dict[str, object]:
    env = s.env
    return {
        "present": s.present.describe,
        "preconditions": [c.describe for c in s.preconditions],
        # literal details: missing one alone makes a near miss, not a hidden suggestion
        "soft": [c.describe for c in s.preconditions if c.soft],
        "refine": [c.describe for c in s.refine],
        "backends": list(env.backends),
        "min_cc": env.min_cc,
        "triton": env.triton,
        "known_bad": [b.reason for b in env.known_bad],
        "helps": list(s.helps),
        # what applying it buys: speed, or accuracy / correctness at some cost in speed
        "pays_in": s.pays_in,
    }


def as_dict(s: Skeleton) -> dict[str, object]:
    return {
        "id": s.id, "title": s.title, "summary": s.summary, "category": s.category.value,
        "languages": list(s.languages), "doc": doc_sections(s.doc), "conditions": conditions(s),
        "before": s.before.strip("\n"), "after": s.after.strip("\n"),
    }


def _run_line(r: dict) -> str:
    """One verification run, for people."""
    timed = ""
    if r.get("speedup") is not None:
        timed = f" {r['speedup']:.2f}x"
        if r.get("spread") is not None:
            timed += f" ±{r['spread']:.2f}"
        if r.get("noise") is not None:
            timed += f" (noise {r['noise']:.2f})"
    err = ", ".join(f"{k} {v:.1e}" for k, v in (r.get("max_error") or {}).items())
    where = ", ".join(x for x in [r.get("device"), f"Triton {r['triton']}" if r.get("triton") else None] if x)
    detail = f" — {r['detail']}" if r.get("detail") else ""
    return (f"- {r['verdict']}{timed}: {r['subject']} `{r['kernel']}` on {where}"
            + (f"; max error {err}" if err else "") + detail)


def render_skeleton(s: Skeleton, fmt: str = "text", evidence: dict | None = None) -> str:
    """``evidence``: ``SkeletonEvidence.to_dict()`` — mined uses (``kernels`` None when
    there is no store) and ``verification``, the status computed from its runs."""
    evidence = evidence or {"kernels": None, "sources": [], "examples": [], "verification": None}
    ver = evidence.get("verification") or {"status": "draft", "line": "not verified", "records": [],
                                           "warnings": []}
    if fmt == "json":
        d = as_dict(s)
        d["status"] = ver["status"]
        d["evidence"] = evidence
        return json.dumps(d, indent=2) + "\n"
    sections = doc_sections(s.doc)
    c = conditions(s)
    md = fmt == "markdown"
    h = "## " if md else ""
    out = [f"{'# ' if md else ''}{s.id} — {s.title}", "", s.summary, "",
           f"category: {s.category.value}   languages: {', '.join(s.languages)}   "
           f"status: {ver['status']} — {ver['line']}", ""]
    for heading in DOC_HEADINGS[:-1]:
        out += [f"{h}{heading}", sections.get(heading, ""), ""]
    out += [f"{h}Conditions", f"- already present when: {c['present']}"]
    out += [f"- requires: {p.describe}" + (" (soft: a near miss without it)" if p.soft else "")
            for p in s.preconditions]
    out += [f"- when present, complete with: {r.describe}" for r in s.refine]
    env = [f"backends {'/'.join(s.env.backends)}"]  # what conditions() lists, read typed from the skeleton
    if s.env.min_cc:
        env.append(f"sm_{s.env.min_cc}+")
    if s.env.triton:
        env.append(f"triton {s.env.triton}")
    out.append(f"- environment: {', '.join(env)}")
    out += [f"- known bad: {b.reason}" for b in s.env.known_bad]
    if s.helps:
        out.append(f"- addresses: {', '.join(s.helps)}-bound kernels")
    if s.pays_in != "speed":
        out.append(f"- pays in {s.pays_in}, not speed: a slower run is its cost; only wrong results refute it")
    out += ["", f"{h}Example: before", "```python" if md else "", s.before.strip("\n"), "```" if md else "",
            f"{h}Example: after", "```python" if md else "", s.after.strip("\n"), "```" if md else "",
            f"{h}References", sections.get("References", ""), ""]
    out += [f"{h}Verification", f"status: {ver['status']} — {ver['line']}"]
    out += [f"- warning: {w}" for w in ver.get("warnings", [])]
    out += [_run_line(r) for r in ver.get("records", [])] or ["- no run in this environment"]
    out += ["", f"{h}Evidence"]
    checked = evidence.get("track_record")
    out += [f"hand-checked: {checked['line']}"] if checked else []
    if evidence.get("kernels") is None:
        out += ["no knowledge base yet (run `skel mine`)", ""]
    else:
        where = ", ".join(evidence["sources"]) or "no source"
        out += [f"{evidence['kernels']} mined kernels use it ({where})"]
        out += [f"- {loc}" for loc in evidence["examples"]]
        hist = evidence.get("history")
        if hist:
            out += [hist["line"]]
            out += [f"- {e['date'][:10]} {e['repo']}@{e['commit'][:8]} {e['path']} ({e['kernel']}): {e['message']}"
                    for e in hist["latest"]]
        out += [""]
    return "\n".join(line for line in out if line is not None) + "\n"
