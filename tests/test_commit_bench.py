"""The clean commit benchmark (benchmarks/retrieval/): its rules and its cases file.

The rules are tested on a throwaway git repository with dated commits, so they need neither
the network nor the benchmark repositories' mirrors.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from benchmarks.retrieval import clean, metrics, repos
from conftest import ROOT

BENCH = ROOT / "benchmarks" / "retrieval"


def _git(repo, *args, date="2025-01-01T00:00:00+00:00"):
    env = {**os.environ, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date, "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


@pytest.fixture
def dated_repo(tmp_path, monkeypatch):
    """A repository 'acme/kernels' with a kernel file before the cutoff and a new one after."""
    work = tmp_path / "work"
    work.mkdir()
    _git(work, "init", "-q", "-b", "main")
    (work / "ops").mkdir()
    (work / "ops" / "old.py").write_text("def old_kernel():\n    pass\n")
    _git(work, "add", ".")
    _git(work, "commit", "-qm", "old", date="2025-03-01T00:00:00+00:00")
    _git(work, "tag", "v0.1.0")
    (work / "ops" / "new.py").write_text("def new_kernel():\n    pass\n")
    _git(work, "add", ".")
    _git(work, "commit", "-qm", "new", date="2025-09-01T00:00:00+00:00")
    _git(work, "tag", "v0.2.0")
    mirrors = tmp_path / "mirrors"
    (mirrors / "acme+kernels").mkdir(parents=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(mirrors / "acme+kernels" / "repo")], check=True)
    monkeypatch.setattr(repos, "MIRRORS", mirrors)
    monkeypatch.setattr(clean, "repos", repos)
    return "acme/kernels"


def _ref(repo, path, function=None, pin=None):
    return clean.Reference("sk", ROOT / "x.py", f"- acme `{path}`", repo, path, function, pin)


def test_a_reference_must_point_at_code_from_before_the_cutoff(dated_repo):
    ok, sha = clean.check_reference(_ref(dated_repo, "ops/old.py", "old_kernel"), "2025-07-01")
    assert ok is None and len(sha) == 40
    missing, _ = clean.check_reference(_ref(dated_repo, "ops/new.py", "new_kernel"), "2025-07-01")
    assert "does not exist" in missing
    wrong_fn, _ = clean.check_reference(_ref(dated_repo, "ops/old.py", "other_kernel"), "2025-07-01")
    assert "other_kernel is not in" in wrong_fn
    late_pin, _ = clean.check_reference(_ref(dated_repo, "ops/old.py", None, "v0.2.0"), "2025-07-01")
    assert "not before 2025-07-01" in late_pin
    early_pin, _ = clean.check_reference(_ref(dated_repo, "ops/old.py", None, "v0.1.0"), "2025-07-01")
    assert early_pin is None


def _case(**kw):
    base = {"id": "c", "repo": "acme/kernels", "path": "pkg/ops/k.py", "function": "k", "date": "2025-08-01",
            "split": "test", "expected": ["online-softmax"], "other": []}
    return {**base, **kw}


def test_the_case_rules_catch_every_kind_of_leak():
    refs = [_ref("acme/kernels", "ops/cited.py")]
    legacy = json.loads(clean.LEGACY.read_text())[0]
    legacy_repo = clean.REPO_NAMES[legacy["package"].lower()]
    problems = clean.check_cases([
        _case(id="fine"),
        _case(id="early", date="2025-06-30T23:00:00+00:00"),                        # rule 1
        _case(id="dev-late", split="dev", date="2025-07-02"),                       # rule 1
        _case(id="cited", path="pkg/ops/cited.py"),                                 # rule 3
        _case(id="old-ref", repo="fla-org/flash-linear-attention", path="fla/ops/attn/parallel.py"),  # cited.txt
        _case(id="repeat", repo=legacy_repo, path=legacy["path"], function=legacy["function"]),       # rule 4
    ], refs, "2025-07-01")
    flagged = {p.split(":")[0] for p in problems}
    assert flagged == {"early", "dev-late", "cited", "old-ref", "repeat"}
    moved = [_case(id="cited", path="pkg/ops/cited.py"), _case(id="fine")]
    assert clean.exclude_leaks(moved, refs) == 1
    assert moved[0]["split"] == "excluded" and "cited" in moved[0]["excluded_because"]
    assert moved[1]["split"] == "test" and not clean.check_cases(moved, refs, "2025-07-01")


def test_every_catalog_reference_into_a_benchmark_repository_is_found():
    refs = clean.references()
    assert refs, "the catalog cites fla and Liger kernels; none found means the parser broke"
    assert all(r.repo in clean.REPO_NAMES.values() and r.path.endswith(".py") for r in refs)


def test_the_cases_file_meets_the_benchmark_rules():
    """cases.json: well-formed, labels from the catalog or `other:`, rules 1-4 hold, and the sizes
    of issue #8 that it meets (>= 150 test cases over >= 6 repositories). The third size target,
    >= 40 catalog ids among the test labels, is not met (36: the techniques real post-cutoff commits
    applied); clean.py reports it, exit 3, and the README says so."""
    from skel.skeletons.registry import all_skeletons

    cases = json.loads((BENCH / "cases.json").read_text())
    ids = {s.id for s in all_skeletons()}
    for c in cases:
        assert set(c["expected"]) <= ids, c["id"]
        assert all(o.startswith("other:") for o in c.get("other", [])), c["id"]
        assert c["expected"] or c["other"], c["id"]
        assert len(c["commit"]) == 40 and len(c["parent"]) == 40 and c["why"].strip(), c["id"]
        assert c["split"] in ("test", "dev", "excluded"), c["id"]
    assert len({c["id"] for c in cases}) == len(cases)
    s = clean.summary(cases)
    assert s["test"] >= clean.MIN_TEST and len(s["test_repos"]) >= clean.MIN_REPOS
    # rule 4 reads the benchmark repositories' tags: only where their mirrors are on disk
    have_mirrors = all((repos.MIRRORS / r.replace("/", "+") / "repo" / "HEAD").is_file() for r in s["test_repos"])
    assert not clean.check_cases(cases, clean.references(), clean.CUTOFF, release_rule=have_mirrors)


def test_the_ceiling_is_the_best_any_ranking_of_the_catalog_scores():
    """A label outside the catalog is a miss for every ranking: the ceiling ranks a case's own
    catalog labels and scores them against all its labels."""
    cases = [{"expected": ["a"], "other": ["other:x"]},  # half of it is reachable
             {"expected": ["a", "b"], "other": []},       # all of it at 5, half at 1
             {"expected": [], "other": ["other:y"]}]      # none of it
    c = metrics.ceiling(cases)
    assert c["cases"] == 3
    assert c["R@1"] == pytest.approx((0.5 + 0.5 + 0) / 3)
    assert c["R@5"] == pytest.approx((0.5 + 1 + 0) / 3)
    # no ranking beats it: a perfect one on the catalog labels scores exactly the ceiling
    ranked = [(["b", "a", "z"], c_["expected"] + c_["other"]) for c_ in cases]
    assert metrics.summarise("any", ranked)["R@5"] <= c["R@5"]
    # the cases file reports it per split, below 1 wherever a split has `other:` labels
    s = clean.summary(json.loads((BENCH / "cases.json").read_text()))
    assert set(s["ceiling"]) == {"dev", "excluded", "test"}
    assert all(0 < r["R@5"] < 1 and r["R@1"] <= r["R@5"] for r in s["ceiling"].values())
