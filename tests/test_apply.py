"""`skel apply ID FILE --kernel NAME`: each skeleton's mechanical codemod (catalog/<id>/codemod.py).

Table-driven over every skeleton whose folder has a codemod:

1. applied to its own example's ``before_kernel``, the skeleton's own detector sees the
   technique in the result (and did not before), and only that kernel's lines changed;
2. the candidate computes what the original does on the CPU (TRITON_INTERPRET=1): the
   verifier's same-results stage (fresh inputs, two seeds, perturbed shapes, poisoned
   outputs) and a direct comparison of both on the same inputs;
3. applied to its ``after_kernel`` (the technique already there) it refuses with
   AlreadyPresentError; applied to a kernel without what it rewrites, NothingToRewriteError.

Then the command line: exit codes, -o, --json, the input never overwritten unless -o names it.
"""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from skel import errors
from skel.cli import cli
from skel.skeletons import registry
from skel.skeletons.base import Target
from skel.skeletons.codemods import apply_source, kernel_facts
from skel.skeletons.pairs import example_path, module_name

CODEMODS = registry.with_codemod()

#: a kernel with nothing any codemod rewrites: no int32 `pid * runtime` address (the block is
#: constexpr), no exp, no loop, no dot, no length parameter, no re-read or shared load
PLAIN = '''import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n_elements), mask=offs < n_elements)
'''


def _source(sid: str) -> str:
    return example_path(sid).read_text(encoding="utf-8")


def test_the_codemods_are_the_mechanical_skeletons():
    """Seven skeletons are rewritten mechanically; the rest are applied by hand."""
    assert set(CODEMODS) == {"int64-offsets", "exp2-log2e-folding", "static-range-unroll", "do-not-specialize",
                             "eviction-hints", "dot-input-precision-tf32x3", "dot-acc-argument"}
    assert registry.codemod_of("online-softmax") is None
    with pytest.raises(errors.NotFoundError):
        registry.codemod_of("no-such-skeleton")


@pytest.mark.parametrize("sid", CODEMODS)
def test_codemod_makes_its_own_detector_see_the_technique(sid):
    sk = registry.get(sid)
    path = str(example_path(sid))
    original = kernel_facts(_source(sid), path, "before_kernel")
    assert sk.assess(original, Target()).present is None, "the example's before side already shows it"
    applied = apply_source(sid, _source(sid), "before_kernel", path)
    facts = kernel_facts(applied.source, path, "before_kernel")
    assert sk.assess(facts, Target()).present is not None
    # only the rewritten kernel changed (its decorators included), and the rest of the file is as it was
    assert applied.changed_lines
    assert all(facts.line_start <= n <= facts.line_end for n in applied.changed_lines), applied.diff()
    old, new = _source(sid).splitlines(), applied.source.splitlines()
    assert new[facts.line_end:] == old[len(old) - (len(new) - facts.line_end):]
    assert new[:facts.line_start - 1] == old[:facts.line_start - 1]
    assert kernel_facts(applied.source, path, "after_kernel").source == kernel_facts(
        _source(sid), path, "after_kernel").source


def _harness(path, name):
    os.environ["TRITON_INTERPRET"] = "1"  # before triton is first imported (conftest also sets it)
    pytest.importorskip("triton", reason="the [verify] extra (triton) is not installed")
    from skel.verifier.harness import Harness, import_file

    return Harness.from_module(import_file(path, name))


@pytest.mark.parametrize("sid", CODEMODS)
def test_candidate_computes_what_the_original_does_on_the_cpu(sid, tmp_path):
    import torch

    from skel.verifier.correctness import dtype_of, same_results

    orig = _harness(example_path(sid), module_name(sid))
    if orig.cpu_skip:
        pytest.skip(f"{sid}: the CPU interpreter cannot run its example: {orig.cpu_skip}")
    candidate = tmp_path / f"{sid.replace('-', '_')}_applied.py"
    candidate.write_text(apply_source(sid, _source(sid), "before_kernel", str(example_path(sid))).source,
                         encoding="utf-8")
    cand = _harness(candidate, f"skel_test_apply_{sid.replace('-', '_')}")
    assert cand.launcher("before") is not orig.launcher("before")
    res = same_results(orig, orig.launcher("before"), cand.launcher("before"), shape_names=list(orig.cpu_shapes),
                       dtypes=list(orig.dtypes), seed=11, device="cpu")
    assert res.verdict is None, res.detail
    assert res.checked and not res.inconclusive, (res.checked, res.inconclusive)
    assert any(c.startswith("fresh") for c in res.checked), res.notes
    # and side by side: the same fresh inputs through both, outputs compared with each other
    for name in orig.cpu_shapes:
        for dt in orig.dtypes:
            inputs = orig.make_inputs(orig.shapes[name], dtype_of(dt), 23, "cpu")
            outs = []
            for h in (orig, cand):
                out = h.make_outputs(h.shapes[name], dtype_of(dt), "cpu")
                h.launcher("before")(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs], *out)
                outs.append(out)
            atol, rtol = orig.tolerance(dt)
            for a, b in zip(*outs):
                torch.testing.assert_close(b, a, atol=atol, rtol=rtol)


@pytest.mark.parametrize("sid", CODEMODS)
def test_codemod_refuses_a_kernel_that_already_uses_it(sid):
    with pytest.raises(errors.AlreadyPresentError, match=f"after_kernel: {sid} is already present"):
        apply_source(sid, _source(sid), "after_kernel", str(example_path(sid)))


@pytest.mark.parametrize("sid", CODEMODS)
def test_codemod_says_when_there_is_nothing_to_rewrite(sid):
    with pytest.raises(errors.NothingToRewriteError) as info:
        apply_source(sid, PLAIN, "copy_kernel", "plain.py")
    assert "copy_kernel" in str(info.value) and info.value.exit_code == errors.EXIT_NOT_APPLICABLE


def test_codemods_keep_what_they_do_not_own():
    """The rewrites keep the rest of the statement: a dot's keywords, a decorator's arguments."""
    src = '''import triton
import triton.language as tl


@triton.jit(debug=False)
def k(a_ptr, c_ptr, T, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * T + tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :]).to(tl.float32)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for i in range(0, T, BLOCK):
        acc += tl.dot(a, a, out_dtype=tl.float32)
    tl.store(c_ptr + offs, tl.sum(acc, axis=1))
'''
    out = apply_source("dot-acc-argument", src, "k").source
    assert "acc = tl.dot(a, a, acc, out_dtype=tl.float32)" in out
    out = apply_source("do-not-specialize", src, "k").source
    assert '@triton.jit(debug=False, do_not_specialize=["T"])' in out
    out = apply_source("int64-offsets", src, "k").source
    assert "offs = tl.program_id(0).to(tl.int64) * T + tl.arange(0, BLOCK)" in out


# --- the command line ---------------------------------------------------------------------------


def _run(*args):
    return CliRunner().invoke(cli, ["apply", *args])


@pytest.fixture
def kernel_file(tmp_path):
    p = tmp_path / "softmax.py"
    p.write_text(_source("exp2-log2e-folding"), encoding="utf-8")
    return p


def test_cli_prints_the_candidate_and_leaves_the_input_alone(kernel_file):
    before = kernel_file.read_text(encoding="utf-8")
    r = _run("exp2-log2e-folding", str(kernel_file), "--kernel", "before_kernel")
    assert r.exit_code == 0, r.output
    assert "p = tl.exp2((qk - m_new[:, None]) * LOG2E)" in r.stdout and "LOG2E = 1.4426950408889634" in r.stdout
    assert kernel_file.read_text(encoding="utf-8") == before


def test_cli_writes_out_and_points_at_verify(kernel_file, tmp_path):
    before = kernel_file.read_text(encoding="utf-8")
    out = tmp_path / "candidate.py"
    r = _run("exp2-log2e-folding", str(kernel_file), "--kernel", "before_kernel", "-o", str(out))
    assert r.exit_code == 0 and r.stdout == ""
    assert "skel verify" in r.stderr and "--skeleton exp2-log2e-folding" in r.stderr
    assert "tl.exp2(" in out.read_text(encoding="utf-8") and kernel_file.read_text(encoding="utf-8") == before


def test_cli_overwrites_the_input_only_when_o_names_it(kernel_file):
    r = _run("exp2-log2e-folding", str(kernel_file), "--kernel", "before_kernel", "-o", str(kernel_file))
    assert r.exit_code == 0
    assert "alpha = tl.exp2((m - m_new) * LOG2E)" in kernel_file.read_text(encoding="utf-8")


def test_cli_json(kernel_file, tmp_path):
    r = _run("exp2-log2e-folding", str(kernel_file), "--kernel", "before_kernel", "--json")
    data = json.loads(r.stdout)
    assert r.exit_code == 0 and set(data) == {"id", "kernel", "changed_lines", "output"}
    assert (data["id"], data["kernel"]) == ("exp2-log2e-folding", "before_kernel")
    lines = data["output"].splitlines()
    assert data["changed_lines"] and all("exp2" in lines[n - 1] or "LOG2E =" in lines[n - 1]
                                         for n in data["changed_lines"])
    out = tmp_path / "c.py"
    data = json.loads(_run("exp2-log2e-folding", str(kernel_file), "--kernel", "before_kernel", "--json",
                           "-o", str(out)).stdout)
    assert data["output"] == str(out) and out.is_file()


def test_cli_exit_codes(kernel_file, tmp_path):
    assert _run("exp2-log2e-folding", str(kernel_file), "--kernel", "after_kernel").exit_code == \
        errors.EXIT_NOT_APPLICABLE == 9
    plain = tmp_path / "plain.py"
    plain.write_text(PLAIN, encoding="utf-8")
    r = _run("exp2-log2e-folding", str(plain), "--kernel", "copy_kernel")
    assert r.exit_code == errors.EXIT_NOT_APPLICABLE and "nothing" not in r.stdout and "no `tl.exp(x)`" in r.stderr
    r = _run("online-softmax", str(kernel_file), "--kernel", "before_kernel")
    assert r.exit_code == errors.EXIT_NO_CODEMOD == 10 and "by hand" in r.stderr
    r = _run("exp2-log2e-folding", str(kernel_file), "--kernel", "nope")
    assert r.exit_code == errors.EXIT_NO_SUCH_KERNEL == 11 and "before_kernel" in r.stderr
    r = _run("no-such-skeleton", str(kernel_file), "--kernel", "before_kernel")
    assert r.exit_code == errors.EXIT_ERROR and "unknown skeleton" in r.stderr
    assert _run("exp2-log2e-folding", str(tmp_path / "missing.py"), "--kernel", "k").exit_code == errors.EXIT_ERROR
    assert _run("exp2-log2e-folding", str(kernel_file)).exit_code == errors.EXIT_ERROR  # --kernel is required
    out = tmp_path / "never.py"
    _run("exp2-log2e-folding", str(kernel_file), "--kernel", "after_kernel", "-o", str(out))
    assert not out.exists()


def test_cli_refuses_non_utf8_and_unparsable_files(tmp_path):
    latin = tmp_path / "latin.py"
    latin.write_bytes(PLAIN.replace("import triton\n", "import triton  # caf\xe9\n", 1).encode("latin-1"))
    r = _run("int64-offsets", str(latin), "--kernel", "copy_kernel")
    assert r.exit_code == errors.EXIT_ERROR and "not UTF-8" in r.stderr and "Traceback" not in r.output
    broken = tmp_path / "broken.py"
    broken.write_text(PLAIN + "\ndef oops(:\n", encoding="utf-8")
    r = _run("int64-offsets", str(broken), "--kernel", "copy_kernel")
    assert r.exit_code == errors.EXIT_ERROR and "does not parse" in r.stderr


def test_cli_help_teaches_with_an_example():
    r = _run("--help")
    assert r.exit_code == 0
    assert "skel apply int64-offsets kernel.py --kernel" in r.output and "skel verify" in r.output
    assert all(code in r.output for code in ("9 ", "10 ", "11 "))
