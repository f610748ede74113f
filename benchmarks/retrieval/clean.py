"""Is the commit benchmark's test split clean? Checks, and (with --pin) fixes the references.

    python -m benchmarks.retrieval.clean            # report; exit 1 on a broken rule, 3 when only
                                                    # a size target (rule 5) is not met
    python -m benchmarks.retrieval.clean --pin      # rewrite unpinned references into benchmark
                                                    # repositories with the pre-cutoff commit they
                                                    # were checked at

The rules (benchmarks/retrieval/README.md):
1. time split: a test case's commit is dated on or after CUTOFF, a dev case's before it;
2. every skeleton reference into a benchmark repository points at code that existed before
   CUTOFF: its pin (a tag or commit named in the reference) is older than CUTOFF, and the
   path (and the function, when named) exists there;
3. no test kernel is cited by a skeleton: a case whose file a reference names, or named before
   the references were re-pinned (cited.txt), is not a test case;
4. no test case repeats a case of the release benchmark (benchmarks/retrieval/releases/),
   which the catalog was tuned on: the same kernel changed between the same two releases;
5. sizes: >= 150 test cases over >= 6 repositories, >= 40 catalog ids among their labels.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from benchmarks.retrieval import repos
from benchmarks.retrieval.metrics import ceiling

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

CUTOFF = "2025-07-01"
CASES = HERE / "cases.json"
LEGACY = HERE / "releases" / "cases.json"
CATALOG = ROOT / "skel" / "skeletons" / "catalog"

# how references and the release benchmark name the benchmark repositories
REPO_NAMES = {
    "flash-linear-attention": "fla-org/flash-linear-attention", "fla-core": "fla-org/flash-linear-attention",
    "liger-kernel": "linkedin/Liger-Kernel", "aiter": "ROCm/aiter", "torchao": "pytorch/ao",
    "lmdeploy": "InternLM/lmdeploy", "flaggems": "FlagOpen/FlagGems", "flag-gems": "FlagOpen/FlagGems",
    "gemlite": "mobiusml/gemlite", "unsloth": "unslothai/unsloth", "tritonbench": "meta-pytorch/tritonbench",
}
MIN_TEST, MIN_REPOS, MIN_IDS = 150, 6, 40


@dataclass
class Reference:
    skeleton: str
    file: Path
    line: str
    repo: str
    path: str
    function: str | None
    pin: str | None  # a tag (v0.2.2) or a commit sha named in the reference


def references() -> list[Reference]:
    """Every catalog reference line that names a file in a benchmark repository."""
    out = []
    for f in sorted(CATALOG.glob("[a-z]*/skeleton.py")):  # one folder per skeleton
        text = f.read_text()
        sid = re.search(r'\bid="([^"]+)"', text)
        refs = text.split("## References", 1)[1].split('"""', 1)[0] if "## References" in text else ""
        for line in refs.splitlines():
            if not line.startswith("- "):
                continue
            head = line[2:].split("`", 1)[0].strip().lower()
            repo = next((r for n, r in REPO_NAMES.items() if head.startswith(n)), None)
            paths = re.findall(r"`([\w./-]+\.py)`", line)
            if not repo or not paths:
                continue
            fn = re.findall(r"\(`(\w+)`", line)
            pin = re.search(r"\b(v\d+\.\d+(?:\.\d+)?|[0-9a-f]{10,40})\b", line)
            out.append(Reference(sid.group(1) if sid else f.parent.name, f, line, repo, paths[0],
                                 fn[0] if fn else None, pin.group(1) if pin else None))
    return out


def check_reference(ref: Reference, cutoff: str) -> tuple[str | None, str]:
    """(problem or None, the commit it was checked at)."""
    repo = repos.ensure(ref.repo)
    if ref.pin:
        try:
            sha = repos.git(repo, "rev-parse", "--verify", f"{ref.pin}^{{commit}}").strip()
        except RuntimeError:
            return f"pin {ref.pin} is not in the repository", ""
        if repos.commit_date(repo, sha)[:10] >= cutoff:
            return f"pin {ref.pin} is dated {repos.commit_date(repo, sha)[:10]}, not before {cutoff}", sha
    else:
        sha, _ = repos.last_commit_before(repo, cutoff)
    try:
        text = repos.show(repo, sha, ref.path)
    except RuntimeError:
        return f"{ref.path} does not exist at {sha[:10]} (before {cutoff})", sha
    if ref.function and not re.search(rf"\bdef {re.escape(ref.function)}\s*\(", text):
        return f"{ref.function} is not in {ref.path} at {sha[:10]} (before {cutoff})", sha
    return None, sha


def cited_files(refs: list[Reference]) -> set[tuple[str, str]]:
    """(repo, path) of every file a reference names now or named before the re-pin (cited.txt)."""
    frozen = [line.split(" ", 1) for line in (HERE / "cited.txt").read_text().splitlines()
              if line.strip() and not line.startswith("#")]
    return {(r.repo, r.path) for r in refs} | {(repo, path) for repo, path in frozen}


def cited(case: dict, files: set[tuple[str, str]]) -> bool:
    path = case["path"]
    return any(repo == case["repo"] and (path.endswith(p) or p.endswith(path)) for repo, p in files)


def _is_ancestor(repo: Path, a: str, b: str) -> bool:
    import subprocess

    return subprocess.run(["git", "--git-dir", str(repo), "merge-base", "--is-ancestor", a, b],
                          capture_output=True, timeout=60).returncode == 0


def _tag(repo: Path, version: str) -> str | None:
    for t in (f"v{version}", version):
        try:
            return repos.git(repo, "rev-parse", "--verify", "--quiet", f"{t}^{{commit}}").strip()
        except RuntimeError:
            continue
    return None


def in_release_benchmark(case: dict, legacy: list[dict]) -> bool:
    """The same change as a release-benchmark case: the same kernel, and the commit lies between
    that case's two releases (after the 'before' tag; up to the 'after' tag, or anywhere later
    when the repository has no such tag). Without the tags, any case on the same kernel counts."""
    for c in legacy:
        if REPO_NAMES.get(c["package"].lower()) != case["repo"]:
            continue
        same_file = case["path"].endswith(c["path"]) or c["path"].endswith(case["path"])
        if not (same_file and case["function"] in (c["function"], c.get("function_after"))):
            continue
        if "commit" not in case:
            return True
        repo = repos.ensure(case["repo"])
        before, after = _tag(repo, c["before"]), _tag(repo, c["after"])
        if before is None:
            return True
        if not _is_ancestor(repo, before, case["commit"]) or before == case["commit"]:
            continue
        if after is None or _is_ancestor(repo, case["commit"], after):
            return True
    return False


def utc_day(iso: str) -> str:
    """The UTC calendar day of an ISO 8601 timestamp (a +08:00 July 1st may be June 30th)."""
    import datetime as dt

    when = dt.datetime.fromisoformat(iso.replace("Z", "+00:00"))
    if when.tzinfo is None:
        return when.date().isoformat()
    return when.astimezone(dt.timezone.utc).date().isoformat()


def leaks(case: dict, files: set[tuple[str, str]], legacy: list[dict]) -> list[str]:
    """Why a case dated after the cutoff cannot be a test case (rules 3 and 4); [] if it can."""
    out = []
    if cited(case, files):
        out.append(f"its file {case['path']} is cited by a skeleton reference")
    if in_release_benchmark(case, legacy):
        out.append("it repeats a case of the release benchmark")
    return out


def exclude_leaks(cases: list[dict], refs: list[Reference]) -> int:
    """Move test cases that break rule 3 or 4 to split "excluded", saying why; returns how many."""
    legacy = json.loads(LEGACY.read_text())
    files = cited_files(refs)
    n = 0
    for c in cases:
        if c["split"] == "test" and (why := leaks(c, files, legacy)):
            c["split"], c["excluded_because"] = "excluded", "; ".join(why)
            n += 1
    return n


def check_cases(cases: list[dict], refs: list[Reference], cutoff: str, release_rule: bool = True) -> list[str]:
    """Rule violations. ``release_rule=False`` skips rule 4, which reads the repositories' tags
    (git history is not there on a machine without the mirrors, and rule 4 was applied when
    the cases were excluded)."""
    legacy = json.loads(LEGACY.read_text()) if release_rule else []
    files = cited_files(refs)
    problems = []
    for c in cases:
        on_or_after = utc_day(c["date"]) >= cutoff
        if c["split"] == "excluded":
            if not (on_or_after and c.get("excluded_because")):
                problems.append(f"{c['id']}: excluded cases must be dated after the cutoff and say why")
            continue
        if (c["split"] == "test") != on_or_after:
            problems.append(f"{c['id']}: split {c['split']} but dated {utc_day(c['date'])} UTC (cutoff {cutoff})")
        if c["split"] == "test":
            problems += [f"{c['id']}: {why}" for why in leaks(c, files, legacy)]
    return problems


def summary(cases: list[dict]) -> dict:
    from skel.skeletons.registry import all_skeletons

    ids = {s.id for s in all_skeletons()}
    test = [c for c in cases if c["split"] == "test"]
    labels = {e for c in test for e in c["expected"]}
    return {"test": len(test), "dev": sum(c["split"] == "dev" for c in cases),
            "excluded": sum(c["split"] == "excluded" for c in cases),
            "test_repos": sorted({c["repo"] for c in test}),
            "test_ids_in_catalog": sorted(labels & ids), "test_ids_not_in_catalog": sorted(labels - ids),
            "test_other_only": sum(1 for c in test if not set(c["expected"]) & ids),
            # labels outside the catalog: how many, and how many different techniques they name
            "test_other_labels": sum(len(c.get("other", [])) for c in test),
            "test_other_techniques": len({o for c in test for o in c.get("other", [])}),
            # the best any ranking of the catalog reaches on each split (labels only; no ranking run)
            "ceiling": {split: ceiling([c for c in cases if c["split"] == split])
                        for split in ("dev", "excluded", "test")}}


def pin_file(refs: list[Reference], shas: dict[int, str]) -> int:
    """Add ``checked at <sha> (before CUTOFF)`` to unpinned references; returns lines changed."""
    changed = 0
    for f in sorted({r.file for r in refs}):
        text = f.read_text()
        for r in refs:
            if r.file == f and not r.pin and shas.get(id(r)):
                new = r.line.rstrip() + f" — at `{shas[id(r)][:10]}`, before {CUTOFF}"
                if r.line in text:
                    text = text.replace(r.line, new, 1)
                    changed += 1
        f.write_text(text)
    return changed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=Path, default=CASES)
    ap.add_argument("--pin", action="store_true", help="write the checked commit into unpinned references")
    ap.add_argument("--exclude", action="store_true",
                    help="move test cases that break rule 3 or 4 to split 'excluded' (rewrites cases.json)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    refs = references()
    bad_refs, shas = [], {}
    for r in refs:
        problem, sha = check_reference(r, CUTOFF)
        shas[id(r)] = sha
        if problem:
            bad_refs.append(f"{r.skeleton}: {r.repo} {r.path}: {problem}")
    if args.pin:
        ok = [r for r in refs if not r.pin and shas[id(r)] and not any(
            b.startswith(f"{r.skeleton}: {r.repo} {r.path}:") for b in bad_refs)]
        print(f"pinned {pin_file(ok, shas)} references")
    cases = json.loads(args.cases.read_text()) if args.cases.is_file() else []
    if args.exclude:
        print(f"excluded {exclude_leaks(cases, refs)} test cases")
        args.cases.write_text(json.dumps(cases, indent=1) + "\n")
    bad_cases = check_cases(cases, refs, CUTOFF)
    s = summary(cases)
    size = []
    if s["test"] < MIN_TEST:
        size.append(f"{s['test']} test cases (< {MIN_TEST})")
    if len(s["test_repos"]) < MIN_REPOS:
        size.append(f"{len(s['test_repos'])} test repositories (< {MIN_REPOS})")
    if len(s["test_ids_in_catalog"]) < MIN_IDS:
        size.append(f"{len(s['test_ids_in_catalog'])} catalog ids among test labels (< {MIN_IDS})")
    if args.json:
        print(json.dumps({"cutoff": CUTOFF, "references": len(refs), "reference_problems": bad_refs,
                          "case_problems": bad_cases, "size_problems": size, **s}, indent=2))
    else:
        print(f"cutoff {CUTOFF}; {len(refs)} references into benchmark repositories; "
              f"{s['test']} test / {s['dev']} dev / {s['excluded']} excluded cases; "
              f"test over {len(s['test_repos'])} repositories; "
              f"{len(s['test_ids_in_catalog'])} catalog ids among test labels "
              f"({s['test_other_only']} test cases label only techniques outside the catalog; "
              f"{s['test_other_labels']} test labels name {s['test_other_techniques']} techniques "
              "it has no skeleton for)")
        print("ceiling (the best any ranking of the catalog reaches; labels outside it count as misses): "
              + "; ".join(f"{split} R@1 {r['R@1']:.3f} R@5 {r['R@5']:.3f}" for split, r in s["ceiling"].items()))
        for title, items in (("references", bad_refs), ("cases", bad_cases), ("size", size)):
            for p in items:
                print(f"  [{title}] {p}")
        print(("clean" if not (bad_refs or bad_cases) else f"{len(bad_refs) + len(bad_cases)} rule violations")
              + (f"; {len(size)} size target(s) of issue #8 not met" if size else ""))
    # a broken rule is a leak (exit 1); a size target not met is a shortfall to report (exit 3)
    return 1 if (bad_refs or bad_cases) else 3 if size else 0


if __name__ == "__main__":
    sys.exit(main())
