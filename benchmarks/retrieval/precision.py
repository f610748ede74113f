"""Hand-checked precision@5 on kernels skel was never tuned on: sglang and vLLM wheels.

    python -m benchmarks.retrieval.precision sample   # rank, sample pairs, write precision_pairs.json
    python -m benchmarks.retrieval.precision report   # precision from the verdicts in precision.json
    python -m benchmarks.retrieval.precision sample --sample fresh2   # another draw of kernels (its own seed),
    python -m benchmarks.retrieval.precision report --sample fresh2   #   pairs in precision_pairs_fresh2.json
    python -m benchmarks.retrieval.precision report --by status --samples ,fresh2   # verdicts by evidence status
    python -m benchmarks.retrieval.precision rescore --samples ,fresh2   # today's top 5s of spent draws
    python -m benchmarks.retrieval.precision track-record   # verdicts per skeleton -> skel/data/track_record.json

A sample whose verdicts were read while changing skel is spent: its number says how the
change did on what it was tuned on. Quote a sample drawn after the change (``--sample``
names a new draw: the name seeds the choice of kernels).

``sample`` takes every Triton kernel (device helpers excluded) of the sglang and vLLM wheels
below, draws KERNELS of them per package with a fixed seed, ranks each with skel against the
commit benchmark's knowledge base (benchmark repositories before the cutoff; build it with
run.py first), and writes every (kernel, suggested skeleton) pair of their top 5s, with the
kernel's source and skel's "why", to a file in the cache for a person to judge (the committed
precision_pairs.json holds the pairs without the source).

A verdict (precision.json) says whether the technique makes sense for that kernel and is not
already there: ``correct`` / ``incorrect`` / ``unclear``, with a one-line reason. Verdicts are
about a (kernel, skeleton) pair, so they survive ranking changes; pairs a new ranking brings
in are listed as unjudged by ``report`` and must be judged before the number is quoted.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

from benchmarks.retrieval import repos

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

PACKAGES = (("sglang", "0.5.14"), ("vllm", "0.33.0"))
SEED, KERNELS = 20261201, 10
PAIRS = HERE / "precision_pairs.json"  # the sampled pairs (committed; no kernel source)
# the same pairs with each kernel's source and skel's "why", for the person judging them: kept in
# the cache, never committed (it would copy sglang's and vLLM's code into this repository)
JUDGE_VIEW = repos.DEFAULT_CACHE / "precision_pairs_with_source.json"
VERDICTS = HERE / "precision.json"
#: the verdicts counted per skeleton, shipped with skel (``skel.store.evidence.track_records``)
TRACK_RECORD = ROOT / "skel" / "data" / "track_record.json"


def kernels_of(pkg: str, version: str, cache: Path) -> list:
    from benchmarks.retrieval.releases import fetch  # pip download + unpack, cached

    from skel.errors import SkelError
    from skel.kernels.importers import folder_graph, needs_importers, settle_backends
    from skel.kernels.triton import extract_file

    root = fetch.ensure(pkg, version, cache, verbose=False)
    # who imports each file, and for which platform, as `skel suggest` reads it in the package
    importers = folder_graph(root, pkg)
    out = []
    for f in sorted(root.rglob("*.py")):
        text = f.read_text(encoding="utf-8", errors="replace")
        if "triton" not in text or "jit" not in text:
            continue
        rel = f.relative_to(root).as_posix()
        try:
            kernels = extract_file(text, rel)
        except (SkelError, SyntaxError, ValueError):
            continue
        if needs_importers(kernels):
            settle_backends(importers, rel, kernels)
        out += [(rel, k) for k in kernels]
    return out


#: the named draws in the order they were made: each excludes the kernels of those before it,
#: so any of them can be drawn again identically; a new name excludes all of these
DRAWS = ("", "fresh2", "fresh3", "fresh4", "fresh5", "fresh6", "fresh7", "fresh8", "fresh9", "fresh10", "fresh11",
         "fresh12", "fresh13", "fresh14", "fresh15", "fresh16", "fresh17", "fresh18", "fresh19")


def _earlier(name: str) -> list[str]:
    before = DRAWS[:DRAWS.index(name)] if name in DRAWS else DRAWS
    return [n for n in before if _paths(n)[0].is_file()]


def _paths(name: str) -> tuple[Path, Path, str]:
    """(pairs file, judge view, seed) of a named sample; "" is the first draw."""
    if not name:
        return PAIRS, JUDGE_VIEW, str(SEED)
    return (HERE / f"precision_pairs_{name}.json", repos.DEFAULT_CACHE / f"precision_pairs_{name}_with_source.json",
            f"{SEED}:{name}")


def sample(cache: Path, name: str = "", kernels: int = KERNELS) -> int:
    from skel.embed import default_embedder
    from skel.retriever.suggest import suggest_for
    from skel.skeletons.base import Target
    from skel.store.knowledge import KnowledgeBase

    # draws after fresh18 are ranked as the judges of issue #35 ran skel (`--arch sm90 --backend
    # cuda --triton 3.6.0`) and show what a user sees: the list over the probability threshold
    target = None if name in DRAWS else Target(backend="cuda", cc=90, triton="3.6.0")

    pairs_file, judge_view, seed = _paths(name)
    kb = KnowledgeBase.open(str(cache / "store-commits"), create=False)
    embedder = default_embedder()
    pairs = []
    for pkg, version in PACKAGES:
        found = kernels_of(pkg, version, cache)
        if name:  # a later draw never repeats a kernel of an earlier one (their verdicts were read)
            earlier = {p["kernel"] for n in _earlier(name) for p in json.loads(_paths(n)[0].read_text())}
            found = [(path, kf) for path, kf in found if f"{pkg}=={version}:{path}:{kf.name}" not in earlier]
        chosen = random.Random(f"{seed}:{pkg}").sample(found, min(kernels, len(found)))
        print(f"{pkg} {version}: {len(found)} kernels, {len(chosen)} sampled", flush=True)
        for path, kf in sorted(chosen, key=lambda t: (t[0], t[1].name)):
            # new draws: the top 5 of every fitting technique, each marked with its probability and
            # whether the default list shows it: the judge sees neither (the judge view leaves them
            # out), and the verdicts give both the shown list's precision and a calibration check
            res = suggest_for(kf, kb, k=5, embedder=embedder, target=target, show_all=target is not None)
            if not res.suggestions and target is not None:  # a kernel with nothing listed counts too
                pairs.append({"kernel": f"{pkg}=={version}:{path}:{kf.name}", "skeleton": None, "rank": 0,
                              "kind": None, "missing": [], "why": [], "source": kf.source})
            for rank, s in enumerate(res.suggestions, 1):
                extra = ({"probability": s.probability, "shown": not s.below_threshold}
                         if target is not None else {})
                pairs.append({"kernel": f"{pkg}=={version}:{path}:{kf.name}", "skeleton": s.id, "rank": rank,
                              "kind": s.kind, "missing": list(s.missing),
                              "why": [str(w) for w in getattr(s, "why", [])][:6],
                              "source": kf.source, **extra})
    judge_view.parent.mkdir(parents=True, exist_ok=True)
    judge_view.write_text(json.dumps([{k: v for k, v in p.items() if k not in ("probability", "shown")}
                                      for p in pairs], indent=1))
    pairs_file.write_text(json.dumps([{k: v for k, v in p.items() if k not in ("source", "why")} for p in pairs],
                                     indent=1))
    print(f"{len(pairs)} pairs from {2 * kernels} kernels -> {pairs_file.relative_to(ROOT)} "
          f"(with sources, to judge: {judge_view})")
    return 0


def _group_key(by: str):
    """What ``report --by`` groups pairs by: the suggestion's tier, its skeleton (or both),
    or the skeleton's verification status from the shipped GPU evidence (default target)."""
    if by == "kind":
        return lambda p: p.get("kind", "match")
    if by == "skeleton":
        return lambda p: p["skeleton"]
    if by == "skeleton-kind":
        return lambda p: f"{p['skeleton']} ({p.get('kind', 'match')})"
    from skel.skeletons.base import Target
    from skel.skeletons.registry import get
    from skel.skeletons.status import status_of
    from skel.store.evidence import merge_evidence, shipped_verifications

    runs = merge_evidence(shipped_verifications())

    def status(p: dict) -> str:
        s = get(p["skeleton"])
        return status_of(runs.get(s.id, []), Target(), triton_bound="triton" in s.languages).basis.value
    return status


def report_by(by: str, names: list[str]) -> int:
    """Verdicts of the named samples' pairs, grouped (``--by kind|skeleton|skeleton-kind|status``)."""
    verdicts = {(v["kernel"], v["skeleton"]): v["verdict"] for v in json.loads(VERDICTS.read_text())["verdicts"]}
    key = _group_key(by)
    groups: dict[str, dict[str, int]] = {}
    for name in names:
        for p in json.loads(_paths(name)[0].read_text()):
            g = groups.setdefault(key(p), {"correct": 0, "incorrect": 0, "unclear": 0, "unjudged": 0})
            g[verdicts.get((p["kernel"], p["skeleton"]), "unjudged")] += 1
    print(f"samples: {', '.join(n or 'first' for n in names)}; grouped by {by}")
    for g, c in sorted(groups.items(), key=lambda kv: (-sum(kv[1].values()), kv[0])):
        judged = c["correct"] + c["incorrect"]
        print(f"  {g}: {c['correct']} correct, {c['incorrect']} incorrect, {c['unclear']} unclear, "
              f"{c['unjudged']} unjudged" + (f"; precision {c['correct'] / judged:.3f}" if judged else ""))
    return 0


def report(name: str = "", second: str = "") -> int:
    drawn = json.loads(_paths(name)[0].read_text())
    # draws after fresh18 also list the kernels that got nothing shown (skeleton None)
    pairs = [p for p in drawn if p["skeleton"] is not None]
    kernels = {p["kernel"] for p in drawn}
    print(f"kernels drawn: {len(kernels)}; with a listed suggestion: {len({p['kernel'] for p in pairs})}")
    verdicts = {(v["kernel"], v["skeleton"]): v for v in json.loads(VERDICTS.read_text())["verdicts"]} \
        if VERDICTS.is_file() else {}
    if second:  # another judge's verdicts on the same draw: its precision, and how often the two agree
        other = {(v["kernel"], v["skeleton"]): v["verdict"] for v in json.loads(Path(second).read_text())}
        mine = [verdicts.get((p["kernel"], p["skeleton"]), {}).get("verdict") for p in pairs]
        theirs = [other.get((p["kernel"], p["skeleton"])) for p in pairs]
        c, i = theirs.count("correct"), theirs.count("incorrect")
        same = sum(1 for a, b in zip(mine, theirs) if a is not None and a == b)
        print(f"second judge ({second}): {len(pairs)} pairs, {c} correct, {i} incorrect, "
              f"{theirs.count(None)} unjudged" + (f"; precision@5 {c / (c + i):.3f}" if c + i else ""))
        print(f"  agreement with precision.json: {same} of {len(pairs)} pairs")
    got = [verdicts.get((p["kernel"], p["skeleton"]), {}).get("verdict") for p in pairs]
    if any("shown" in p for p in pairs):  # a draw of the calibrated list: shown list, and the curve
        _calibrated_report(drawn, pairs, got)
    correct, incorrect, unclear = got.count("correct"), got.count("incorrect"), got.count("unclear")
    unjudged = [(p["kernel"], p["skeleton"]) for p, v in zip(pairs, got) if v is None]
    for pkg, _ in PACKAGES:
        sub = [v for p, v in zip(pairs, got) if p["kernel"].startswith(pkg + "==")]
        c, i = sub.count("correct"), sub.count("incorrect")
        print(f"{pkg}: {len(sub)} pairs, {c} correct, {i} incorrect, {sub.count('unclear')} unclear"
              + (f", precision {c / (c + i):.3f}" if c + i else ""))
    structural = [v for p, v in zip(pairs, got) if p.get("kind", "match") in ("match", "refine")]
    c, i = structural.count("correct"), structural.count("incorrect")
    print(f"full matches and refinements only: {len(structural)} pairs, {c} correct, {i} incorrect"
          + (f", precision {c / (c + i):.3f}" if c + i else ""))
    print(f"all: {len(pairs)} pairs, {correct} correct, {incorrect} incorrect, {unclear} unclear, "
          f"{len(unjudged)} unjudged" + (f"; precision@5 {correct / (correct + incorrect):.3f}"
                                         if correct + incorrect else ""))
    for k, s in unjudged:
        print(f"  unjudged: {k}  {s}")
    return 1 if unjudged else 0


def _calibrated_report(drawn: list[dict], pairs: list[dict], got: list) -> None:
    """Precision of the list skel shows by default (probability over the threshold), the
    share of kernels it answers, and how the probabilities compare with the verdicts."""
    from benchmarks.retrieval.calibrate import curve

    kernels = {p["kernel"] for p in drawn}
    shown = [(p, v) for p, v in zip(pairs, got) if p["shown"]]
    c, i = sum(v == "correct" for _, v in shown), sum(v == "incorrect" for _, v in shown)
    print(f"shown list (over the threshold): {len(shown)} pairs, {c} correct, {i} incorrect"
          + (f", precision {c / (c + i):.3f}" if c + i else "") + f"; kernels with one shown: "
          f"{len({p['kernel'] for p, _ in shown})}/{len(kernels)}")
    judged = [(p["probability"], v == "correct") for p, v in zip(pairs, got) if v in ("correct", "incorrect")]
    print("calibration on this draw (every listed pair, top 5):")
    for b in curve(judged):
        print(f"  {b['bin']:9} n={b['n']:3d} predicted {b['predicted']:.3f} observed {b['observed']:.3f}"
              f"  {'within 0.1' if b['within_0.1'] else 'OFF'}")


def track_record(verdicts: list[dict] | None = None) -> dict:
    """Every hand-checked verdict (all draws) counted per skeleton: what `skel suggest` shows
    beside a suggestion as its track record. Each verdict is a pair skel suggested when the
    draw was ranked; the record is of the skeleton's suggestions, not of one ranking."""
    if verdicts is None:
        verdicts = json.loads(VERDICTS.read_text())["verdicts"]
    counts: dict[str, dict[str, int]] = {}
    for v in verdicts:
        c = counts.setdefault(v["skeleton"], {"correct": 0, "incorrect": 0, "unclear": 0})
        c[v["verdict"]] += 1
    return {"about": "hand-checked verdicts on skel's suggestions, per skeleton "
                     "(benchmarks/retrieval/precision.json); regenerate, never edit",
            "command": "python benchmarks/retrieval/precision.py track-record",
            "packages": [f"{p}=={v}" for p, v in PACKAGES],
            "kernels": len({v["kernel"] for v in verdicts}), "pairs": len(verdicts),
            "skeletons": dict(sorted(counts.items()))}


def write_track_record() -> int:
    data = track_record()
    TRACK_RECORD.write_text(json.dumps(data, indent=1) + "\n")
    print(f"{data['pairs']} verdicts on {data['kernels']} kernels, {len(data['skeletons'])} skeletons "
          f"-> {TRACK_RECORD.relative_to(ROOT)}")
    return 0


def rescore(cache: Path, names: list[str], dump: str = "") -> int:
    """Rank the kernels of spent draws again with today's skel and score the new top 5s with the
    verdicts already given. Those verdicts were read while changing skel, so this is a tuning
    signal (did a change drop the pairs it meant to, and keep the rest?), never a number to quote;
    pairs no draw judged are counted as unjudged."""
    from skel.embed import default_embedder
    from skel.retriever.suggest import suggest_for
    from skel.store.knowledge import KnowledgeBase

    verdicts = {(v["kernel"], v["skeleton"]): v for v in json.loads(VERDICTS.read_text())["verdicts"]}
    wanted = {p["kernel"] for n in names for p in json.loads(_paths(n)[0].read_text())}
    before = {(p["kernel"], p["skeleton"]) for n in names for p in json.loads(_paths(n)[0].read_text())}
    kb = KnowledgeBase.open(str(cache / "store-commits"), create=False)
    embedder = default_embedder()
    now: set[tuple[str, str]] = set()
    for pkg, version in PACKAGES:
        for path, kf in kernels_of(pkg, version, cache):
            key = f"{pkg}=={version}:{path}:{kf.name}"
            if key in wanted:
                now |= {(key, s.id) for s in suggest_for(kf, kb, k=5, embedder=embedder).suggestions}

    def tally(pairs: set[tuple[str, str]]) -> str:
        got = [verdicts[p]["verdict"] if p in verdicts else "unjudged" for p in pairs]
        c, i = got.count("correct"), got.count("incorrect")
        return (f"{len(pairs)} pairs, {c} correct, {i} incorrect, {got.count('unjudged')} unjudged"
                + (f"; precision {c / (c + i):.3f}" if c + i else ""))
    print(f"spent draws {', '.join(n or 'first' for n in names)}: {len(wanted)} kernels (a tuning signal only)")
    print(f"  as drawn:      {tally(before)}")
    print(f"  ranked today:  {tally(now)}")
    print(f"  dropped since: {tally(before - now)}")
    print(f"  new since:     {tally(now - before)}")
    print("  ranked today, by skeleton:")
    for sid in sorted({s for _, s in now}, key=lambda x: -sum(1 for _, s in now if s == x)):
        print(f"    {sid:28} {tally({p for p in now if p[1] == sid})}")
    for k, s in sorted(before - now):
        v = verdicts.get((k, s), {}).get("verdict", "unjudged")
        print(f"    dropped {v:9} {s:28} {k.split(':', 1)[1]}")
    if dump:
        Path(dump).write_text(json.dumps([{"kernel": k, "skeleton": s, **verdicts.get((k, s), {})}
                                          for k, s in sorted(now)], indent=1))
    return 0


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", nargs="?", choices=["sample", "report", "rescore", "track-record"],
                    default="report")
    ap.add_argument("--sample", default="", help="a named draw of kernels (default: the first one)")
    ap.add_argument("--by", choices=["kind", "skeleton", "skeleton-kind", "status"],
                    help="report: verdicts grouped by tier, skeleton or verification status, over the "
                         "samples named by --samples")
    ap.add_argument("--samples", default="", help="with --by or rescore: comma-separated sample names "
                                                  "('' = the first)")
    ap.add_argument("--kernels", type=int, default=KERNELS, help="sample: kernels drawn per package")
    ap.add_argument("--json", default="", help="rescore: write today's pairs with their verdicts to this file")
    ap.add_argument("--second", default="", help="report: another judge's verdicts on the same draw (a JSON "
                                                 "list of kernel/skeleton/verdict): its precision and the agreement")
    args = ap.parse_args()
    if args.command == "report" and args.by:
        sys.exit(report_by(args.by, args.samples.split(",")))
    if args.command == "track-record":
        sys.exit(write_track_record())
    if args.command == "rescore":
        sys.exit(rescore(repos.DEFAULT_CACHE, args.samples.split(","), args.json))
    if args.command == "sample":
        sys.exit(sample(repos.DEFAULT_CACHE, args.sample, args.kernels))
    sys.exit(report(args.sample, args.second))
