"""What each MCP tool answers, from the service API: a structured result (a dict whose
"schema" names its shape and version, e.g. "skel.suggest/1") and a text rendering for
clients that show a model only text. Nothing here knows about the MCP SDK; ``server``
wraps these and turns a ``SkelError`` into an MCP tool error.

Every path a client names goes through ``Roots`` first. An answer with no suggestion is a
result ("applies": false), never an error.
"""

from __future__ import annotations

import json
import tempfile
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from skel import api
from skel.errors import UsageError
from skel.mcp.roots import Roots
from skel.retriever import render
from skel.retriever.lexical import index_for, words
from skel.skeletons import registry  # called as registry.X: tests swap the catalog there
from skel.skeletons.docs import render_skeleton

CHARS_PER_TOKEN = 4  # a rough count for code and English under common tokenizers
LANGUAGE_FILE = {"triton": "kernel.py", "python": "kernel.py", "cuda": "kernel.cu", "cpp": "kernel.cpp",
                 "c++": "kernel.cpp"}
KINDS = ("match", "refine", "near-miss", "related")


@dataclass
class Reply:
    data: dict[str, Any]  # the structured result
    text: str  # the same answer for a reader


@dataclass
class Service:
    """The server's fixed settings: which files it may read and which store it uses. A
    client never chooses the store: it is where `skel verify` records its verdicts."""

    roots: Roots
    store: str | None = None
    # the store and the catalog caches are not made for concurrent use, and the SDK runs
    # synchronous tools on worker threads: one call at a time reaches them
    lock: threading.Lock = field(default_factory=threading.Lock)


def _target(backend: str | None, arch: str | None, triton: str | None, gpu: str | None = None) -> Any:
    return api.parse_target(backend, arch, triton, gpu)


def _target_dict(t: Any) -> dict[str, Any]:
    out = {"backend": t.backend, "cc": t.cc, "triton": t.triton}
    if t.gpu:  # only when asked for: answers without it stay as they were
        out["gpu"] = t.gpu
    return out


# --- suggest -----------------------------------------------------------------------------

def suggest(svc: Service, *, path: str | None = None, source: str | None = None, language: str | None = None,
            filename: str | None = None, kernel: str | None = None, profile: str | None = None,
            bound: str | None = None, backend: str | None = None, arch: str | None = None,
            triton: str | None = None, k: int = 5, max_tokens: int | None = None,
            why_not: list[str] | None = None, shapes: list[str] | None = None, show_all: bool = False,
            gpu: str | None = None) -> Reply:
    if bool(path) == bool(source):
        raise UsageError("give exactly one of path (a file under the server's roots) or source (the kernel's text)")
    if not 1 <= k <= 50:
        raise UsageError(f"k={k}: between 1 and 50")
    if max_tokens is not None and max_tokens < 100:
        raise UsageError(f"max_tokens={max_tokens}: at least 100")
    target = _target(backend, arch, triton, gpu)
    extra: dict[str, Any] = {}
    if profile:
        extra["profile"] = str(svc.roots.file(profile, "profile"))
    if why_not:
        extra["why_not"] = tuple(why_not)
    if shapes:
        extra["shapes"] = tuple(shapes)
    if show_all:
        extra["show_all"] = True
    with svc.lock, tempfile.TemporaryDirectory(prefix="skel-mcp-") as tmp:
        if path:
            file, shown = svc.roots.file(path), path
            # sizes from the tests of the file's repository, read inside the roots only
            extra["repo_within"] = list(svc.roots.dirs)
        else:
            assert source is not None
            rel = _inline_name(language, filename)
            shown = filename or rel  # the client's own name for it
            file = Path(tmp).joinpath(*rel.split("/"))
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(svc.roots.text(source), encoding="utf-8")
        results = api.suggest(file, store=svc.store, kernel=kernel, k=k, bound=bound, target=target, **extra)
    for r in results:
        r.path = shown  # the client's name for the file, not the server's (or a temporary) path
        r.notes = [n.replace(str(file), shown) for n in r.notes]
    applies = any(render.applies(r) for r in results)
    data: dict[str, Any] = {"schema": "skel.suggest/1", "applies": applies, "target": _target_dict(target),
                            "kernels": [r.to_dict() for r in results]}
    md = render.markdown(results)
    if max_tokens is not None:
        data["prompt"] = _prompt(results, md, max_tokens)
    text = data.get("prompt") or md
    if not applies:
        text = "No skeleton applies (an answer, not an error).\n\n" + text
    return Reply(data, text)


def apply(svc: Service, skeleton_id: str, kernel: str, *, path: str | None = None,
          source: str | None = None) -> Reply:
    """`skel apply` for agents: the candidate comes back; nothing is written."""
    if bool(path) == bool(source):
        raise UsageError("give exactly one of path (a file under the server's roots) or source (the file's text)")
    with svc.lock, tempfile.TemporaryDirectory(prefix="skel-mcp-") as tmp:
        if path:
            file, shown = svc.roots.file(path), path
        else:
            assert source is not None
            shown = LANGUAGE_FILE["triton"]
            file = Path(tmp) / shown
            file.write_text(svc.roots.text(source), encoding="utf-8")
        applied = api.apply_skeleton(skeleton_id, file, kernel)
    diff = applied.diff().replace(str(file), shown)
    data = {"schema": "skel.apply/1", "skeleton": applied.skeleton, "kernel": applied.kernel, "path": shown,
            "changed_lines": applied.changed_lines, "source": applied.source, "diff": diff}
    return Reply(data, f"`{applied.skeleton}` applied to `{kernel}` in `{shown}` (lines "
                       f"{', '.join(map(str, applied.changed_lines))}); verify it before keeping it.\n\n"
                       f"```diff\n{diff}```\n")


def verify_skeleton(skeleton_id: str | None, *, skeleton: str | None = None, example: str | None = None,
                    paired: bool) -> tuple[str | None, str | None]:
    """``verify``'s (example, skeleton) from ``skeleton_id``, the name every tool gives a
    skeleton, and its deprecated names: ``skeleton`` (the technique a change applies) and
    ``example`` (verify the skeleton's own pair). ``skeleton_id`` with a pair (``paired``:
    original or candidate given) is the technique applied; alone, the example to verify."""
    named = {v for v in (skeleton_id, skeleton) if v}
    if len(named) > 1:
        raise UsageError("give the skeleton once, as skeleton_id (skeleton is its deprecated name)")
    sid = next(iter(named), None)
    if example:  # the deprecated spelling keeps its meaning, with or without a technique named
        return example, sid
    return (None, sid) if paired else (sid, None)


def _inline_name(language: str | None, filename: str | None) -> str:
    if filename:
        # its folders kept (facts read off a path hold: a serving engine's package, a backend
        # folder), but only under the server's temporary folder: no `..`, no root, no drive
        parts = [p for p in filename.replace("\\", "/").split("/") if p not in ("", ".", "..") and not p.endswith(":")]
        if not parts or filename.replace("\\", "/").endswith("/"):
            raise UsageError(f"filename {filename!r}: give a file name such as kernel.py or gemm.cu, or its path "
                             "(sglang/srt/layers/norm.py)")
        return "/".join(parts)
    if not language:
        return LANGUAGE_FILE["triton"]
    try:
        return LANGUAGE_FILE[language.lower()]
    except KeyError:
        raise UsageError(f"language {language!r}: one of triton, cuda, cpp") from None


def _prompt(results: list, md: str, max_tokens: int) -> str:
    """A markdown block within ``max_tokens``: the prompt renderer when this skel has one,
    else the markdown answer cut at whole suggestions, most useful first."""
    prompt = getattr(render, "prompt", None)
    if prompt is not None:
        return str(prompt(results, max_tokens=max_tokens))
    return fit(md, max_tokens)


def fit(md: str, max_tokens: int) -> str:
    """Keep whole sections ("## kernel", "### suggestion") while they fit the budget, and
    say how many were left out. The top suggestion is always there, cut at a line if it
    alone is over the budget: an answer without it would be no answer."""
    budget = max_tokens * CHARS_PER_TOKEN - 120  # room for the closing note
    blocks: list[str] = []
    for line in md.splitlines(keepends=True):
        if line.startswith(("## ", "### ")) or not blocks:
            blocks.append(line)
        else:
            blocks[-1] += line
    out, used, left, cut, shown = [], 0, 0, False, 0
    for b in blocks:
        is_suggestion = b.startswith("### ")
        if not cut and used + len(b) <= budget:
            out.append(b)
            used += len(b)
            shown += is_suggestion
            continue
        if not cut and is_suggestion and not shown:
            out.append(_cut_lines(b, max(budget - used, 200)))
            shown, used = 1, budget
            cut = True
            continue
        cut = True
        left += is_suggestion
    text = "".join(out).rstrip() + "\n"
    if cut:
        text += f"\n*(cut to about {max_tokens} tokens; {left} more suggestion(s) left out: raise max_tokens)*\n"
    return text


def _cut_lines(block: str, room: int) -> str:
    """``block`` cut at a line within ``room`` characters, an open code fence closed."""
    kept = block[:room].rsplit("\n", 1)[0] + "\n"
    if kept.count("```") % 2:
        kept += "```\n"
    return kept


# --- the catalog -------------------------------------------------------------------------

def show(svc: Service, skeleton_id: str, *, backend: str | None = None, arch: str | None = None,
         triton: str | None = None, gpu: str | None = None) -> Reply:
    target = _target(backend, arch, triton, gpu)
    with svc.lock:
        s, evidence = api.show(skeleton_id, store=svc.store, target=target)
        runs = api.verifications(s.id, store=svc.store)
    ev = evidence.to_dict()
    d = json.loads(render_skeleton(s, "json", ev))
    # every run, the CPU interpreter's included: the status above counts only the target's
    d["runs"] = [r.to_dict() for r in runs]
    lines = [f"- {r.date[:10]} {r.verdict} ({r.subject} {r.kernel}; {r.device}"
             + (f"; {r.speedup:.2f}x" if r.speedup else "") + (f"): {r.detail}" if r.detail else ")") for r in runs]
    text = render_skeleton(s, "markdown", ev).rstrip() + "\n\n## Verification runs\n" \
        + ("\n".join(lines) if lines else "none yet") + "\n"
    return Reply({"schema": "skel.show/1", "target": _target_dict(target), "skeleton": d}, text)


def list_skeletons(svc: Service, *, category: str | None = None, language: str | None = None,
                   backend: str | None = None, arch: str | None = None, triton: str | None = None,
                   gpu: str | None = None) -> Reply:
    target = _target(backend, arch, triton, gpu)
    with svc.lock:
        items = api.list_skeletons(category, store=svc.store, target=target)
    if language:
        items = [s for s in items if language.lower() in s.languages]
    lines = [f"{s.id} [{'/'.join(s.languages)}; {s.category}; {s.status}]: {s.summary}" for s in items]
    return Reply({"schema": "skel.list/1", "target": _target_dict(target), "count": len(items),
                  "skeletons": [asdict(s) for s in items]},
                 "\n".join(lines) + "\n" if lines else "no skeleton matches\n")


def search(svc: Service, query: str, *, k: int = 10) -> Reply:
    """Skeletons by words: BM25 over each one's documentation and example (the retriever's
    lexical index over the catalog), plus a bonus for words found in its id or title."""
    if not query or not query.strip():
        raise UsageError("query: give a few words, e.g. 'softmax one pass' or 'split-k'")
    if not 1 <= k <= 100:
        raise UsageError(f"k={k}: between 1 and 100")
    q = words(query)
    with svc.lock:
        raw = index_for(None).scores(q)
        catalog = registry.all_skeletons()
    top = max(raw.values(), default=0.0)
    phrase = query.strip().lower()
    scored: list[tuple[float, str, list[str], Any]] = []
    for s in catalog:
        doc = raw.get(s.id, 0.0) / top if top > 0 else 0.0
        named = set(words(s.id.replace("-", "_")) + words(s.title))
        in_name = [w for w in set(q) if w in named]
        in_id = phrase == s.id or phrase.replace(" ", "-") in s.id  # "online softmax" finds online-softmax
        matched = (["id"] if in_id else []) + (["title"] if in_name else []) + (["docs"] if doc > 0 else [])
        # docs in [0, 1]; + the share of query words in the id or title; + 1 for the id itself
        score = doc + (len(in_name) / len(set(q)) if q else 0.0) + (1.0 if in_id else 0.0)
        if score > 0:
            scored.append((score, s.id, matched, s))
    scored.sort(key=lambda t: (-t[0], t[1]))
    hits = [{"id": s.id, "title": s.title, "summary": s.summary, "category": s.category.value,
             "languages": list(s.languages), "score": round(score, 4), "matched": matched}
            for score, _, matched, s in scored[:k]]
    lines = [f"{h['id']} ({h['score']:.2f}; {', '.join(h['matched'])}): {h['summary']}" for h in hits]
    return Reply({"schema": "skel.search/1", "query": query, "results": hits},
                 "\n".join(lines) + "\n" if lines else f"no skeleton matches {query!r}\n")
