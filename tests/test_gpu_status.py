"""Status per GPU (issue #36): H100 and H200 are both sm_90, so `--gpu` tells their evidence
apart; `skel skeletons list` ends with a line counting its statuses and naming the evidence."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from skel import api
from skel.cli import cli
from skel.skeletons.base import Status, Target
from skel.skeletons.registry import all_skeletons
from skel.skeletons.status import in_environment, status_of, summarize
from skel.store.evidence import Verification, merge_evidence, shipped_verifications

H100 = "NVIDIA H100 80GB HBM3"


def run(device="NVIDIA H200", verdict="faster", subject="suite", speedup=1.3, **kw):
    base = dict(skeleton="s", kernel="suite/k.py::k", verdict=verdict, subject=subject, speedup=speedup,
                device=device, cc=90, backend="cuda", triton="3.6.0", noise=0.02, date="2026-12-01")
    return Verification(**(base | kw))


def _list(*args: str) -> tuple[list[list[str]], str]:
    """`skel skeletons list ARGS`: its table rows (split on spaces) and its last line."""
    out = CliRunner().invoke(cli, ["skeletons", "list", *args])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("---")) + 1
    end = next(i for i, ln in enumerate(lines) if ln.startswith("hand-checked:"))
    assert end == len(lines) - 2, "the summary is the last line, after the hand-checked legend"
    return [ln.split() for ln in lines[start:end]], lines[-1]


def test_a_gpu_name_keeps_that_gpus_runs_only():
    h200, h100 = run(), run(device=H100)
    assert in_environment(h200, Target(gpu="h200")) and not in_environment(h100, Target(gpu="H200"))
    assert in_environment(h100, Target(gpu="H100")) and in_environment(h100, Target())
    assert not in_environment(run(device=None), Target(gpu="H200"))  # a run that says nowhere counts nowhere
    r = status_of([h200, run(device=H100, verdict="wrong", detail="bad")], Target(cc=90, triton="3.6.0", gpu="H200"))
    assert r.status is Status.VALIDATED and all(x.device == "NVIDIA H200" for x in r.records)
    r = status_of([h200], Target(cc=90, triton="3.6.0", gpu="H100"))
    assert r.status is Status.DRAFT and "runs exist on NVIDIA H200" in r.line


def test_parse_target_takes_a_gpu_and_refuses_an_empty_one():
    assert api.parse_target("cuda", "sm90", "3.6.0").gpu is None
    assert api.parse_target("cuda", "sm90", "3.6.0", " H200 ").gpu == "H200"
    with pytest.raises(api.UsageError):
        api.parse_target(None, None, None, "  ")
    assert "GPU H200" in Target(gpu="H200").describe() and "GPU" not in Target().describe()


def test_the_footer_counts_the_tables_statuses():
    for args in ((), ("--triton", "3.6.0"), ("--triton", "3.7.1", "--gpu", "H100"), ("--category", "memory")):
        rows, last = _list(*args)
        shown = [r[2] for r in rows]
        for status in Status:
            assert f"{status.value} {shown.count(status.value)}" in last, (args, last)
        paying = shown.count("validated") + shown.count("demonstrated")
        assert f"— {paying} of {len(rows)} (" in last and last.endswith("validated or demonstrated")
    data = json.loads(CliRunner().invoke(cli, ["skeletons", "list", "--json", "--triton", "3.6.0"]).output)
    statuses = [s["status"] for s in data["skeletons"]]
    assert data["summary"]["counts"] == {s.value: statuses.count(s.value) for s in Status}
    assert data["summary"]["total"] == len(statuses) == len(all_skeletons())


def test_gpu_h200_on_triton_3_6_reads_the_h200_evidence_only():
    rows, last = _list("--gpu", "H200", "--triton", "3.6.0")
    assert last.startswith("status for Triton 3.6.0, GPU H200 (evidence from NVIDIA H200 on Triton 3.6")
    assert H100 not in last
    # the same statuses as computed from the H200 runs alone, with no GPU filter
    h200 = [r for r in shipped_verifications() if r.device == "NVIDIA H200"]
    assert h200, "the shipped evidence has H200 runs"
    by_id = merge_evidence(h200)
    want = {s.id: status_of(by_id.get(s.id, []), Target(triton="3.6.0"), triton_bound="triton" in s.languages,
                            pays_in=s.pays_in).status.value for s in all_skeletons()}
    assert {r[0]: r[2] for r in rows} == want
    data = json.loads(CliRunner().invoke(cli, ["skeletons", "list", "--json", "--gpu", "H200", "--triton",
                                               "3.6.0"]).output)
    assert list(data["summary"]["evidence"]) == ["NVIDIA H200"] and data["summary"]["target"]["gpu"] == "H200"


def test_a_gpu_no_run_was_made_on_leaves_every_skeleton_draft_and_says_so():
    rows, last = _list("--gpu", "H300", "--triton", "3.6.0")
    assert {r[2] for r in rows} == {"draft"}
    assert "no run measured on a GPU named 'H300'" in last and "runs exist on" in last
    assert f"draft {len(rows)}" in last and f"— 0 of {len(rows)} (0%)" in last


def test_without_gpu_the_table_is_what_it_was():
    """--gpu left out: every status as computed with no GPU in the target (the old target)."""
    rows, last = _list("--triton", "3.6.0")
    runs = merge_evidence(shipped_verifications())
    want = {s.id: status_of(runs.get(s.id, []), Target(triton="3.6.0"), triton_bound="triton" in s.languages,
                            pays_in=s.pays_in).status.value for s in all_skeletons()}
    assert {r[0]: r[2] for r in rows} == want and "any GPU" in last


def test_show_and_suggest_take_the_gpu():
    out = CliRunner().invoke(cli, ["skeletons", "show", "online-softmax", "--json", "--triton", "3.6.0",
                                   "--gpu", "H300"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["status"] == "draft"
    on_h200 = CliRunner().invoke(cli, ["skeletons", "show", "online-softmax", "--json", "--triton", "3.6.0",
                                       "--gpu", "H200"])
    assert json.loads(on_h200.output)["status"] == "validated"
    assert "--gpu NAME" in CliRunner().invoke(cli, ["suggest", "--help"]).output
    # a kernel's own backend replaces the target's, and keeps its GPU
    from skel.retriever.suggest import _target_for

    class Facts:
        backend_hint, backend_reason = "rocm", "a test"

    t, _ = _target_for(Facts(), Target(cc=90, triton="3.6.0", gpu="H200"))  # type: ignore[arg-type]
    assert (t.backend, t.gpu, t.triton) == ("rocm", "H200", "3.6.0")


def test_summary_names_every_device_whose_runs_counted():
    reports = [status_of([run()], Target(triton="3.6.0")), status_of([run(device=H100, triton="3.7.1")],
                                                                    Target(triton="3.6.0"))]
    s = summarize(reports, Target(triton="3.6.0"), runs=[run(), run(device=H100, triton="3.7.1")])
    assert s.evidence == {H100: ["3.7"], "NVIDIA H200": ["3.6"]} and s.elsewhere == []
    assert s.counts["validated"] == 1 and s.counts["stale"] == 1 and s.paying == 1 and s.total == 2


def test_the_mcp_tools_take_the_gpu(tmp_path):
    pytest.importorskip("mcp", reason="the MCP extra is not installed")
    from skel.mcp import tools
    from skel.mcp.roots import Roots

    svc = tools.Service(roots=Roots([tmp_path]))
    r = tools.list_skeletons(svc, triton="3.6.0", gpu="H300")
    assert r.data["target"]["gpu"] == "H300" and {s["status"] for s in r.data["skeletons"]} == {"draft"}
    assert "gpu" not in tools.list_skeletons(svc, triton="3.6.0").data["target"]  # unchanged without it
    shown = tools.show(svc, "online-softmax", triton="3.6.0", gpu="H200")
    assert shown.data["target"]["gpu"] == "H200" and shown.data["skeleton"]["status"] == "validated"
