"""Precision of the shown list on repositories skel has never seen, judged by people who
did not write the ranking.

    python -m benchmarks.retrieval.unseen sample --name unseen1   # draw kernels, rank, write the judge view
    python -m benchmarks.retrieval.unseen report --name unseen1   # precision from the judges' verdicts

The repositories (``DRAWS[name]``, pinned commits) are in no benchmark of skel (``cases.json``,
the precision draws), cited by no skeleton, and were never read while changing the ranking.
``sample`` draws ``TRITON`` Triton kernels and ``CUDA`` CUDA kernels per repository with a
seed from the draw's name, ranks each as a user would (``skel suggest`` at the judges'
target: sm_90, CUDA, Triton 3.6; no sizes; the default store), and writes:

- ``unseen_pairs_<name>.json`` (committed): each kernel, its listed suggestions (ids, kinds,
  probabilities, shown or held back), what was named conditional;
- the judge view, in the cache (never committed: it quotes the repositories' code paths):
  the same with each shown suggestion's title, summary, why-lines and template, and where
  the kernel is in the unpacked repository. No score and no probability: the judge sees
  what a user would act on, not how sure skel is.

A judge fills ``unseen_verdicts_<name>.json``: per listed pair ``correct`` / ``incorrect`` /
``unclear`` with a one-line reason, and per kernel the optimisation an expert would try
first (``first_idea``: a skeleton id from `skel skeletons list`, or a few words). The judge
sees every fitting technique's top 5 (``--all``), not which of them the default list shows:
the verdicts give the shown list's precision and a calibration check at once.
``report`` prints precision of the shown list, the share of
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
#: draw name -> {owner/name: commit}: repositories in no benchmark and no skeleton reference when
#: the draw was made. A draw's repositories are spent with it: unseen1's five were mined for
#: history (#38) afterwards and skeletons now cite some of them, so a later draw takes new ones.
DRAWS = {
    "unseen1": {
        "thu-ml/SageAttention": "d1a57a5",
        "apple/ml-cross-entropy": "d42911f",
        "facebookresearch/xformers": "ca6d2aa0",
        "bitsandbytes-foundation/bitsandbytes": "95f9af30",
        "hpcaitech/ColossalAI": "4f9953be3",
    },
    "unseen2": {
        "ELS-RD/kernl": "91e2cd92d",
        "FlagOpen/FlagAttention": "ee91638de",
        "ModelCloud/GPTQModel": "f4c327a17",
        "NVIDIA/apex": "6424da3b4",
        "kvcache-ai/ktransformers": "95009ea68",
    },
}
TRITON, CUDA = 5, 2
CODE = (".py", ".cu", ".cuh", ".h", ".hpp", ".cpp")
TARGET = ("cuda", 90, "3.6.0")


def _tree(repo: str, commit: str, cache: Path) -> Path:
    """The repository's files at ``commit``, unpacked once into the cache."""
    dest = cache / "unseen" / f"{repo.replace('/', '+')}@{commit}"
    if not (dest / ".done").is_file():
        dest.mkdir(parents=True, exist_ok=True)
        git = repos.MIRRORS / repo.replace("/", "+") / "repo"
        if not git.is_dir():
            git = repos.ensure(repo, cache)
        # code files only, one by one: a snapshot may lack large binary blobs (images), which
        # `git archive` refuses, and kernels are in these files
        names = subprocess.run(["git", "-C", str(git), "ls-tree", "-r", "--name-only", commit], check=True,
                               capture_output=True, text=True).stdout.splitlines()
        for name in names:
            if Path(name).suffix in CODE:
                blob = subprocess.run(["git", "-C", str(git), "show", f"{commit}:{name}"], capture_output=True)
                if blob.returncode == 0:
                    (dest / name).parent.mkdir(parents=True, exist_ok=True)
                    (dest / name).write_bytes(blob.stdout)
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
    if name not in DRAWS:
        raise SystemExit(f"no repositories for draw {name!r}: add them to DRAWS (have {', '.join(DRAWS)})")
    for repo, commit in DRAWS[name].items():
        root = _tree(repo, commit, cache)
        triton, cuda = _kernels(root)
        rng = random.Random(f"{name}:{repo}")
        chosen = rng.sample(triton, min(TRITON, len(triton))) + rng.sample(cuda, min(CUDA, len(cuda)))
        print(f"{repo}@{commit}: {len(triton)} Triton and {len(cuda)} CUDA kernels, {len(chosen)} drawn", flush=True)
        for rel, kf in sorted(chosen, key=lambda t: (t[0], t[1].name)):
            # every fitting technique's top 5, each with its probability and whether the default
            # list shows it; the judge view has neither
            (r,) = api.suggest(root / rel, kernel=kf.name, target=target, show_all=True)
            key = f"{repo}@{commit}:{rel}:{kf.name}"
            listed = [{"skeleton": s.id, "kind": s.kind, "probability": s.probability,
                       "shown": not s.below_threshold} for s in r.suggestions]
            pairs.append({"kernel": key, "listed": listed, "conditional": [d["id"] for d in r.conditional]})
            view.append({"kernel": key, "file": str(root / rel), "lines": [r.line_start, r.line_end],
                         "suggestions": [{"skeleton": s.id, "kind": s.kind, "title": s.title,
                                    "summary": registry.get(s.id).summary, "why": s.why, "missing": s.missing,
                                    "before": s.before, "after": s.after} for s in r.suggestions],
                         "conditional": r.conditional})
    (HERE / f"unseen_pairs_{name}.json").write_text(json.dumps(pairs, indent=1) + "\n")
    judge = repos.DEFAULT_CACHE / f"unseen_judge_{name}.json"
    judge.write_text(json.dumps(view, indent=1))
    n = sum(len(p["listed"]) for p in pairs)
    print(f"{len(pairs)} kernels, {n} listed pairs -> {(HERE / f'unseen_pairs_{name}.json').name}; judge view: {judge}")
    return 0


def report(name: str, note: str = "") -> int:
    pairs = json.loads((HERE / f"unseen_pairs_{name}.json").read_text())
    verdicts = json.loads((HERE / f"unseen_verdicts_{name}.json").read_text())
    by_pair = {(v["kernel"], v["skeleton"]): v["verdict"] for v in verdicts["pairs"]}
    first = {v["kernel"]: v for v in verdicts["kernels"]}
    from benchmarks.retrieval.calibrate import curve

    def tally(which: list[tuple[dict, dict]]) -> str:
        got = [by_pair.get((p["kernel"], s["skeleton"]), "unjudged") for p, s in which]
        c, i = got.count("correct"), got.count("incorrect")
        return (f"{len(got)} pairs: {c} correct, {i} incorrect, {got.count('unclear')} unclear, "
                f"{got.count('unjudged')} unjudged; precision " + (f"{c / (c + i):.3f}" if c + i else "n/a"))

    listed = [(p, s) for p in pairs for s in p["listed"]]
    shown = [(p, s) for p, s in listed if s["shown"]]
    with_one = {p["kernel"] for p, _ in shown}
    # the expert's first idea is among the shown suggestions (the judge names it per kernel)
    idea = sum(1 for p in pairs if first.get(p["kernel"], {}).get("first_idea") in
               {s["skeleton"] for s in p["listed"] if s["shown"]})
    line = (f"{len(pairs)} kernels from {len({p['kernel'].split('@')[0] for p in pairs})} repositories. "
            f"Shown list: {tally(shown)}; kernels with a shown suggestion {len(with_one)}/{len(pairs)}; "
            f"expert's first idea among them {idea}/{len(pairs)}. Every listed pair (top 5, threshold 0): "
            f"{tally(listed)}")
    print(line)
    judged = [(s["probability"], by_pair[(p["kernel"], s["skeleton"])] == "correct") for p, s in listed
              if by_pair.get((p["kernel"], s["skeleton"])) in ("correct", "incorrect")]
    print("calibration on this draw (every listed pair):")
    for b in curve(judged):
        print(f"  {b['bin']:9} n={b['n']:3d} predicted {b['predicted']:.3f} observed {b['observed']:.3f}"
              f"  {'within 0.1' if b['within_0.1'] else 'OFF'}")
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
