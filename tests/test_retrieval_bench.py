"""The retrieval benchmark's metrics, and a smoke run of it (CI's small version)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from benchmarks.retrieval.releases import run as bench
from conftest import ROOT


def test_metrics():
    ranked = ["a", "b", "c", "d", "e", "f"]
    assert bench.recall_at(ranked, ["c"], 1) == 0 and bench.recall_at(ranked, ["c"], 3) == 1
    assert bench.recall_at(ranked, ["a", "z"], 5) == 0.5
    assert bench.reciprocal_rank(ranked, ["z", "c"]) == pytest.approx(1 / 3)
    assert bench.reciprocal_rank(ranked, ["z"]) == 0


def test_bm25_prefers_the_matching_document():
    idx = bench.BM25({"softmax": "online softmax running max exp sum", "gemm": "matrix multiply tile dot"})
    assert idx.rank("tl.dot tile loop")[0] == "gemm"
    assert idx.rank("row max then exp")[0] == "softmax"


def test_cases_file_is_well_formed():
    from skel.skeletons.registry import all_skeletons

    cases = json.loads((ROOT / "benchmarks" / "retrieval" / "releases" / "cases.json").read_text())
    ids = {s.id for s in all_skeletons()}
    assert len(cases) >= 60
    assert len({e for c in cases for e in c["expected"]}) >= 15
    for c in cases:
        assert set(c["expected"]) <= ids, c["id"]
        assert c["split"] in ("dev", "test") and c["why"].strip()
    assert 0.25 <= sum(c["split"] == "test" for c in cases) / len(cases) <= 0.4


def test_smoke_run_end_to_end(tmp_path):
    """Downloads a few liger-kernel releases with pip, mines the newest, ranks the cases."""
    out = subprocess.run([sys.executable, "-m", "benchmarks.retrieval.releases.run", "--smoke",
                          "--cache", str(tmp_path / "cache"), "--json", str(tmp_path / "r.json")],
                         capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    result = json.loads((tmp_path / "r.json").read_text())
    methods = {r["method"]: r for r in result["summary"]}
    assert set(methods) == {"skel", "bm25", "embed", "frequent"}
    assert methods["skel"]["cases"] >= 5
    assert "method" in out.stdout and "R@5" in out.stdout
