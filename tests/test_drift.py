"""`python -m benchmarks.evidence.drift`: each drift category from small synthetic run files."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.evidence import drift

# catalog ids, so each is judged as the catalog judges it (all Triton techniques paying in speed)
A, B, C, D, E, F, G, H = ("online-softmax", "exp2-log2e-folding", "eviction-hints", "contiguity-hints",
                          "epilogue-fusion", "hoist-loop-invariant", "grouped-l2-swizzle", "split-k-reduction")


def rec(skeleton, verdict="faster", speedup=1.3, triton="3.6.0", device="NVIDIA H200", subject="example", **kw):
    return {"skeleton": skeleton, "kernel": f"example:{skeleton}.py", "verdict": verdict, "subject": subject,
            "speedup": speedup, "device": device, "cc": 90, "backend": "cuda", "triton": triton, "noise": 0.02,
            "measure": "kernel", "date": "2026-12-01", **kw}


OLD = [rec(A), rec(B), rec(C, "no-effect", 1.0), rec(D), rec(E), rec(F, "wrong", None, detail="nan"),
       rec(G), rec(H, "slower", 0.8), rec("multi-row-per-program"),
       rec(A, triton="3.6.0", device="NVIDIA H100 80GB HBM3", speedup=2.0),  # another GPU: left out by --gpu
       rec(B, verdict="not-run", speedup=None, kernel="example:other.py"),  # never reached: left out
       rec(C, backend="cpu", device="cpu (TRITON_INTERPRET=1)", verdict="correct", speedup=None, kernel="x")]
NEW = [rec(A, speedup=1.4, triton="3.7.1"),  # same (pays on both)
       rec(B, "no-effect", 1.01, triton="3.7.1"),  # lost its speedup
       rec(C, speedup=1.2, triton="3.7.1"),  # newly faster
       rec(D, "slower", 0.8, triton="3.7.1"),  # now slower
       rec(E, "wrong", None, triton="3.7.1", detail="mismatch"),  # now wrong
       rec(F, "no-effect", 1.0, triton="3.7.1"),  # recovered
       # G: not re-run
       rec(H, "slower", 0.85, triton="3.7.1"),  # same (slower on both)
       rec("autotune-configs", triton="3.7.1"),  # first run
       rec("multi-row-per-program", "correct", None, triton="3.7.1", detail="correct; timing killed at the 38 s limit")]
       # multi-row-per-program: not timed now (results checked, timing cut short: no verdict on speed)


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _drifts(capsys, *args: str) -> dict:
    assert drift.main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_every_drift_category_from_two_files(tmp_path, capsys):
    old, new = _write(tmp_path / "old.jsonl", OLD), _write(tmp_path / "new.jsonl", NEW)
    data = _drifts(capsys, "--from-file", str(old), "--to-file", str(new), "--gpu", "H200")
    got = {s["id"]: s["drift"] for s in data["skeletons"]}
    assert got == {A: "same", B: "lost its speedup", C: "newly faster", D: "now slower", E: "now wrong",
                   F: "recovered", G: "not re-run", H: "same", "autotune-configs": "first run",
                   "multi-row-per-program": "not timed now"}
    assert data["counts"] == {"same": 2, "newly faster": 1, "lost its speedup": 1, "now slower": 1, "now wrong": 1,
                              "recovered": 1, "not timed now": 1, "not re-run": 1, "first run": 1}
    a = next(s for s in data["skeletons"] if s["id"] == A)
    assert a["old"]["status"] == "demonstrated" and abs(a["old"]["speedup"] - 1.3) < 1e-9  # the H100 run left out
    assert abs(a["new"]["speedup"] - 1.4) < 1e-9 and a["old"]["runs"] == 1
    assert data["old"]["evidence"] == "NVIDIA H200 on Triton 3.6" and data["caveat"] is None


def test_one_file_split_by_triton_and_the_table(tmp_path, capsys):
    both = _write(tmp_path / "all.jsonl", OLD + NEW)
    data = _drifts(capsys, "--file", str(both), "--from-triton", "3.6", "--to-triton", "3.7", "--gpu", "h200")
    assert {s["id"]: s["drift"] for s in data["skeletons"]}[B] == "lost its speedup"
    assert data["old"]["runs"] == 9 and data["new"]["runs"] == 9  # not-run, CPU and H100 runs left out
    # without --gpu the H100 run joins the old side, and the table says so in its header
    assert drift.main(["--file", str(both), "--from-triton", "3.6", "--to-triton", "3.7"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("old: ") and "NVIDIA H100 80GB HBM3 on Triton 3.6" in out[0]
    assert any(ln.split()[:1] == [B] and ln.split()[-3:] == ["lost", "its", "speedup"] for ln in out)
    assert out[-1].startswith("10 skeletons with runs on either side") and "now wrong 1" in out[-1]


def test_different_gpus_on_the_two_sides_are_named(tmp_path, capsys):
    old = _write(tmp_path / "old.jsonl", [rec(A)])
    new = _write(tmp_path / "new.jsonl", [rec(A, device="NVIDIA H100 80GB HBM3", triton="3.7.1")])
    data = _drifts(capsys, "--from-file", str(old), "--to-file", str(new))
    assert "different GPUs" in data["caveat"]


def test_usage_errors(tmp_path, capsys):
    import pytest

    for args in ([], ["--from-file", "x.jsonl"], ["--from-triton", "3.6"]):
        with pytest.raises(SystemExit) as e:
            drift.main(args)
        assert e.value.code == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    assert drift.main(["--from-file", str(bad), "--to-file", str(bad)]) == 2
    assert "bad.jsonl:1" in capsys.readouterr().err


def test_the_shipped_evidence_drifts_without_error(capsys):
    data = _drifts(capsys, "--from-triton", "3.6", "--to-triton", "3.7")
    assert data["skeletons"] and sum(data["counts"].values()) == len(data["skeletons"])
