"""Every skeleton's runnable example pair, run for correctness on the CPU (TRITON_INTERPRET=1).

One table-driven test: for each skeleton, its example (``skel/skeletons/catalog/<id>/example.py``) runs
both launchers on every CPU shape and dtype, with poisoned outputs, against the reference.
A pair the interpreter cannot run says why in its ``CPU_SKIP`` (and the skip shows it).
"""

from __future__ import annotations

import os

import pytest

from skel.skeletons import registry
from skel.skeletons.pairs import example_path, module_name

SKELETONS = registry.all_skeletons()


def test_triton_is_there_when_ci_requires_it():
    """CI must run the pairs, not skip them: there a missing Triton is a failure."""
    if not os.environ.get("SKEL_REQUIRE_REAL_PACKAGES"):
        pytest.skip("SKEL_REQUIRE_REAL_PACKAGES is not set (only CI requires Triton)")
    import triton  # noqa: F401


def test_every_skeleton_has_an_example():
    missing = [s.id for s in SKELETONS if not example_path(s.id).is_file()]
    assert not missing, f"skeletons without a runnable example: {missing}"


def _harness(sk):
    os.environ["TRITON_INTERPRET"] = "1"  # before triton is first imported (conftest also sets it)
    pytest.importorskip("triton", reason="the [verify] extra (triton) is not installed")
    from skel.verifier.harness import Harness, import_file

    return Harness.from_module(import_file(example_path(sk.id), module_name(sk.id)))


def _template_only(sk) -> bool:
    """A CUDA example that holds only its two sides (`before_cuda`/`after_cuda` strings) and no
    harness: shown as the template, never run (its docstring says why)."""
    text = example_path(sk.id).read_text(encoding="utf-8")
    return "before_cuda = " in text and "\nSHAPES" not in text


TEMPLATE_ONLY = [s for s in SKELETONS if example_path(s.id).is_file() and _template_only(s)]


@pytest.mark.parametrize("sk", TEMPLATE_ONLY, ids=lambda s: s.id)
def test_a_template_only_example_is_cuda_and_says_why_it_does_not_run(sk):
    import ast
    import re

    assert "cuda" in sk.languages, f"{sk.id}: a Triton skeleton needs a runnable pair"
    doc = ast.get_docstring(ast.parse(example_path(sk.id).read_text(encoding="utf-8"))) or ""
    assert re.search(r"no (gpu )?harness|not runnable|template only", doc, re.I), \
        f"{sk.id}: a template-only example's docstring must say why it has no harness"


@pytest.mark.parametrize("sk", [s for s in SKELETONS if example_path(s.id).is_file() and s not in TEMPLATE_ONLY],
                         ids=lambda s: s.id)
def test_example_pair_is_correct_on_the_cpu(sk):
    from skel.verifier.correctness import run_and_check

    h = _harness(sk)
    if h.cpu_skip:
        pytest.skip(f"{sk.id}: the CPU interpreter cannot run it: {h.cpu_skip}")
    assert h.cpu_shapes, f"{sk.id}: CPU_SHAPES is empty and no CPU_SKIP says why"
    failures = []
    for side in ("before", "after"):
        launcher = h.launcher(side)
        for shape_name in h.cpu_shapes:
            for dtype in h.dtypes:
                for check in run_and_check(h, launcher, h.shapes[shape_name], dtype, seed=1, device="cpu"):
                    if not check.ok:
                        failures.append(f"{side} {shape_name} {dtype}: {check}")
    assert not failures, "\n".join(failures)
