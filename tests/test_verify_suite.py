"""The verification suite (benchmarks/evidence/verify_suite/) on the CPU: every naive kernel and every hand-applied
candidate is correct under the interpreter at its CPU shapes; every KernelBench ModelNew (naive and candidates)
matches its torch Model on small inputs; every top-5 suggestion skel gave is either applied or explained."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "benchmarks" / "evidence" / "verify_suite"
KERNELS = sorted((SUITE / "kernels").glob("*.py"))
PROBLEMS = sorted(p for p in (SUITE / "kernelbench").glob("*.py") if not p.stem.endswith("_naive"))
CANDIDATES = sorted((SUITE / "candidates").glob("*__*.py"))

# small sizes for the KernelBench problems' module-level constants (none a multiple of a block)
KB_SMALL = {
    "kb_softmax": dict(batch_size=5, dim=1000),
    "kb_rmsnorm": dict(batch_size=7, features=96),
    "kb_swish_gelu": dict(batch_size=3, dim=700),
    "kb_cross_entropy": dict(batch_size=6, num_classes=3000),
    "kb_matmul_bias_relu": dict(batch_size=40, in_features=72, out_features=48),
}


def _harness_pairs():
    pairs = [(k, k) for k in KERNELS]
    names = {k.stem for k in KERNELS}
    pairs += [(SUITE / "kernels" / f"{c.stem.split('__')[0]}.py", c) for c in CANDIDATES
              if c.stem.split("__")[0] in names]
    return pairs


def test_suite_size():
    assert len(KERNELS) >= 10
    assert len(PROBLEMS) >= 5
    for p in PROBLEMS:
        assert (SUITE / "kernelbench" / f"{p.stem}_naive.py").is_file()


@pytest.mark.parametrize("original,candidate", _harness_pairs(), ids=lambda p: p.stem)
def test_kernel_correct_on_cpu(original, candidate):
    from skel.verifier.correctness import run_and_check
    from skel.verifier.harness import Harness

    h = Harness.from_file(original)
    run = Harness.from_file(candidate).launcher("run") if candidate != original else h.launcher("run")
    dtype = getattr(h.module, "CPU_DTYPE", h.dtypes[0])  # bf16 tl.dot is wrong in the interpreter
    assert h.cpu_shapes and h.gpu_shapes
    for shape in h.cpu_shapes:
        checks = run_and_check(h, run, h.shapes[shape], dtype, 0, "cpu")
        assert all(c.ok for c in checks), [c.to_dict() for c in checks if not c.ok]


def _kb_models(problem: Path, solution: Path):
    import torch

    from skel.verifier.harness import import_file

    mod = import_file(problem, f"kb_problem_{problem.stem}")
    for k, v in KB_SMALL[problem.stem].items():
        setattr(mod, k, v)
    init = mod.get_init_inputs()
    torch.manual_seed(0)
    ref = mod.Model(*init)
    new = import_file(solution).ModelNew(*init)
    new.load_state_dict(ref.state_dict())
    torch.manual_seed(1)
    return ref, new, mod.get_inputs()


def _kb_pairs():
    out = []
    for p in PROBLEMS:
        out.append((p, SUITE / "kernelbench" / f"{p.stem}_naive.py"))
        out += [(p, c) for c in CANDIDATES if c.stem.split("__")[0] == p.stem]
    return out


@pytest.mark.parametrize("problem,solution", _kb_pairs(), ids=lambda p: p.stem)
def test_kernelbench_matches_model(problem, solution):
    import torch

    ref, new, inputs = _kb_models(problem, solution)
    with torch.no_grad():
        want = ref(*inputs)
        got = new(*inputs)
    assert got.shape == want.shape
    assert torch.isfinite(got).all()
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


def _runner():
    from benchmarks.evidence import verify_suite as vs

    return vs


def test_every_planned_top3_suggestion_is_applied_or_explained():
    """plan.json is skel's ranking for the GPU machine (`python -m benchmarks.evidence.verify_suite plan`): each
    problem's top 3 has a hand-applied candidate or a reason in SKIPPED.md, and every problem has an expert."""
    skipped = (SUITE / "candidates" / "SKIPPED.md").read_text()
    plan = json.loads((SUITE / "plan.json").read_text())
    vs = _runner()
    assert set(plan) == {p["name"] for p in vs.problems()}
    for base, ids in plan.items():
        assert ids, base
        for sid in ids[:3]:
            applied = (SUITE / "candidates" / f"{base}__{sid}.py").is_file()
            assert applied or f"- {base} / {sid} " in skipped, (base, sid)
        assert (SUITE / "candidates" / f"{base}__expert.py").is_file(), base


def test_runner_order_and_skips():
    vs = _runner()
    plan = json.loads((SUITE / "plan.json").read_text())
    for p in vs.problems():
        order = vs._order(p["name"], plan)
        assert len(order) == len(set(order)), order
        planned = [s for s in plan[p["name"]][:3] if s in order]
        assert order[:len(planned)] == planned, (p["name"], order)
    assert ("matmul_fp16", "epilogue-fusion") in vs.skipped()
