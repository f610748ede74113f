"""`skel verify` on the CPU (TRITON_INTERPRET=1): planted cheaters are rejected for the right
reason, a correct candidate passes, and the report says what the CPU could not check."""

from __future__ import annotations

import random
import shutil

import pytest

from conftest import ROOT, write

pytest.importorskip("triton", reason="the [verify] extra (triton) is not installed")

from skel import api, errors  # noqa: E402
from skel.verifier.correctness import Growth, fresh_shapes  # noqa: E402

CHEATERS = ROOT / "tests" / "cheaters"
ORIGINAL = CHEATERS / "rowsum.py"
KB = CHEATERS / "kb_original.py"


@pytest.fixture(autouse=True)
def _no_offline_compile(request, monkeypatch):
    """The applied stage compiles both sides offline for sm_90 to compare machine code (seconds
    a pair; its own tests cover it). Here it is stubbed, except in the one test that checks
    the whole run on a correct candidate."""
    if request.node.name.startswith("test_a_correct_candidate"):
        return
    import skel.verifier.applied as applied

    # "could not be compared" is a result the stage already handles: it notes it and goes on
    monkeypatch.setattr(applied, "compare_machine_code",
                        lambda *_a, **_k: (None, "machine code not compared here (tests/test_applied.py covers it)"))


def verify(candidate: str, original=ORIGINAL, **kw):
    return api.verify(original, CHEATERS / candidate, device="cpu", **kw)


@pytest.mark.parametrize("candidate, kw, reason", [
    ("cached.py", {}, "a cached result"),
    ("first_call.py", {}, "work done only on the first call"),
    ("partial.py", {}, "NaN/Inf (never written?)"),
    ("special_shapes.py", {}, "special-cased to the benchmark's shapes"),
    ("low_precision.py", {}, "elements wrong"),
    ("writes_input.py", {}, "input 0 was modified"),
    ("tf32_drift.py", {"tolerance": (0.03, 0.0)}, "50x the original's error"),  # growth: tests/test_verifier_guards.py
    ("ignores_offset.py", {}, "read before its start (NaN from the guard band before input 0)"),  # the split
    # check caught it before guard bands: they catch it on the whole tensor now
], ids=lambda v: v if isinstance(v, str) and v.endswith(".py") else "")
def test_a_planted_cheater_is_wrong_for_the_right_reason(candidate, kw, reason):
    r = verify(candidate, **kw)
    assert r.record.verdict == "wrong" and r.exit_code == errors.EXIT_WRONG
    assert reason in r.record.detail, r.record.detail
    assert r.record.correct is False


def test_the_precision_cheater_passes_a_short_test_under_a_loose_tolerance():
    """What makes the growth check necessary: at the benchmark's length it is within tolerance."""
    from skel.verifier.correctness import run_and_check
    from skel.verifier.harness import Harness, import_file

    h = Harness.from_file(ORIGINAL)
    cand = import_file(CHEATERS / "tf32_drift.py").run
    assert all(c.ok for c in run_and_check(h, cand, h.shapes["tiny"], "float32", 0, "cpu", (0.03, 0.0)))


def test_a_correct_candidate_passes_and_says_what_the_cpu_did_not_check():
    r = verify("correct.py")
    assert r.record.verdict == "correct" and r.exit_code == 0, r.record.detail
    same = next(s for s in r.stages if s.name == "same results")
    assert same.status == "passed"
    checked = " ".join(same.notes)
    assert "seed 1" in checked and "fresh from tiny" in checked and "split" in checked
    assert "error growth over N" in checked
    unchecked = " ".join(r.unchecked)
    assert "no timing on the CPU" in unchecked and "machine code" in unchecked  # not compared, or offline only
    assert next(s for s in r.stages if s.name == "faster").status == "skipped"
    rec = r.record
    assert rec.device.startswith("cpu") and rec.torch and rec.triton and rec.max_error["out0"] < 1e-4
    assert "M=6,N=100" in rec.shapes and rec.dtypes == ["float32"] and rec.speedup is None


def test_kernelbench_correct_candidate_passes_with_copied_weights():
    r = verify("kb_correct.py", original=KB)
    assert r.format == "kernelbench" and r.record.verdict == "correct", r.record.detail
    notes = " ".join(next(s for s in r.stages if s.name == "same results").notes)
    assert "fresh [batch_size=" in notes  # get_inputs re-called with a perturbed constant


def test_kernelbench_output_aliasing_an_input_is_wrong():
    r = verify("kb_alias.py", original=KB)
    assert r.record.verdict == "wrong"
    assert "aliases input 0" in r.record.detail and "modified" in r.record.detail


def test_kernelbench_without_perturbable_constants_says_fresh_shapes_were_impossible(tmp_path):
    orig = write(tmp_path / "o.py", KB.read_text().replace("torch.randn(batch_size, features)",
                                                           "torch.randn(4, 8)"))
    r = api.verify(orig, CHEATERS / "kb_correct.py", device="cpu")
    assert r.record.verdict == "correct"
    assert any("fresh shapes impossible" in n for s in r.stages for n in s.notes)


def test_a_change_that_is_not_there_is_not_applied_or_a_no_op(tmp_path):
    r = verify("correct.py", skeleton="online-softmax")
    assert r.record.verdict == "not-applied" and r.exit_code == errors.EXIT_NOT_APPLIED
    same = write(tmp_path / "same.py", "# only a comment differs\n" + ORIGINAL.read_text())
    r = api.verify(ORIGINAL, same, device="cpu")
    assert r.record.verdict == "no-op" and r.exit_code == errors.EXIT_NOT_APPLIED
    broken = write(tmp_path / "broken.py", "def run(x, out:\n")
    r = api.verify(ORIGINAL, broken, device="cpu")
    assert r.record.verdict == "not-applied" and "does not parse" in r.record.detail


def test_a_candidate_that_does_not_import_or_run_failed(tmp_path):
    r = api.verify(ORIGINAL, write(tmp_path / "c.py", "import no_such_module_xyz\n"), device="cpu")
    assert r.record.verdict == "failed" and r.exit_code == errors.EXIT_FAILED
    r = api.verify(ORIGINAL, write(tmp_path / "d.py", "def run(x, out):\n    raise RuntimeError('boom')\n"),
                   device="cpu")
    assert r.record.verdict == "failed" and "boom" in r.record.detail


def test_nothing_checkable_is_an_error_never_a_pass(tmp_path):
    orig = write(tmp_path / "o.py", ORIGINAL.read_text().replace('LENGTH = "N"', 'CPU_SKIP = "needs a GPU"'))
    with pytest.raises(errors.VerifyError) as e:
        api.verify(orig, CHEATERS / "correct.py", device="cpu")
    assert e.value.exit_code == errors.EXIT_ERROR
    with pytest.raises(errors.InputError):
        api.verify(CHEATERS / "correct.py", CHEATERS / "correct.py", device="cpu")  # no harness at all


def test_a_harness_in_its_own_file(tmp_path):
    orig = shutil.copy(CHEATERS / "correct.py", tmp_path / "orig.py")
    r = api.verify(orig, CHEATERS / "partial.py", harness=ORIGINAL, device="cpu")
    assert r.record.verdict == "wrong"


def test_the_example_pair_verifies_and_the_record_can_be_stored(tmp_path):
    store = str(tmp_path / "store")
    r = api.verify(example="online-softmax", device="cpu", dtype="float32", record=True, store=store)
    assert r.record.verdict == "correct" and r.record.subject == "example"
    assert r.record.skeleton == "online-softmax" and r.record.kernel == "example:online-softmax"
    api.verify(example="online-softmax", device="cpu", dtype="float32", record=True, store=store)
    from skel.store.knowledge import KnowledgeBase

    got = KnowledgeBase.open(store, create=False).verifications()
    assert len(got) == 1 and got[0] == r.record.__class__.from_dict({**r.to_dict()["record"], "date": got[0].date})


def test_tests_stage_runs_the_tests_with_the_candidate_in_place(tmp_path):
    pkg = tmp_path / "proj" / "pkg"
    write(pkg / "__init__.py", "")
    orig = write(pkg / "ops.py", """
        def double(x):
            return 2 * x


        def quad(x):
            return double(double(x))
        """)
    write(tmp_path / "proj" / "tests" / "test_ops.py", """
        from pkg.ops import double, quad


        def test_double():
            assert double(3) == 6


        def test_quad():
            assert quad(1) == 4
        """)
    good = write(tmp_path / "good.py", "def double(x):\n    return x + x\n")
    bad = write(tmp_path / "bad.py", "def double(x):\n    return x + x + (x > 2)\n")
    tests = [str(tmp_path / "proj" / "tests" / "test_ops.py")]
    r = api.verify(orig, bad, tests=tests, device="cpu")
    assert r.format == "tests" and r.record.verdict == "tests-failed" and r.exit_code == errors.EXIT_TESTS_FAILED
    assert "test_double" in r.record.detail and "test_quad" not in r.record.detail  # quad calls double(1), double(2)
    r = api.verify(orig, good, tests=tests, device="cpu")
    assert r.record.verdict == "correct" and "2 passed" in r.record.detail.lower() + " ".join(
        s.detail for s in r.stages)
    assert any("no harness" in u for u in r.unchecked)


def test_fresh_shapes_keep_fixed_sizes_and_go_up_then_down():
    up, down = fresh_shapes({"M": 64, "N": 128, "D": 64}, ("D",), random.Random(0), 2)
    assert up["D"] == down["D"] == 64
    assert up["M"] > 64 and up["N"] > 128 and down["M"] < 64 and down["N"] < 128
    assert fresh_shapes({"D": 64}, ("D",), random.Random(0), 2) == []


@pytest.mark.parametrize("orig, cand, bad", [
    ([0.01, 0.01, 0.01], [0.01, 0.01, 0.02], False),  # flat, tiny
    ([0.01, 0.02, 0.04], [0.02, 0.04, 0.08], False),  # grows like the original
    ([0.001, 0.001, 0.001], [0.05, 0.2, 0.8], True),  # within tolerance, but drifting
    ([0.01, 0.01, 0.01], [0.3, 0.6, 1.2], True),  # beyond the tolerance at the longest length
    ([0.5, 1.0, 2.0], [0.5, 1.0, 2.1], False),  # the original is beyond it too: same growth
])
def test_error_growth_verdict(orig, cand, bad):
    assert (Growth([64, 128, 256], orig, cand).verdict() is not None) == bad


def test_reports_state_the_verdict_exit_code_and_what_was_not_checked():
    from skel.verifier import report

    r = verify("correct.py")
    t = report.text(r)
    assert "verdict: correct" in t and "(exit 0)" in t and "not checked:" in t and "no timing on the CPU" in t
    md = report.markdown(r)
    assert "**Not checked:**" in md and "| same results | passed |" in md
    import json

    d = json.loads(report.as_json(r))
    assert d["exit_code"] == 0 and d["record"]["verdict"] == "correct" and d["unchecked"]
