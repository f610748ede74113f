"""Issue #36, items 2 and 3: wrong candidates the tolerance and the poisoned outputs let
through. A KernelBench row sum that drops a column is inside atol = rtol = 1e-2 but
thousands of times the original's error; a row kernel that reads and writes one past each
row gives the right values but writes past its output's end. Guard bands and the error
relative to the original catch them; honest candidates still pass (CPU, TRITON_INTERPRET=1)."""

from __future__ import annotations

import pytest

from conftest import ROOT, write

pytest.importorskip("triton", reason="the [verify] extra (triton) is not installed")

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from skel import api, errors  # noqa: E402
from skel.verifier import guards  # noqa: E402
from skel.verifier.correctness import error_floor, reduction_length, run_and_check  # noqa: E402
from skel.verifier.harness import Harness  # noqa: E402

CHEATERS = ROOT / "tests" / "cheaters"


@pytest.fixture(autouse=True)
def _no_offline_compile(monkeypatch):
    import skel.verifier.applied as applied

    monkeypatch.setattr(applied, "compare_machine_code",
                        lambda *_a, **_k: (None, "machine code not compared here (tests/test_applied.py covers it)"))


def verify(original: str, candidate: str, **kw):
    return api.verify(CHEATERS / original, CHEATERS / candidate, device="cpu", **kw)


# --- the two reproductions -----------------------------------------------------------------

def test_kernelbench_row_sum_dropping_a_column_is_wrong_by_its_error_next_to_the_original():
    r = verify("kb_rowsum.py", "kb_drops_last_column.py")
    assert r.record.verdict == "wrong" and r.exit_code == errors.EXIT_WRONG, r.record.detail
    d = r.record.detail
    assert "error 2.2 vs the original's" in d and "x) on output 0" in d and "inside the tolerance" in d, d


def test_kernelbench_honest_row_sum_passes():
    r = verify("kb_rowsum.py", "kb_rowsum_correct.py")
    assert r.record.verdict == "correct", r.record.detail


def test_the_ratio_check_can_be_turned_off_and_the_tolerance_then_lets_the_dropped_column_through(tmp_path):
    orig = write(tmp_path / "kb_rowsum.py", (CHEATERS / "kb_rowsum.py").read_text() + "\nERROR_RATIO = 0\n")
    r = api.verify(orig, CHEATERS / "kb_drops_last_column.py", device="cpu")
    assert r.record.verdict == "correct", r.record.detail  # what the check adds: without it, a pass


def test_reading_and_writing_one_past_each_row_is_wrong_by_its_guard_band():
    r = verify("rowscale.py", "past_row_end.py")
    assert r.record.verdict == "wrong", r.record.detail
    assert "output 0: written outside it: 1 element(s) past its end (at storage element 600; its last is 599)" \
        in r.record.detail, r.record.detail


def test_an_honest_harness_candidate_still_passes():
    r = verify("rowsum.py", "correct.py")
    assert r.record.verdict == "correct", r.record.detail


# --- the guard bands themselves ----------------------------------------------------------------

@triton.jit
def _copy_kernel(x_ptr, y_ptr, n, EXTRA: tl.constexpr, SHIFT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs + SHIFT, mask=offs < n, other=0.0)  # SHIFT=1: reads one past the end
    tl.store(y_ptr + offs, x, mask=offs < n + EXTRA)  # EXTRA=1: writes one past the end


def _harness(tmp_path, extra: int, shift: int) -> tuple[Harness, object]:
    h = Harness.from_module(_module(tmp_path), tmp_path / "h.py")

    def launch(x, y):
        _copy_kernel[(1,)](x, y, x.numel(), EXTRA=extra, SHIFT=shift, BLOCK=64)

    return h, launch


def _module(tmp_path):
    from skel.verifier.harness import import_file

    return import_file(write(tmp_path / "h.py", """
        import torch
        SHAPES = {"tiny": dict(N=50)}
        DTYPES = ("float32",)
        TOLERANCES = {"float32": (0.0, 0.0)}
        def make_inputs(shape, dtype, seed, device):
            return (torch.arange(shape["N"], dtype=dtype) + 1,)
        def make_outputs(shape, dtype, device):
            return (torch.empty(shape["N"], dtype=dtype),)
        def reference(x):
            return (x.clone(),)
    """))


def test_a_write_one_past_the_end_is_caught_with_the_tensor_and_the_place(tmp_path):
    h, launch = _harness(tmp_path, extra=1, shift=0)
    bad = [c for c in run_and_check(h, launch, {"N": 50}, "float32", 0, "cpu") if not c.ok]
    assert [c.describe() for c in bad] == [
        "output 0: written outside it: 1 element(s) past its end (at storage element 50; its last is 49) "
        "(guard band changed)"]


def test_a_read_one_past_the_end_is_caught_and_blamed_on_the_input(tmp_path):
    h, launch = _harness(tmp_path, extra=0, shift=1)
    bad = [c for c in run_and_check(h, launch, {"N": 50}, "float32", 0, "cpu") if not c.ok]
    assert len(bad) == 1 and bad[0].index == 0
    assert "1 NaN where the reference has a number: read past its end (NaN from the guard band after input 0)" \
        in bad[0].describe(), bad[0].describe()


def test_an_honest_copy_passes_inside_guards(tmp_path):
    h, launch = _harness(tmp_path, extra=0, shift=0)
    assert all(c.ok for c in run_and_check(h, launch, {"N": 50}, "float32", 0, "cpu"))


def test_guards_keep_layout_values_and_alignment_and_leave_placed_views_alone():
    x = torch.randn(5, 7).t()  # non-contiguous, owns its storage
    g = guards.guard(x)
    assert g is not None and torch.equal(g.view, x) and g.view.stride() == x.stride()
    assert g.view.data_ptr() % 256 == g.buf.data_ptr() % 256
    assert guards.violation(g) == ""
    g.view.add_(1)  # writing the tensor itself is no violation
    assert guards.violation(g) == ""
    g.buf[g.offset - 1] = 0.0
    assert "1 element(s) before its start (at storage element -1)" in guards.violation(g)
    base = torch.zeros(100)
    assert guards.guard(base[10:20]) is None  # a view into a larger buffer: the harness's layout
    assert guards.guard(torch.zeros(3).expand(4, 3)) is None
    ints = guards.guard(torch.arange(4, dtype=torch.int32))
    assert ints is not None and int(ints.buf[0]) == torch.iinfo(torch.int32).min


def test_input_and_output_bands_hold_different_nans():
    a, b = guards.guard(torch.zeros(4), role=0), guards.guard(torch.zeros(4), role=1)
    assert a is not None and b is not None
    assert torch.isnan(a.buf[0]) and torch.isnan(b.buf[0])
    assert int(a.buf[:1].view(torch.int32)) != int(b.buf[:1].view(torch.int32))
    b.buf[-1] = a.buf[0]  # an input's NaN copied past the output's end
    assert "past its end" in guards.violation(b)


# --- the floor -----------------------------------------------------------------------------------

def test_the_floor_is_a_few_ulps_scaled_by_the_reduction_length_and_the_output_size():
    eps = torch.finfo(torch.float32).eps
    assert error_floor(torch.float32, 100, 50.0) == pytest.approx(4 * eps * 10 * 50.0)
    assert error_floor(torch.float32, 1, 0.0) == pytest.approx(4 * eps)
    assert error_floor(torch.int32, 100, 50.0) == 0.0
    x, out = torch.zeros(16, 1000), torch.zeros(16)
    assert reduction_length([x], [out]) == 1000
    assert reduction_length([torch.zeros(8, 8)], [torch.zeros(8, 8)], flops=2 * 8 * 8 * 8) == 16


# --- what the new checks preempt still works on its own ------------------------------------------

def test_with_the_ratio_off_the_precision_cheater_is_still_caught_by_its_error_growth(tmp_path):
    """tf32_drift.py is now caught at the first case (its error is thousands of times the
    original's); the growth check behind it still catches it when the ratio is off."""
    orig = write(tmp_path / "rowsum.py", (CHEATERS / "rowsum.py").read_text() + "\nERROR_RATIO = 0\n")
    r = api.verify(orig, CHEATERS / "tf32_drift.py", device="cpu", tolerance=(0.03, 0.0))
    assert r.record.verdict == "wrong" and "error growth with N" in r.record.detail, r.record.detail


# --- a CUDA fault is a verdict, not a crash ------------------------------------------------

def test_a_cuda_fault_reported_while_results_are_compared_is_wrong_and_nothing_later_runs(monkeypatch):
    """A CUDA graph replayed over freed tensors (benchmarks/verifier_fooling gpu_stale_graph) faults
    asynchronously: torch reports "CUDA error: an illegal memory access" at the next call that
    synchronises, while results are compared, outside both sides' calls, and `skel verify` ended
    with exit 2 and no record. The CPU has no CUDA fault to provoke: the comparison raises the
    error torch raises there. The verdict is `wrong`, naming the error; nothing is timed."""
    from skel.verifier import correctness

    def faulting(*_a, **_k):
        raise RuntimeError("CUDA error: an illegal memory access was encountered\nCUDA kernel errors might be "
                           "asynchronously reported at some other API call")

    monkeypatch.setattr(correctness, "same_results", faulting)
    r = verify("rowsum.py", "correct.py")
    assert r.record.verdict == "wrong" and r.exit_code == errors.EXIT_WRONG, r.record.detail
    assert "CUDA error: an illegal memory access was encountered" in r.record.detail
    assert r.record.speedup is None and [s.name for s in r.stages if s.status != "skipped"][-1] == "same results"


def test_an_ordinary_exception_is_not_taken_for_a_cuda_fault():
    from skel.verifier.run import _cuda_fault

    assert _cuda_fault(RuntimeError("CUDA error: misaligned address"))
    assert not _cuda_fault(RuntimeError("shape mismatch")) and not _cuda_fault(ValueError("CUDA error"))
