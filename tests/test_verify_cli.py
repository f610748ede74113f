"""`skel verify` from the command line: exit codes per verdict, formats, help."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT, run_skel

pytest.importorskip("triton", reason="the [verify] extra (triton) is not installed")

CHEATERS = ROOT / "tests" / "cheaters"


def test_exit_codes_json_and_the_record(tmp_path):
    store = tmp_path / "store"
    ok = run_skel("verify", str(CHEATERS / "rowsum.py"), str(CHEATERS / "correct.py"), "--device", "cpu", "--json",
                  "--record", "--store", str(store))
    assert ok.returncode == 0, ok.stderr
    data = json.loads(ok.stdout)
    assert data["record"]["verdict"] == "correct" and data["exit_code"] == 0 and data["unchecked"]
    assert store.is_dir()
    bad = run_skel("verify", str(CHEATERS / "rowsum.py"), str(CHEATERS / "cached.py"), "--device", "cpu")
    assert bad.returncode == 5 and "verdict: wrong" in bad.stdout and "cached result" in bad.stdout
    md = run_skel("verify", str(CHEATERS / "kb_original.py"), str(CHEATERS / "kb_alias.py"), "--device", "cpu",
                  "--format", "markdown")
    assert md.returncode == 5 and md.stdout.startswith("### skel verify: `wrong` (exit 5)")


def test_usage_errors_exit_2():
    r = run_skel("verify", str(CHEATERS / "rowsum.py"))
    assert r.returncode == 2 and "ORIGINAL and CANDIDATE" in r.stderr
    r = run_skel("verify", "--example", "no-such-skeleton")
    assert r.returncode == 2
    r = run_skel("verify", str(CHEATERS / "rowsum.py"), str(CHEATERS / "correct.py"), "--device", "cpu",
                 "--shapes", "nope")
    assert r.returncode == 2 and "unknown nope" in r.stderr


def test_help_documents_every_exit_code():
    from click.testing import CliRunner

    from skel.cli import cli

    out = CliRunner().invoke(cli, ["verify", "--help"]).output
    for code, word in [(0, "faster"), (2, "error"), (3, "no effect"), (4, "slower"), (5, "wrong"),
                       (6, "not applied"), (7, "tests fail"), (8, "does not compile")]:
        assert f"{code}  " in out and word in out
