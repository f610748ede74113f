"""What a verify report prints (issue #37): the interpreter's `tl.dot` caveats only where a side
uses `tl.dot`, and every max error with the tolerance it is judged by."""

from __future__ import annotations

import dataclasses
import json

import pytest

from conftest import ROOT

pytest.importorskip("triton", reason="the [verify] extra (triton) is not installed")

from skel import api  # noqa: E402
from skel.verifier import report  # noqa: E402
from skel.verifier import run as vrun  # noqa: E402

CHEATERS = ROOT / "tests" / "cheaters"

DOT_HELPER = '''

@triton.jit
def tile_dot_kernel(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs[:, None] * BLOCK + offs[None, :])
    b = tl.load(b_ptr + offs[:, None] * BLOCK + offs[None, :])
    tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], tl.dot(a, b))
'''


@pytest.fixture(autouse=True)
def _no_offline_compile(monkeypatch):
    import skel.verifier.applied as applied

    monkeypatch.setattr(applied, "compare_machine_code",
                        lambda *_a, **_k: (None, "machine code not compared here (tests/test_applied.py covers it)"))


@pytest.fixture(scope="module")
def no_dot():
    """rowsum against a correct candidate: no `tl.dot` on either side."""
    import skel.verifier.applied as applied

    mp = pytest.MonkeyPatch()
    mp.setattr(applied, "compare_machine_code", lambda *_a, **_k: (None, "machine code not compared here"))
    try:
        yield api.verify(CHEATERS / "rowsum.py", CHEATERS / "correct.py", device="cpu")
    finally:
        mp.undo()


def test_no_tl_dot_caveat_for_kernels_without_tl_dot(no_dot):
    r = no_dot
    assert r.record.verdict == "correct"
    assert not any("tl.dot" in u for u in r.unchecked), r.unchecked
    assert "tl.dot" not in report.text(r) and "tl.dot" not in report.markdown(r)


def test_every_max_error_is_printed_with_its_tolerance(no_dot):
    r = no_dot
    t, md = report.text(r), report.markdown(r)
    err = f"{r.record.max_error['out0']:.3g}"
    assert f"max error out0 {err} (tolerance atol 0.0001, rtol 1e-05)" in t
    assert f"Max error out0 {err} (tolerance atol 0.0001, rtol 1e-05)." in md
    assert json.loads(report.as_json(r))["tolerance"] == {"float32": [0.0001, 1e-05]}
    # a tolerance given on the command line is the one printed
    r = api.verify(CHEATERS / "rowsum.py", CHEATERS / "correct.py", device="cpu", tolerance=(0.001, 0.0))
    assert "(tolerance atol 0.001, rtol 0)" in report.text(r)


def test_tl_dot_caveat_where_the_candidate_uses_tl_dot(tmp_path):
    cand = tmp_path / "with_dot.py"
    cand.write_text((CHEATERS / "correct.py").read_text() + DOT_HELPER)
    r = api.verify(CHEATERS / "rowsum.py", cand, device="cpu")
    assert any("input_precision is ignored" in u for u in r.unchecked), r.unchecked
    assert "tl.dot input_precision is ignored by the interpreter" in report.text(r)


def test_what_counts_as_using_tl_dot(tmp_path):
    assert vrun._calls_dot("acc += tl.dot(a, b)") and vrun._calls_dot("x = triton.language.dot_scaled(a)")
    assert vrun._calls_dot("from triton.language import dot")
    assert not vrun._calls_dot("# tl.dot(a, b) is not used\ns = 'tl.dot'\ny = torch.dot(a, b)")
    # a kernel imported from another file counts: the modules' Triton kernels are read too
    (tmp_path / "dotlib.py").write_text("import triton\nimport triton.language as tl\n" + DOT_HELPER)
    (tmp_path / "side.py").write_text("from dotlib import tile_dot_kernel\n\n\ndef run(a, b, c):\n"
                                      "    tile_dot_kernel[(1,)](a, b, c, BLOCK=16)\n")
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        from skel.verifier.harness import import_file

        mod = import_file(tmp_path / "side.py")
        req = vrun.Request(original=tmp_path / "side.py", candidate=tmp_path / "side.py")
        assert vrun._uses_dot(req, (mod,), (mod.run,))
        plain = vrun.Request(original=CHEATERS / "rowsum.py", candidate=CHEATERS / "correct.py")
        assert not vrun._uses_dot(plain, (), ())
    finally:
        sys.path.remove(str(tmp_path))


def test_tolerance_per_dtype_where_they_differ(no_dot):
    tolerance = {"float32": (1e-4, 1e-5), "bfloat16": (1e-2, 1e-2), "float16": (1e-2, 1e-2)}
    r = dataclasses.replace(no_dot, tolerance=tolerance)
    assert "(tolerance atol 0.0001, rtol 1e-05 for float32; atol 0.01, rtol 0.01 for bfloat16, float16)" in \
        report.text(r)
    assert "(tolerance not recorded)" in report.text(dataclasses.replace(r, tolerance={}))
