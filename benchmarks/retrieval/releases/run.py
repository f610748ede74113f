"""The release-based retrieval benchmark (kept as a dev set: its test split overlaps what the
catalog was written from — see benchmarks/retrieval/README.md).

Retrieval quality: does skel hand back the technique a real optimisation applied?

    python -m benchmarks.retrieval.releases.run               # dev split (what we tune on)
    python -m benchmarks.retrieval.releases.run --split test  # the held-out third: report only
    python -m benchmarks.retrieval.releases.run --smoke       # a few cases, hash embedder (CI)

Each case in cases.json is a real kernel *before* an optimisation in a PyPI release and the
skeleton ids the next release's change applied (labelled by reading the diff). For every
case we rank the catalog for the "before" kernel with skel and with three baselines, all
in one run:

- ``bm25``: BM25 over the skeletons' docs and templates, the kernel's source as query;
- ``embed``: nearest skeleton docs by MiniLM embedding of the kernel's source;
- ``frequent``: always the techniques most used in the knowledge base.

The knowledge base is mined from the newest "after" release of each package in the cases;
the case's own file is hidden from the neighbours skel ranks with (never the "before" file
itself, which is in none of the mined releases). Metrics: recall@1/3/5 (share of expected
ids in the top k, averaged), MRR (first expected id), and a per-case list of misses with
the reason.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

from benchmarks.retrieval.metrics import (  # noqa: F401  (KS, recall_at, reciprocal_rank: re-exported for the tests)
    BM25, KS, cosine_rank, recall_at, reciprocal_rank, skeleton_doc, summarise)
from benchmarks.retrieval.releases import fetch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent.parent


# --- the run ----------------------------------------------------------------------------

def newest_after(cases: list[dict]) -> dict[str, str]:
    from skel.skeletons.base import version_tuple

    out: dict[str, str] = {}
    for c in cases:
        v = c["after"]
        if c["package"] not in out or version_tuple(v) > version_tuple(out[c["package"]]):
            out[c["package"]] = v
    return out


def build_kb(cases: list[dict], cache: Path, store: Path, embedder):
    from skel.miner.mine import mine
    from skel.miner.sources import DirectorySource
    from skel.store.knowledge import KnowledgeBase

    kb = KnowledgeBase.open(str(store))
    for pkg, version in sorted(newest_after(cases).items()):
        root = fetch.ensure(pkg, version, cache)
        t = time.perf_counter()
        # each release unpacks into its own folder: a newer one replaces the package's older one
        rep = mine(DirectorySource(root, fetch.norm(pkg), version), kb, embedder=embedder,
                   cache_root=cache / "facts-cache", replace=True)
        print(f"  knowledge base: {pkg} {version}: {rep.kernels} kernels "
              f"({rep.parsed} files parsed, {time.perf_counter() - t:.1f}s)", flush=True)
    return kb


def diagnose(case, kf, ranked: list[str], registry_ids: set[str]) -> list[str]:
    from skel.skeletons.registry import get

    reasons = []
    for sid in case["expected"]:
        if sid in ranked[:5]:
            continue
        if sid not in registry_ids:
            reasons.append(f"{sid}: not in the catalog")
            continue
        a = get(sid).assess(kf)
        where = ranked.index(sid) + 1 if sid in ranked else "?"
        if a.present is not None and a.kind == "refine":
            reasons.append(f"{sid}: refinement ranked too low (rank {where}; missing {'; '.join(a.refine)})")
        elif a.present is not None:
            reasons.append(f"{sid}: judged already present ({'; '.join(map(str, a.present)) or 'negated'})")
        elif a.kind == "near-miss":
            reasons.append(f"{sid}: near miss ranked too low (rank {where}; missing {'; '.join(a.missing)})")
        elif a.failed:
            related = f" (related at rank {where})" if sid in ranked else ""
            reasons.append(f"{sid}: precondition failed{related}: {'; '.join(a.failed)}")
        else:
            reasons.append(f"{sid}: ranked too low (rank {where})")
    return reasons


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--split", choices=["dev", "test", "all"], default="dev")
    ap.add_argument("--cache", type=Path, default=fetch.DEFAULT_CACHE)
    ap.add_argument("--smoke", action="store_true", help="liger-kernel cases only, hash embedder: a fast CI check")
    ap.add_argument("--json", dest="json_out", type=Path, help="also write the per-case results here")
    ap.add_argument("--misses", action="store_true", help="print every miss with its reason")
    args = ap.parse_args(argv)

    from skel.embed import HashEmbedder, default_embedder
    from skel.kernels.triton import extract_file
    from skel.retriever.suggest import suggest_for
    from skel.skeletons.registry import all_skeletons

    cases = fetch.load_cases()
    if args.smoke:
        cases = [c for c in cases if fetch.norm(c["package"]) == "liger-kernel"][:8]
    elif args.split != "all":
        cases = [c for c in cases if c["split"] == args.split]
    if not cases:
        print("no cases selected", file=sys.stderr)
        return 2

    bulk = HashEmbedder() if args.smoke else default_embedder(bulk=True)
    query_embedder = HashEmbedder() if args.smoke else default_embedder()
    skeletons = all_skeletons()
    ids = {s.id for s in skeletons}
    store = args.cache / ("store-smoke" if args.smoke else "store")
    print(f"{len(cases)} cases ({'smoke' if args.smoke else args.split}); knowledge base at {store}", flush=True)
    # one knowledge base for every split: the newest "after" release of each package in
    # the whole cases file, so dev and test runs rank against the same mined kernels
    kb = build_kb(cases if args.smoke else fetch.load_cases(), args.cache, store, bulk)

    bm25 = BM25({s.id: skeleton_doc(s) for s in skeletons})
    doc_vecs = dict(zip([s.id for s in skeletons],
                        query_embedder.embed([f"{s.title}. {s.summary} {s.section('What it does')}"
                                              for s in skeletons])))
    stats = kb.stats()
    frequent = sorted(ids, key=lambda i: (-stats.of(i).kernels, i))

    runs: dict[str, list[tuple[list[str], list[str]]]] = {"skel": [], "bm25": [], "embed": [], "frequent": []}
    per_case = []
    for c in cases:
        before = fetch.source_of(c, "before", args.cache)
        kernels = {k.name: k for k in extract_file(before, c["path"])}
        kf = kernels.get(c["function"])
        if kf is None:
            print(f"  ! {c['id']}: {c['function']} not found in {c['package']} {c['before']} {c['path']}")
            continue
        exclude = {"$or": [{"source": {"$ne": fetch.norm(c["package"])}}, {"file": {"$ne": c["path"]}}]}
        res = suggest_for(kf, kb, k=len(skeletons), embedder=query_embedder, exclude=exclude)
        ranked = [s.id for s in res.suggestions]
        expected = c["expected"]
        runs["skel"].append((ranked, expected))
        runs["bm25"].append((bm25.rank(kf.source), expected))
        runs["embed"].append((cosine_rank(query_embedder.embed([kf.source])[0], doc_vecs), expected))
        runs["frequent"].append((frequent, expected))
        misses = diagnose(c, kf, ranked, ids)
        per_case.append({"id": c["id"], "expected": expected, "top5": ranked[:5], "misses": misses,
                         "kinds": {s.id: s.kind for s in res.suggestions[:5]}})

    rows = [summarise(name, r) for name, r in runs.items()]
    from skel.tables import table

    print()
    print(table(["method", "cases", "R@1", "R@3", "R@5", "MRR"],
                [[r["method"], r["cases"]] + [round(r[k], 3) for k in ("R@1", "R@3", "R@5", "MRR")] for r in rows]))
    skel_row = rows[0]
    print()
    for r in rows[1:]:
        print(f"skel vs {r['method']}: R@5 {skel_row['R@5'] - r['R@5']:+.3f}, MRR {skel_row['MRR'] - r['MRR']:+.3f}")
    missed = [p for p in per_case if p["misses"]]
    print(f"\n{len(missed)} of {len(per_case)} cases have an expected technique outside skel's top 5")
    if args.misses:
        for p in missed:
            for m in p["misses"]:
                print(f"  {p['id']}: {m}   (top5: {', '.join(p['top5']) or 'none'})")
    else:
        reasons = Counter(m.split(": ", 1)[1].split(" (")[0].split(":")[0] for p in missed for m in p["misses"])
        for reason, n in reasons.most_common():
            print(f"  {n:3d}  {reason}")
    if args.split == "dev" and not args.smoke:
        # the hand-checked precision of the top 5 (precision_sample.json), on the current top 5s
        from benchmarks.retrieval.releases import precision_sample

        tmp = args.cache / "dev-results.json"
        tmp.write_text(json.dumps({"cases": per_case}))
        p = precision_sample.precision(precision_sample.sample(str(tmp)))
        if p["unjudged"]:
            print(f"\nprecision@5: {len(p['unjudged'])} of {p['sampled']} sampled suggestions not judged yet "
                  f"(python -m benchmarks.retrieval.releases.precision_sample {tmp})")
        else:
            print(f"\nprecision@5 (hand-checked sample of {p['sampled']}): {p['precision']} "
                  f"({p['correct']} correct, {p['incorrect']} incorrect, {p['unclear']} unclear)")
    if args.json_out:
        args.json_out.write_text(json.dumps({"summary": rows, "cases": per_case}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
