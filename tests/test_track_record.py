"""The hand-checked track record: how often people judged a skeleton's suggestions right on
real sglang and vLLM kernels (benchmarks/retrieval/precision.json), shipped with skel and
shown beside each suggestion and in `skel skeletons show`."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from conftest import ROOT
from skel.cli import cli
from skel.retriever.render import markdown, text
from skel.retriever.suggest import suggest
from skel.store.evidence import TRACK_RECORD, TrackRecord, track_records

BENCH = ROOT / "benchmarks" / "retrieval"
EXAMPLE = ROOT / "examples" / "row_softmax.py"


def _precision():
    from benchmarks.retrieval import precision

    return precision


def test_the_shipped_record_is_the_verdicts_counted_not_a_hand_edit():
    """skel/data/track_record.json must be exactly what `precision.py track-record` computes
    from the committed verdicts: a verdict added without regenerating it, or a number
    edited by hand, fails here."""
    precision = _precision()
    shipped = json.loads(TRACK_RECORD.read_text())
    assert shipped == precision.track_record(), "run: python -m benchmarks.retrieval.precision track-record"
    verdicts = json.loads((BENCH / "precision.json").read_text())["verdicts"]
    assert shipped["pairs"] == len(verdicts)
    assert sum(sum(c.values()) for c in shipped["skeletons"].values()) == len(verdicts)


def test_counting_verdicts_per_skeleton():
    precision = _precision()
    got = precision.track_record([
        {"kernel": "a", "skeleton": "x", "verdict": "correct"},
        {"kernel": "b", "skeleton": "x", "verdict": "incorrect"},
        {"kernel": "b", "skeleton": "x", "verdict": "unclear"},
        {"kernel": "b", "skeleton": "y", "verdict": "incorrect"},
    ])
    assert got["kernels"] == 2 and got["pairs"] == 4
    assert got["skeletons"] == {"x": {"correct": 1, "incorrect": 1, "unclear": 1},
                                "y": {"correct": 0, "incorrect": 1, "unclear": 0}}


def test_a_record_says_how_often_and_on_what():
    r = TrackRecord(correct=3, incorrect=9, unclear=1, packages=("sglang==0.5.14",))
    assert r.judged == 12 and r.rate == pytest.approx(0.25)
    assert r.line().startswith("judged right in 3 of 12 of its suggestions on sglang==0.5.14 kernels (25%")
    assert r.to_dict()["rate"] == 0.25 and r.to_dict()["unclear"] == 1
    undecided = TrackRecord(correct=0, incorrect=0, unclear=2, packages=("vllm==0.33.0",))
    assert undecided.rate is None and "none decided" in undecided.line()


def test_a_missing_file_means_no_record_and_a_damaged_one_names_itself(tmp_path):
    assert track_records(tmp_path / "absent.json") == {}
    bad = tmp_path / "track_record.json"
    bad.write_text('{"packages": ["sglang==0.5.14"], "skeletons": {"x": {"correct": "many"}}}')
    with pytest.raises(ValueError, match="track_record.json"):
        track_records(bad)


def test_suggestions_carry_their_record_in_every_format():
    records = track_records()
    (result,) = suggest(EXAMPLE, None, k=5)
    judged = [s for s in result.suggestions if s.id in records]
    assert judged, "the example's suggestions include skeletons that were hand-checked"
    for s in result.suggestions:
        expected = records[s.id].to_dict() if s.id in records else None
        assert s.track_record == expected
    first = judged[0]
    assert f"hand-checked: {records[first.id].line()}" in text([result], show_template=False)
    assert f"- hand-checked: {records[first.id].line()}" in markdown([result])
    as_dict = result.to_dict()["suggestions"]
    assert [d["track_record"] for d in as_dict] == [s.track_record for s in result.suggestions]


def test_skeletons_show_prints_the_record():
    record = track_records()["launch-pdl"]
    out = CliRunner().invoke(cli, ["skeletons", "show", "launch-pdl"])
    assert out.exit_code == 0, out.output
    assert f"hand-checked: {record.line()}" in out.output
    shown = CliRunner().invoke(cli, ["skeletons", "show", "launch-pdl", "--json"])
    assert json.loads(shown.output)["evidence"]["track_record"] == record.to_dict()


def test_the_catalog_list_shows_each_record():
    records = track_records()
    out = CliRunner().invoke(cli, ["skeletons", "list"])
    assert out.exit_code == 0, out.output
    pdl = next(line for line in out.output.splitlines() if line.startswith("launch-pdl "))
    assert f"{records['launch-pdl'].correct}/{records['launch-pdl'].judged} right" in pdl
    never = next(s for s in ("gqa-head-packing", "tensor-core-scan", "warp-specialized-mbarrier") if s not in records)
    assert next(line for line in out.output.splitlines() if line.startswith(never + " ")).split()[3] == "-"
    listed = json.loads(CliRunner().invoke(cli, ["skeletons", "list", "--json"]).output)["skeletons"]
    assert {d["id"]: d["track_record"] for d in listed if d["track_record"]} == \
        {sid: r.to_dict() for sid, r in records.items() if sid in {d["id"] for d in listed}}
