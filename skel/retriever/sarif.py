"""Suggestions as a SARIF 2.1.0 log (``--format sarif``), for code review through code
scanning (GitHub's upload-sarif reads it).

One result per suggestion: its rule is the skeleton (``tool.driver.rules``, with the
title, summary and documentation as help), its locations are the kernel lines the "why"
names (one location per why-line that has lines; the kernel's first line when none has),
its level is ``note`` — ``warning`` for a refinement, a technique already used
incompletely. Paths are URIs relative to ``base`` (default: the working directory) under
the ``%SRCROOT%`` base id, so a log made in a checkout's root points into the repository;
a file outside ``base`` keeps an absolute ``file://`` URI.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from skel.retriever.prompt import verify_command
from skel.retriever.suggest import KernelResult, Suggestion
from skel.retriever.wording import split_why
from skel.skeletons import registry

SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SRCROOT = "%SRCROOT%"
_MAX_LOCATIONS = 10  # why-lines of one result; more would bury the first in the review UI


def _version() -> str:
    # 12 ms to import, which `skel suggest --triton X` never pays otherwise: only this format needs it
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("skel")
    except PackageNotFoundError:
        return "0"


def _artifact(path: str, base: Path) -> dict:
    p = Path(path).resolve()
    try:
        return {"uri": quote(p.relative_to(base).as_posix()), "uriBaseId": SRCROOT}
    except ValueError:
        return {"uri": p.as_uri()}


def _rule(skeleton_id: str, s: Suggestion) -> dict:
    doc = registry.get(skeleton_id).doc.strip()
    return {
        "id": skeleton_id,
        "name": "".join(w.capitalize() for w in skeleton_id.split("-")),
        "shortDescription": {"text": s.title},
        "fullDescription": {"text": s.summary},
        "help": {"text": doc or s.summary, "markdown": doc or s.summary},
        "defaultConfiguration": {"level": "note"},
        "properties": {"category": s.category, "tags": ["performance", s.category]},
    }


def _locations(r: KernelResult, s: Suggestion, artifact: dict) -> list[dict]:
    out: list[dict] = []
    for why in s.why:
        detail, lines = split_why(why)
        if lines and len(out) < _MAX_LOCATIONS:
            out.append({"physicalLocation": {"artifactLocation": artifact, "region": {"startLine": lines[0]}},
                        "message": {"text": detail}})
    if not out:  # facts without lines ("a __global__ kernel"): point at the kernel
        out.append({"physicalLocation": {"artifactLocation": artifact, "region": {"startLine": r.line_start}},
                    "message": {"text": f"kernel `{r.kernel}`"}})
    return out


def _message(r: KernelResult, s: Suggestion) -> str:
    what = f" ({s.label})" if s.label else ""
    why = "; ".join(s.why[:4]) or "structural match"
    missing = f" Missing: {'; '.join(s.missing)}." if s.missing else ""
    return (f"{s.id}{what}: {s.title}. Fits `{r.kernel}` because: {why}.{missing} {s.summary} "
            f"Evidence: {s.status}: {s.verification.line}. Check a change with `{verify_command(r.path, s.id)}`.")


def sarif_log(results: list[KernelResult], base: str | Path | None = None) -> dict:
    """The SARIF log (a dict ready for ``json.dumps``) of the suggestions in ``results``."""
    root = Path(base or Path.cwd()).resolve()
    rules: list[dict] = []
    index: dict[str, int] = {}
    out = []
    for r in results:
        artifact = _artifact(r.path, root)
        for s in r.suggestions:
            if s.id not in index:
                index[s.id] = len(rules)
                rules.append(_rule(s.id, s))
            out.append({
                "ruleId": s.id,
                "ruleIndex": index[s.id],
                "level": "warning" if s.kind == "refine" else "note",
                "message": {"text": _message(r, s)},
                "locations": _locations(r, s, artifact),
                "partialFingerprints": {"skelSuggestion/v1": f"{r.kernel}:{s.id}"},
                "properties": {"kernel": r.kernel, "kind": s.kind, "status": s.status, "score": s.score,
                               "verify": verify_command(r.path, s.id)},
            })
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "skel", "version": _version(), "rules": rules}},
            "originalUriBaseIds": {SRCROOT: {"uri": root.as_uri() + "/"}},
            "results": out,
        }],
    }
