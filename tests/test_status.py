"""Statuses are computed from verification runs, per target environment."""

from __future__ import annotations

from skel.skeletons.base import Status, Target
from skel.skeletons.status import evidence_score, status_of
from skel.store.evidence import ShapeResult, Verification

H200 = Target(backend="cuda", cc=90, triton="3.6.0")


def run(verdict="faster", subject="suite", speedup=1.3, kernel="suite/k.py::k", **kw):
    base = dict(skeleton="s", kernel=kernel, verdict=verdict, subject=subject, speedup=speedup,
                device="NVIDIA H200", cc=90, backend="cuda", triton="3.6.0", noise=0.02, date="2026-12-01")
    return Verification(**(base | kw))


def test_no_runs_is_draft():
    assert status_of([], H200).status is Status.DRAFT


def test_cpu_runs_prove_correctness_not_speed():
    r = status_of([run("correct", backend="cpu", device="cpu (TRITON_INTERPRET=1)", speedup=None)], H200)
    assert r.status is Status.DRAFT and "CPU interpreter" in r.line


def test_validated_needs_a_kernel_other_than_its_own_example():
    assert status_of([run(subject="example")], H200).status is Status.DEMONSTRATED
    r = status_of([run(subject="example", kernel="ex.py::k"), run(subject="suite", speedup=1.5)], H200)
    assert r.status is Status.VALIDATED and r.kernels == 2 and "NVIDIA H200" in r.line


def test_a_speedup_under_the_bar_does_not_validate():
    assert status_of([run(speedup=1.03)], H200).status is Status.DRAFT


def test_wrong_anywhere_refutes_and_says_why():
    r = status_of([run(), run("wrong", kernel="big", detail="illegal memory access at M=70000")], H200)
    assert r.status is Status.REFUTED and "illegal memory access" in r.line


def test_slower_own_example_refutes():
    r = status_of([run("slower", subject="example", speedup=0.85)], H200)
    assert r.status is Status.REFUTED and "0.85x" in r.line


def test_no_effect():
    assert status_of([run("no-effect", speedup=1.01)], H200).status is Status.NO_EFFECT


def test_other_hardware_does_not_count():
    r = status_of([run()], Target(backend="cuda", cc=80, triton="3.6.0"))
    assert r.status is Status.DRAFT and "runs exist on NVIDIA H200" in r.line


def test_another_triton_makes_it_stale_but_keeps_the_basis():
    r = status_of([run(subject="suite", speedup=1.5)], Target(backend="cuda", cc=90, triton="3.7.1"))
    assert r.status is Status.STALE and r.basis is Status.VALIDATED and "Triton 3.6" in r.line
    assert 0 < evidence_score(r) < evidence_score(status_of([run(speedup=1.5)], H200))


def test_a_cuda_technique_does_not_go_stale_with_triton():
    """nvcc builds a CUDA C++ pair: the user's Triton version says nothing about it."""
    r = status_of([run(subject="example", speedup=2.4)], Target(backend="cuda", cc=90, triton="3.7.1"),
                  triton_bound=False)
    assert r.status is Status.DEMONSTRATED and "(target" not in r.line and not r.warnings


def test_slower_shapes_become_warnings():
    rec = run(per_shape=[ShapeResult("M=4096,N=32768", "float32", 0.8, 0.01),
                         ShapeResult("M=4096,N=128", "float32", 1.9, 0.01)], speedup=1.23)
    r = status_of([rec], H200)
    assert any("M=4096,N=32768" in w and "0.80x" in w for w in r.warnings)
    assert not any("N=128" in w for w in r.warnings)


def test_evidence_score_orders_statuses():
    scores = [evidence_score(status_of(rs, H200)) for rs in (
        [run(speedup=2.0)], [run(subject="example", speedup=2.0)], [], [run("no-effect", speedup=1.0)],
        [run("wrong")])]
    assert scores == sorted(scores, reverse=True) and scores[0] == 1.0 and scores[-1] == 0.0


def test_suggest_ranks_by_evidence_and_leaves_out_what_its_runs_refute(monkeypatch):
    """Without a store, suggest reads the shipped runs: a skeleton whose run here gave wrong
    results is not suggested at all — it is listed apart, ruled out by evidence, with the run
    (and `--why-not` says so) — and a validated one rises among the full matches."""
    from pathlib import Path

    import skel.retriever.suggest as sg
    from skel.retriever.suggest import explain, load_kernels, suggest

    example = Path(__file__).resolve().parent.parent / "examples" / "row_softmax.py"
    monkeypatch.setattr(sg, "shipped_verifications", lambda: ())
    (plain,) = suggest(example, None, k=50, target=H200)
    ids = [s.id for s in plain.suggestions if s.kind == "match"]
    assert len(ids) >= 3 and not plain.ruled_out_by_evidence
    first, last = ids[0], ids[-1]
    runs = (run(skeleton=first, verdict="wrong", detail="NaN in out0"),
            run(skeleton=last, speedup=1.8))
    monkeypatch.setattr(sg, "shipped_verifications", lambda: runs)
    (judged,) = suggest(example, None, k=50, target=H200)
    new = [s.id for s in judged.suggestions if s.kind == "match"]
    assert first not in new and new.index(last) < ids.index(last)
    (ruled,) = judged.ruled_out_by_evidence
    assert ruled["id"] == first and ruled["status"] == "refuted" and "NaN in out0" in ruled["line"]
    (why,) = explain(load_kernels(example)[0], (first,), judged, target=H200)
    assert why["verdict"].startswith("ruled out by evidence (refuted here)") and "NaN in out0" in why["verdict"]


def test_a_slower_run_does_not_rule_out_an_accuracy_fix(monkeypatch):
    """`dot-input-precision-tf32x3` pays in accuracy: three TF32 MMAs cost time by design, so
    a slower run is its price, not a refutation; wrong results still rule it out."""
    import skel.retriever.suggest as sg
    from skel.retriever.suggest import suggest_for
    from skel.skeletons import registry
    from skel.skeletons.expectations import kernels_by_name, read

    sid = "dot-input-precision-tf32x3"
    assert registry.get(sid).pays_in == "accuracy" and registry.get("online-softmax").pays_in == "speed"
    path = registry.fixture_path(sid)
    name = next(e.kernel for e in read(path) if e.skeleton_id == sid and e.kind == "match")
    kf = kernels_by_name(path)[name]
    for verdict, shown in (("slower", True), ("wrong", False)):
        monkeypatch.setattr(sg, "shipped_verifications",
                            lambda v=verdict: (run(skeleton=sid, verdict=v, subject="example", speedup=0.66),))
        res = suggest_for(kf, None, k=50, target=H200)
        assert (sid in [s.id for s in res.suggestions]) is shown, verdict
        assert (sid in [d["id"] for d in res.ruled_out_by_evidence]) is not shown, verdict


def test_same_machine_code_is_no_effect():
    r = status_of([run("no-op", subject="example", speedup=None)], H200)
    assert r.status is Status.NO_EFFECT and "same machine code" in r.line


def test_a_compile_time_gain_does_not_rank_as_a_kernel_speedup():
    compile_gain = status_of([run(subject="example", speedup=2.0, measure="compile")], H200)
    kernel_gain = status_of([run(subject="example", speedup=2.0)], H200)
    assert compile_gain.status is Status.DEMONSTRATED and "compile time" in compile_gain.line
    assert evidence_score(compile_gain) < evidence_score(kernel_gain)


def test_slower_runs_on_other_kernels_pull_the_expected_gain_down():
    lucky = status_of([run(subject="example", kernel="ex", speedup=2.0)], H200)
    mixed = status_of([run(subject="example", kernel="ex", speedup=2.0),
                       run("slower", kernel="a", speedup=0.6), run("slower", kernel="b", speedup=0.75)], H200)
    assert mixed.status is Status.DEMONSTRATED and mixed.speedup == 2.0
    assert mixed.expected is not None and mixed.expected < 1.0
    assert evidence_score(mixed) < evidence_score(lucky)


def test_an_architecture_ceiling_rules_out_newer_gpus():
    from skel.skeletons.base import Env

    env = Env(backends=("cuda",), min_cc=90, max_cc=90)
    assert env.check(Target(backend="cuda", cc=90)) == (True, [])
    ok, notes = env.check(Target(backend="cuda", cc=100))
    assert not ok and notes == ["exists up to sm_90 only, target is sm_100"]
    assert env.check(Target(backend="cuda"))[1] == ["needs sm_90+ (arch not given)",
                                                    "exists up to sm_90 only (arch not given)"]


def test_an_accuracy_fix_is_not_refuted_by_its_cost():
    """`dot-input-precision-tf32x3` read "refuted — its own example is slower (0.66x)": an
    accuracy fix judged by speed. Its slower, correct run is now its stated cost; only wrong
    results or a failed launch refute it. A speed skeleton's slower example still refutes."""
    slower = [run("slower", subject="example", speedup=0.66)]
    assert status_of(slower, H200).status is Status.REFUTED
    r = status_of(slower, H200, pays_in="accuracy")
    assert r.status is Status.DRAFT and "costs 0.66x on its own example" in r.line and "pays in accuracy" in r.line
    flat = status_of([run("no-effect", subject="example", speedup=1.0)], H200, pays_in="correctness")
    assert flat.status is Status.DRAFT and "no measurable speed cost" in flat.line
    wrong = status_of([run("wrong", subject="example", detail="NaN in out0")], H200, pays_in="accuracy")
    assert wrong.status is Status.REFUTED


def test_a_fix_shown_on_a_gpu_is_demonstrated_in_what_it_pays_in():
    """A correctness fix whose GPU run shows the before wrong and the after right, or an
    accuracy fix that cuts the error against float64 >= 10x, has shown what it pays in:
    demonstrated on its own example, validated on another kernel; the speed ratio is its cost.
    The ranking's speed evidence still reads it as unmeasured (draft), as before."""
    fixed = run("correct", subject="example", speedup=0.998,
                detail="fixes the FIXES shapes: before wrong (huge: 3/9 bad), after right")
    r = status_of([fixed], H200, pays_in="correctness")
    assert r.status is Status.DEMONSTRATED and r.line.startswith("fixes the FIXES shapes")
    assert "on its own example only; no measurable speed cost" in r.line
    assert r.speed_basis is Status.DRAFT and evidence_score(r) == 0.25
    accurate = run("correct", subject="example", speedup=0.66,
                   detail="reduces the error against float64 on out0: before max abs err 0.0012, after 3e-06")
    a = status_of([accurate], H200, pays_in="accuracy")
    assert a.status is Status.DEMONSTRATED and "costs 0.66x" in a.line
    on_other = status_of([run("correct", kernel="suite/x.py::k", detail=accurate.detail)], H200, pays_in="accuracy")
    assert on_other.status is Status.VALIDATED and "on suite/x.py::k" in on_other.line
    # the same record on a speed skeleton says nothing of speed, and a wrong run still refutes the fix
    assert status_of([fixed], H200).status is Status.DRAFT
    broken = status_of([fixed, run("wrong", subject="example", detail="NaN in out0")], H200, pays_in="correctness")
    assert broken.status is Status.REFUTED
    # a correct run with no such detail shows nothing: the fix's cost alone stays draft
    plain = status_of([run("slower", subject="example", speedup=0.66)], H200, pays_in="accuracy")
    assert plain.status is Status.DRAFT


def test_an_accuracy_run_records_the_error_it_removes():
    from benchmarks.evidence.verify_catalog import error_removed

    assert error_removed({"out0": 1.2e-3}, {"out0": 3e-6}).endswith("(400x smaller)")
    assert error_removed({"out0": 1e-5}, {"out0": 3e-6}) is None  # 3x is not a fix
    assert error_removed({"out0": 1e-3}, {"out0": 0.0}).endswith("(to zero)")
    assert error_removed({}, {"out0": 1e-6}) is None
