"""Precision of the shown list on repositories skel has never seen, judged by people who
did not write the ranking.

    python -m benchmarks.retrieval.unseen sample --name unseen1   # draw kernels, rank, write the judge view
    python -m benchmarks.retrieval.unseen report --name unseen1   # precision from the judges' verdicts

The repositories (``REPOS``, pinned commits) are in no benchmark of skel (``cases.json``,
the precision draws), cited by no skeleton, and were never read while changing the ranking.
``sample`` draws ``TRITON`` Triton kernels and ``CUDA`` CUDA kernels per repository with a
seed from the draw's name, ranks each as a user would (``skel suggest`` at the judges'
target: sm_90, CUDA, Triton 3.6; no sizes, the default threshold, no store), and writes:

- ``unseen_pairs_<name>.json`` (committed): each kernel, what was shown, what was named
  conditional — ids and kinds only;
- the judge view, in the cache (never committed: it quotes the repositories' code paths):
  the same with each shown suggestion's title, summary, why-lines and template, and where
  the kernel is in the unpacked repository. No score and no probability: the judge sees
  what a user would act on, not how sure skel is.

A judge fills ``unseen_verdicts_<name>.json``: per shown pair ``correct`` / ``incorrect`` /
``unclear`` with a one-line reason, and per kernel the optimisation an expert would try
first (``first_idea``: a skeleton id from `skel skeletons list`, or a few words) and whether
one shown suggestion is it. ``report`` prints precision of the shown list, the share of
kernels with a shown suggestion, and how often the first idea is among them; each report is
appended to ``unseen_runs.md``.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.retrieval import repos

HERE = Path(__file__).resolve().parent
LOG = HERE / "unseen_runs.md"
#: owner/name -> commit: repositories in no benchmark and no skeleton reference
REPOS = {
    "thu-ml/SageAttention": "d1a57a5",
    "apple/ml-cross-entropy": "d42911f",
    "facebookresearch/xformers": "ca6d2aa0",
    "bitsandbytes-foundation/bitsandbytes": "95f9af30",
    "hpcaitech/ColossalAI": "4f9953be3",
}
TRITON, CUDA = 5, 2
TARGET = ("cuda", 90, "3.6.0")


def _tree(repo: str, commit: str, cache: Path) -> Path:
    """The repository's files at ``commit``, unpacked once into the cache."""
    dest = cache / "unseen" / f"{repo.replace('/', '+')}@{commit}"
    if not (dest / ".done").is_file():
        dest.mkdir(parents=True, exist_ok=True)
        git = repos.MIRRORS / repo.replace("/", "+") / "repo"
        if not git.is_dir():
            git = repos.ensure(repo, cache)
        archive = subprocess.run(["git", "-C", str(git), "archive", commit], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
        (dest / ".done").write_text(commit)
    return dest


def _kernels(root: Path) -> tuple[list, list]:
    """(Triton, CUDA) kernels of the tree as ``(relative path, facts)``; unreadable files skipped."""
    from skel.errors import SkelError
    from skel.kernels.extract import extract, language_of

    triton, cuda = [], []
    for f in sorted(root.rglob("*")):
        if f.suffix not in (".py", ".cu", ".cuh") or not f.is_file():
            continue
        text = f.read_text(encoding="utf-8", errors="replace")
        lang = language_of(str(f))
        if lang == "triton" and "triton" not in text:
            continue
        if lang == "cuda" and "__global__" not in text:
            continue
        rel = f.relative_to(root).as_posix()
        try:
            found = [k for k in extract(text, rel) if k.kind == "kernel"]
        except (SkelError, SyntaxError, ValueError, RecursionError):
            continue
        (triton if lang == "triton" else cuda).extend((rel, k) for k in found)
    return triton, cuda


def sample(name: str, cache: Path) -> int:
    from skel import api
    from skel.skeletons import registry
    from skel.skeletons.base import Target

    target = Target(backend=TARGET[0], cc=TARGET[1], triton=TARGET[2])
    pairs, view = [], []
    for repo, commit in REPOS.items():
        root = _tree(repo, commit, cache)
        triton, cuda = _kernels(root)
        rng = random.Random(f"{name}:{repo}")
        chosen = rng.sample(triton, min(TRITON, len(triton))) + rng.sample(cuda, min(CUDA, len(cuda)))
        print(f"{repo}@{commit}: {len(triton)} Triton and {len(cuda)} CUDA kernels, {len(chosen)} drawn", flush=True)
        for rel, kf in sorted(chosen, key=lambda t: (t[0], t[1].name)):
            (r,) = api.suggest(root / rel, kernel=kf.name, target=target)
            key = f"{repo}@{commit}:{rel}:{kf.name}"
            shown = [{"skeleton": s.id, "kind": s.kind} for s in r.suggestions]
            pairs.append({"kernel": key, "shown": shown, "conditional": [d["id"] for d in r.conditional]})
            view.append({"kernel": key, "file": str(root / rel), "lines": [r.line_start, r.line_end],
                         "shown": [{"skeleton": s.id, "kind": s.kind, "title": s.title,
                                    "summary": registry.get(s.id).summary, "why": s.why, "missing": s.missing,
                                    "before": s.before, "after": s.after} for s in r.suggestions],
                         "conditional": r.conditional})
    (HERE / f"unseen_pairs_{name}.json").write_text(json.dumps(pairs, indent=1) + "\n")
    judge = repos.DEFAULT_CACHE / f"unseen_judge_{name}.json"
    judge.write_text(json.dumps(view, indent=1))
    n = sum(len(p["shown"]) for p in pairs)
    print(f"{len(pairs)} kernels, {n} shown pairs -> {(HERE / f'unseen_pairs_{name}.json').name}; judge view: {judge}")
    return 0


def report(name: str, note: str = "") -> int:
    pairs = json.loads((HERE / f"unseen_pairs_{name}.json").read_text())
    verdicts = json.loads((HERE / f"unseen_verdicts_{name}.json").read_text())
    by_pair = {(v["kernel"], v["skeleton"]): v["verdict"] for v in verdicts["pairs"]}
    first = {v["kernel"]: v for v in verdicts["kernels"]}
    got = [by_pair.get((p["kernel"], s["skeleton"]), "unjudged") for p in pairs for s in p["shown"]]
    c, i, u = got.count("correct"), got.count("incorrect"), got.count("unclear")
    with_one = sum(1 for p in pairs if p["shown"])
    idea = sum(1 for p in pairs if first.get(p["kernel"], {}).get("among_shown"))
    line = (f"{len(pairs)} kernels from {len({p['kernel'].split('@')[0] for p in pairs})} repositories; "
            f"{len(got)} shown pairs: {c} correct, {i} incorrect, {u} unclear, {got.count('unjudged')} unjudged; "
            f"precision {c / (c + i):.3f}" if c + i else "precision n/a")
    line += (f"; kernels with a shown suggestion {with_one}/{len(pairs)}; expert's first idea among them "
             f"{idea}/{len(pairs)}")
    print(line)
    with LOG.open("a") as fh:
        fh.write(f"\n## {time.strftime('%Y-%m-%d %H:%M')} — `python -m benchmarks.retrieval.unseen report --name "
                 f"{name}`\n\n{line}. Judged by: {verdicts.get('judged_by', '?')}. {note}\n")
    return 0


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=("sample", "report"))
    ap.add_argument("--name", required=True)
    ap.add_argument("--note", default="")
    ap.add_argument("--cache", type=Path, default=repos.DEFAULT_CACHE)
    a = ap.parse_args()
    sys.exit(sample(a.name, a.cache) if a.command == "sample" else report(a.name, a.note))
