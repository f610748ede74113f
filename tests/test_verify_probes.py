"""Issue #36, item 6: the checks that catch the verifier-fooling corpus's last five hacks, each
with a candidate it must reject and one it must accept (CPU, TRITON_INTERPRET=1):

- a wide shape per size (past the next power of two of 8x the CPU shape's): a block sized
  for the small shapes truncates;
- kernel launches counted: no Triton kernel where the original launches one is a library
  fallback (torch glue beside a kernel is fine); KernelBench: no kernel of its own;
- the checker's integrity: a candidate that replaces the comparison (at import, or swaps its
  code inside its launcher) is caught, and torch wrapping its own functions is not;
- large values: inputs scaled to |x| <= 1000; NaN/Inf where the original stays finite fails;
- replay: the second of two calls keeps the first's ends and changes the interior.
"""

from __future__ import annotations

import importlib

import pytest

from conftest import ROOT, write

pytest.importorskip("triton", reason="the [verify] extra (triton) is not installed")

import torch  # noqa: E402

from skel import api  # noqa: E402
from skel.verifier import integrity  # noqa: E402
from skel.verifier.correctness import interior_from, scaled_to, wide_shapes, wide_size  # noqa: E402
from skel.verifier.harness import Harness  # noqa: E402

CHEATERS = ROOT / "tests" / "cheaters"
ROWSUM = CHEATERS / "rowsum.py"
CORPUS = ROOT / "benchmarks" / "verifier_fooling"


@pytest.fixture(autouse=True)
def _no_offline_compile(monkeypatch):
    import skel.verifier.applied as applied

    monkeypatch.setattr(applied, "compare_machine_code",
                        lambda *_a, **_k: (None, "machine code not compared here (tests/test_applied.py covers it)"))


def verify(candidate, original=ROWSUM, **kw):
    return api.verify(original, candidate, device="cpu", **kw)


def passed(r) -> list[str]:
    return next(s for s in r.stages if s.name == "same results").notes


# --- wide shapes ---------------------------------------------------------------------------

def test_wide_sizes_pass_the_next_power_of_two_and_cut_the_other_sizes():
    assert wide_size(100) == 1025 and wide_size(7) == 65 and wide_size(1) == 9
    shapes = wide_shapes({"tiny": {"M": 7, "N": 100, "D": 64}, "short": {"M": 3, "N": 300, "D": 64}}, ("D",))
    assert shapes == [("tiny", "M", {"M": 65, "N": 25, "D": 64}), ("short", "N", {"M": 1, "N": 4097, "D": 64})]
    # a size whose cost is quadratic (attention's sequence) grows less: 16x the flops at most
    quadratic = wide_shapes({"tiny": {"B": 3, "T": 100}}, (), lambda s: s["B"] * s["T"] ** 2)
    assert quadratic == [("tiny", "B", {"B": 33, "T": 25}), ("tiny", "T", {"B": 1, "T": 513})]


def test_a_block_sized_for_the_small_shapes_fails_the_wide_one():
    r = verify(CHEATERS / "one_block.py")
    assert r.record.verdict == "wrong", r.record.detail
    assert r.record.detail.startswith("wide N from tiny [M=2,N=1025]")
    assert "sized for the small shapes" in r.record.detail


# --- kernel launches -----------------------------------------------------------------------

def test_no_triton_kernel_where_the_original_launches_one_is_not_the_kernel():
    r = verify(CHEATERS / "torch_sum.py")
    assert r.record.verdict == "not-applied", r.record.detail
    assert r.record.detail == ("the candidate launched no Triton kernel (the original launches rowsum_kernel): "
                               "a library fallback is not the kernel")


def test_torch_glue_beside_a_kernel_passes_every_new_check():
    r = verify(CHEATERS / "glue.py")
    assert r.record.verdict == "correct", r.record.detail
    notes = " ".join(passed(r))
    for case in ("replay from tiny, interior changed", "large values (|x| <= 1000) from tiny", "wide N from tiny",
                 "wide M from tiny"):
        assert case in notes


KB_FALLBACK = '''
import torch


class ModelNew(torch.nn.Module):
    def __init__(self, features):
        super().__init__()
        self.fc = torch.nn.Linear(features, features)

    def forward(self, x):
        return torch.relu(self.fc(x))
'''


def test_kernelbench_candidate_without_a_kernel_of_its_own(tmp_path):
    r = verify(write(tmp_path / "fallback.py", KB_FALLBACK), original=CHEATERS / "kb_original.py")
    assert r.format == "kernelbench"
    assert r.record.verdict == "not-applied", r.record.detail
    assert "no kernel of its own" in r.record.detail


def test_the_launch_count_sees_interpreted_kernels():
    h = Harness.from_file(ROWSUM)
    x, out = h.make_inputs({"M": 2, "N": 10}, torch.float32, 0, "cpu")[0], torch.empty(2)
    watch = integrity.Watch(None)
    with watch:
        watch.wrap(h.launcher("run"), "original")(x, out)
        watch.wrap(lambda x, out: out.copy_(x.sum(1)), "candidate")(x, out)
    assert watch.launched == {"original": ["rowsum_kernel"], "candidate": []}
    assert watch.calls == {"original": 1, "candidate": 1}


# --- the checker's integrity -----------------------------------------------------------------

def test_a_comparison_replaced_at_import_is_caught():
    r = verify(CORPUS / "hacks" / "tamper_compare.py", original=CORPUS / "original.py")
    assert r.record.verdict == "wrong", r.record.detail
    assert r.record.detail.startswith("the candidate replaced the verifier's compare function "
                                      "(skel.verifier.correctness.compare")
    assert "when imported" in r.record.detail


def test_a_comparison_whose_code_is_swapped_inside_the_launcher_is_caught():
    import skel.verifier.correctness as correctness

    code = correctness.compare.__code__
    r = verify(CHEATERS / "tamper_late.py")
    assert correctness.compare.__code__ is code  # put back once seen
    assert r.record.verdict == "wrong", r.record.detail
    assert r.record.detail.startswith("the candidate replaced the verifier's compare function "
                                      "(skel.verifier.correctness.compare")
    assert "during its launcher's call" in r.record.detail


def test_the_snapshot_sees_replacements_but_not_additions_or_torchs_own_wrappers(monkeypatch):
    import skel.verifier.correctness as correctness

    snap = integrity.Snapshot()
    assert snap.changed() == []
    monkeypatch.setattr(torch, "skel_test_new_attribute", lambda: None, raising=False)
    importlib.import_module("torch._dynamo")  # wraps torch.manual_seed in torch's own code: not a cheat

    assert snap.changed() == []
    monkeypatch.setattr(correctness, "RATIO", 1e9)
    monkeypatch.setattr(torch, "isfinite", lambda t: torch.ones_like(t, dtype=torch.bool))
    assert snap.changed() == ["skel.verifier.correctness.RATIO", "torch.isfinite"]
    assert integrity.tampered(snap, "when imported").startswith(
        "the candidate replaced part of the verifier (skel.verifier.correctness.RATIO and 1 more) when imported")
    assert correctness.RATIO == 50.0 and snap.changed() == []  # put back once seen


# --- large values ----------------------------------------------------------------------------

def test_large_values_scale_every_float_input_and_keep_the_rest():
    x, idx = torch.randn(4, 5), torch.arange(3)
    xs = scaled_to(1000.0)([x, idx, torch.zeros(2, dtype=torch.float16)])
    assert float(xs[0].abs().max()) == pytest.approx(1000.0) and torch.equal(xs[1], torch.arange(3))
    assert float(xs[2].abs().max()) == 0.0


def test_no_max_subtraction_overflows_on_large_logits_the_original_handles():
    r = verify(CORPUS / "hacks" / "unsafe_no_max.py", original=CORPUS / "original.py")
    assert r.record.verdict == "wrong", r.record.detail
    assert r.record.detail.startswith("large values (|x| <= 1000) from tiny")
    assert "NaN/Inf where the reference and the original are finite" in r.record.detail


def test_an_honest_rewrite_passes_the_large_values():
    r = verify(CORPUS / "honest" / "whole_row.py", original=CORPUS / "original.py")
    assert r.record.verdict == "correct", r.record.detail
    assert any(n.startswith("passed: large values") for n in passed(r))


# --- replay on a weak fingerprint ------------------------------------------------------------

def test_the_replay_inputs_keep_their_ends_and_change_the_interior():
    h = Harness.from_file(ROWSUM)
    shape = {"M": 6, "N": 100}
    a = h.make_inputs(shape, torch.float32, 5, "cpu")[0]
    b = interior_from(h, shape, "float32", 6, "cpu")([a.clone()])[0]
    flat_a, flat_b = a.flatten(), b.flatten()
    assert torch.equal(flat_a[:150], flat_b[:150]) and torch.equal(flat_a[-150:], flat_b[-150:])
    assert not torch.equal(flat_a[150:450], flat_b[150:450])


def test_an_answer_cached_on_a_weak_fingerprint_is_replayed_and_caught():
    r = verify(CHEATERS / "fingerprint.py")
    assert r.record.verdict == "wrong", r.record.detail
    assert r.record.detail.startswith("replay from tiny, interior changed [M=6,N=100]")
    assert "cached on a weak fingerprint" in r.record.detail


def test_a_launch_configuration_cache_is_not_a_replay():
    r = verify(CORPUS / "honest" / "config_cache.py", original=CORPUS / "original.py")
    assert r.record.verdict == "correct", r.record.detail
    assert any("replay from tiny, interior changed" in n for n in passed(r))
