"""The timing stage's logic on the CPU, with a fake bench: the device is faked, the rules are real."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from skel.skeletons.pairs import example_path, module_name  # noqa: E402
from skel.verifier import timing  # noqa: E402


class FakeBench:
    """Times a call by what the fake launcher says it cost; logs flushes and calls."""

    def __init__(self, jitter: float = 0.01, seed: int = 0) -> None:
        self.log: list[str] = []
        self.pending = 0.0
        self.side = 0.0
        self.jitter = jitter
        self.rng = random.Random(seed)

    def flush(self) -> None:
        self.log.append("flush")

    def queue(self, fn):
        self.pending = 0.0
        self.log.append("call")
        fn()
        return self.pending * (1 + self.rng.uniform(-self.jitter, self.jitter))

    def elapsed(self, handles):
        return list(handles)

    def synced(self, fn):
        self.pending, self.side = 0.0, 0.0
        self.log.append("synced")
        fn()
        return self.pending, self.pending + self.side + 0.01

    def sync(self) -> None:
        pass


def launcher(bench: FakeBench, ms: float, side_ms: float = 0.0, good_calls: int | None = None, seen=None):
    calls = [0]

    def run(x, lse):
        calls[0] += 1
        if seen is not None:
            seen.append(x.data_ptr())
        if good_calls is None or calls[0] <= good_calls:
            lse.copy_(torch.logsumexp(x.double(), 1).float())
        bench.pending += ms
        bench.side += side_ms
    return run


@pytest.fixture(scope="module")
def h():
    from skel.verifier.harness import Harness, import_file

    return Harness.from_module(import_file(example_path("online-softmax"), module_name("online-softmax")))


@pytest.fixture(autouse=True)
def _still_clock(request, monkeypatch):
    """The fake bench's verdicts must not depend on how busy the machine is: the timing
    stage sizes its rounds from the wall time left in its budget, so a loaded machine (CI,
    a laptop compiling) drew fewer calls and another verdict from the same seeded jitter.
    Here the stage's clock stands still: every run times the budget's full count. (Not for
    the GPU tests: the real bench reads wall time to catch side-stream work.)"""
    if not any("GPU-only" in str(m.kwargs.get("reason", "")) for m in request.node.iter_markers("skipif")):
        monkeypatch.setattr(timing, "time", type("StillClock", (), {"perf_counter": staticmethod(lambda: 0.0)}))


def run(h, bench, orig, cand, **kw):
    return timing.time_pair(h, orig, cand, device="cpu", shapes=["tiny"], dtype="float32", seed=0, budget_s=0.3,
                            bench=bench, **kw)


def test_faster_and_slower(h):
    b = FakeBench()
    r = run(h, b, launcher(b, 1.0), launcher(b, 0.5))
    assert r.verdict == "faster" and r.speedup == pytest.approx(2.0, rel=0.03)
    assert r.noise is not None and r.noise < 0.02 and r.per_shape[0].max_error < 1e-5
    b = FakeBench()
    assert run(h, b, launcher(b, 1.0), launcher(b, 1.3)).verdict == "slower"


def test_inside_the_noise_is_no_effect(h):
    b = FakeBench()
    r = run(h, b, launcher(b, 1.0), launcher(b, 1.01))
    assert r.verdict == "no-effect"


def test_verdict_thresholds():
    assert timing.verdict_of(1.05, noise=0.06, spread=0.0) == "no-effect"
    assert timing.verdict_of(1.05, noise=0.01, spread=0.06) == "no-effect"
    assert timing.verdict_of(1.019, noise=0.0, spread=0.0) == "no-effect"  # the 2 % floor
    assert timing.verdict_of(1.05, noise=0.01, spread=0.01) == "faster"
    assert timing.verdict_of(0.9, noise=0.01, spread=0.01) == "slower"
    assert timing.half_iqr([1.0, 1.0, 1.0]) == 0.0 and timing.half_iqr([1, 2, 3, 4, 5]) == 1.0


def test_noise_floor_is_measured(h):
    b = FakeBench(jitter=0.5, seed=3)
    r = run(h, b, launcher(b, 1.0), launcher(b, 1.0))
    assert r.noise > 0.0 and r.verdict == "no-effect"


def test_faster_than_the_roofline_is_rejected(h):
    floor_bw = h.bytes_moved(h.shapes["tiny"], torch.float32) / 1e-3  # the floor is 1 ms
    b = FakeBench()
    r = run(h, b, launcher(b, 2.0), launcher(b, 0.5), peak_bw=floor_bw)
    assert r.verdict == "wrong" and "roofline" in r.notes[0]
    b = FakeBench()  # both beat it: the harness's terms are wrong, not the candidate
    r = run(h, b, launcher(b, 0.6), launcher(b, 0.3), peak_bw=floor_bw)
    assert r.verdict == "faster" and any("look wrong" in n for n in r.notes)


def test_side_stream_work_is_caught(h):
    b = FakeBench()
    r = run(h, b, launcher(b, 1.0), launcher(b, 0.05, side_ms=0.95))
    assert r.verdict == "wrong" and "outside the timed stream" in r.notes[0]
    assert not timing.side_stream_gap([(1.0, 1.02)] * 5, [(2.0, 2.03)] * 5)[0]  # slower, but honest


def test_l2_flushed_before_every_timed_call_and_inputs_rotated(h):
    b = FakeBench()
    seen: list[int] = []
    run(h, b, launcher(b, 1.0), launcher(b, 0.8, seen=seen))
    calls = [i for i, e in enumerate(b.log) if e == "call"]
    assert calls and all(b.log[i - 1] == "flush" for i in calls)
    assert len(set(seen)) == timing.MAX_SETS  # a tiny problem: the sets rotate
    timed = seen[-20:]
    assert all(a != c for a, c in zip(timed, timed[1:]))


def test_timed_outputs_are_checked(h):
    b = FakeBench()
    r = run(h, b, launcher(b, 1.0), launcher(b, 0.5, good_calls=7))  # stops working once timed
    assert r.verdict == "wrong" and "timed run is wrong" in r.notes[0]


def test_no_gpu_no_timing(h):
    with pytest.raises(RuntimeError, match="needs a GPU"):
        timing.time_pair(h, print, print, device="cpu", shapes=["tiny"], dtype="float32", seed=0)


# ---- the timing-stage cheaters (tests/cheaters/gpu_*.py) ----------------------------------

CHEATERS = Path(__file__).parent / "cheaters"
gpu = pytest.mark.skipif(os.environ.get("SKEL_TEST_DEVICE") != "cuda" or not torch.cuda.is_available(),
                         reason="GPU-only (SKEL_TEST_DEVICE=cuda on a GPU machine)")


def _load(name):
    from skel.verifier.harness import Harness, import_file

    mod = import_file(CHEATERS / name)
    return Harness.from_module(mod) if name == "gpu_rowsum.py" else mod


def test_l2_cheater_gives_right_results_both_ways():
    from skel.verifier.correctness import run_and_check

    h, cheat = _load("gpu_rowsum.py"), _load("gpu_l2_resident.py")
    device = "cuda" if os.environ.get("SKEL_TEST_DEVICE") == "cuda" else "cpu"  # the interpreter, unless on a GPU
    for _ in range(2):  # forwards, then backwards
        checks = run_and_check(h, cheat.run, h.shapes["tiny"], "float32", seed=1, device=device)
        assert all(c.ok for c in checks), checks


@gpu
def test_side_stream_cheater_is_caught_on_the_gpu():
    h, cheat = _load("gpu_rowsum.py"), _load("gpu_side_stream.py")
    r = timing.time_pair(h, h.launcher("run"), cheat.run, device="cuda", shapes=["l2x2"], dtype="float32", seed=0,
                         budget_s=3.0)
    assert r.verdict == "wrong", r
    assert any("outside the timed stream" in n or "roofline" in n for n in r.notes), r.notes


@gpu
def test_l2_cheater_gains_nothing_when_the_l2_is_flushed():
    h, cheat = _load("gpu_rowsum.py"), _load("gpu_l2_resident.py")
    r = timing.time_pair(h, h.launcher("run"), cheat.run, device="cuda", shapes=["l2x2"], dtype="float32", seed=0,
                         budget_s=3.0)
    assert r.verdict in ("no-effect", "slower"), r
