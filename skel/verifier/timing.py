"""Stage 4, faster? — the original against the candidate on a GPU, with its own error bars.

Why each rule:
- **interleaved, random order**: original, candidate and the original again (the noise
  floor) run in a shuffled order within every iteration, so clock boosts, thermal drift and
  other tenants hit all three alike; the noise floor comes from the same run, not a constant;
- **L2 flushed before every timed call** (a 256 MB write; H200's L2 is 50 MB) and **input
  sets rotated** when one set is smaller than twice the L2, so neither side finds its inputs
  cached by the previous call;
- **CUDA events** for kernel time with the GPU kept busy (launch overhead hidden, as in
  ``triton.testing.do_bench``); **device-synchronised wall time** on a few calls as well:
  if the candidate's wall time exceeds its event time by much more than the original's does,
  it runs work outside the timed stream (a side-stream cheat) and the verdict is "wrong";
- **median, and spread** = half the interquartile range of the per-round ratios; the verdict
  "no-effect" when ``|speedup - 1| <= max(noise, spread, 2 %)``;
- **roofline**: a candidate faster than ``max(bytes / peak bandwidth, flops / peak FLOP/s)``
  by more than 10 % is a measurement error (or a cheat), never a speed-up;
- **outputs of the timed runs** are checked against the reference afterwards (poisoned first),
  so what was timed is what was verified;
- **budget**: every pair gets a wall-clock budget, split over its shapes; the number of
  iterations follows from a first estimate of the call time.

Everything device-specific is behind :class:`Bench`, so the logic is tested on the CPU with a
fake bench (tests/test_timing.py). On the CPU without one, :func:`time_pair` raises.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from skel.store.evidence import ShapeResult
from skel.verifier.correctness import compare, dtype_of, fp64, poison
from skel.verifier.gpu import peaks_for
from skel.verifier.harness import Harness

L2_BYTES = 50 * 2**20  # H200
FLUSH_BYTES = 256 * 2**20
MIN_EFFECT = 0.02  # below 2 % nothing is called faster or slower, whatever the noise
ROOFLINE_SLACK = 0.10
SIDE_STREAM_MIN_MS = 0.02  # hidden work below this is launch jitter, not a cheat
SIDE_STREAM_FRACTION = 0.3  # ... and must be this share of the candidate's wall time
ROUNDS = 5
MAX_SETS = 4


@dataclass
class TimingResult:
    per_shape: list[ShapeResult]
    speedup: float | None  # geometric mean over the shapes
    spread: float | None
    noise: float | None
    verdict: str  # "faster" | "slower" | "no-effect" | "wrong"
    method: str
    notes: list[str] = field(default_factory=list)


class Bench(Protocol):
    """What timing needs from a device. ``queue`` must not wait for the call to finish."""

    def flush(self) -> None: ...
    def queue(self, fn: Callable[[], Any]) -> Any: ...
    def elapsed(self, handles: list[Any]) -> list[float]: ...  # ms, after waiting for all
    def synced(self, fn: Callable[[], Any]) -> tuple[float, float]: ...  # (event ms, wall ms)
    def sync(self) -> None: ...


class CudaBench:
    """CUDA events on the current stream; the L2 flushed by writing a 256 MB buffer."""

    def __init__(self, device: str = "cuda") -> None:
        import torch  # torch: 0.8 s to import; only once a kernel runs

        if not torch.cuda.is_available():
            raise RuntimeError("GPU timing asked for, but torch sees no GPU")
        self.torch = torch
        self.buf = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device=device)

    def flush(self) -> None:
        self.buf.zero_()

    def queue(self, fn: Callable[[], Any]) -> Any:
        ev = self.torch.cuda.Event
        s, e = ev(enable_timing=True), ev(enable_timing=True)
        s.record()
        fn()
        e.record()
        return s, e

    def elapsed(self, handles: list[Any]) -> list[float]:
        self.torch.cuda.synchronize()
        return [s.elapsed_time(e) for s, e in handles]

    def synced(self, fn: Callable[[], Any]) -> tuple[float, float]:
        self.flush()
        self.torch.cuda.synchronize()
        t0 = time.perf_counter()
        s, e = self.queue(fn)
        self.torch.cuda.synchronize()  # waits for every stream, unlike the events
        wall = (time.perf_counter() - t0) * 1e3
        return s.elapsed_time(e), wall

    def sync(self) -> None:
        self.torch.cuda.synchronize()


# ---- statistics ----------------------------------------------------------------------------

def half_iqr(xs: list[float]) -> float:
    if len(xs) < 2:
        return 0.0
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return (q[2] - q[0]) / 2


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def verdict_of(speedup: float, noise: float, spread: float) -> str:
    threshold = max(noise, spread, MIN_EFFECT)
    if abs(speedup - 1) <= threshold:
        return "no-effect"
    return "faster" if speedup > 1 else "slower"


def roofline_floor_ms(h: Harness, shape: dict[str, int], dtype: Any, peak_bw: float | None,
                      peak_flops: float | None) -> float | None:
    """The least time the harness's bytes and FLOPs allow on this device, or None if unknown."""
    terms = []
    b, f = h.bytes_moved(shape, dtype), h.flops(shape, dtype)
    if b and peak_bw:
        terms.append(b / peak_bw)
    if f and peak_flops:
        terms.append(f / peak_flops)
    return max(terms) * 1e3 if terms else None


def side_stream_gap(orig: list[tuple[float, float]], cand: list[tuple[float, float]]) -> tuple[bool, float]:
    """(cheat?, hidden ms): the candidate's wall-minus-event gap beyond the original's."""
    gap_o = statistics.median(w - e for e, w in orig)
    gap_c = statistics.median(w - e for e, w in cand)
    wall_c = statistics.median(w for _, w in cand)
    hidden = gap_c - gap_o
    return hidden > SIDE_STREAM_MIN_MS and hidden > SIDE_STREAM_FRACTION * wall_c, hidden


# ---- one shape -----------------------------------------------------------------------------

@dataclass
class _Sets:
    inputs: list[tuple]
    outs: dict[str, list[tuple]]  # "O", "C", "N" -> outputs per set


def _make_sets(h: Harness, shape: dict[str, int], dtype: Any, seed: int, device: str) -> _Sets:
    """One input set from the harness, cloned until the sets together exceed twice the L2."""
    import torch  # torch: 0.8 s to import; only once a kernel runs

    first = h.make_inputs(shape, dtype, seed, device)
    nbytes = sum(x.numel() * x.element_size() for x in first if isinstance(x, torch.Tensor))
    outs0 = h.make_outputs(shape, dtype, device)
    nbytes += sum(o.numel() * o.element_size() for o in outs0)
    k = 1 if nbytes >= 2 * L2_BYTES else min(MAX_SETS, max(2, math.ceil(2 * L2_BYTES / max(nbytes, 1))))
    inputs = [first] + [tuple(x.clone() if isinstance(x, torch.Tensor) else x for x in first) for _ in range(k - 1)]
    outs = {side: [h.make_outputs(shape, dtype, device) for _ in range(k)] for side in ("O", "C", "N")}
    return _Sets(inputs, outs)


def _check_outputs(h: Harness, sets: _Sets, dtype_name: str, side: str) -> tuple[float, str]:
    """Worst abs error of ``side``'s timed outputs over all sets, and a note if any is wrong."""

    atol, rtol = h.tolerance(dtype_name)
    ref = h.reference(*(fp64(x) for x in sets.inputs[0]))
    worst, bad = 0.0, ""
    for outs in sets.outs[side]:
        for i, (o, r) in enumerate(zip(outs, ref)):
            c = compare(o, r, atol, rtol, i)
            worst = max(worst, c.max_abs_error)
            if not c.ok and not bad:
                bad = f"output {i} of a timed run is wrong ({c.bad}/{c.total} bad{', ' + c.note if c.note else ''})"
    return worst, bad


def _time_shape(bench: Bench, calls: dict[str, list[Callable[[], Any]]], budget_s: float,
                rng: random.Random, est_ms: float) -> dict[str, list[list[float]]]:
    """Interleaved timed calls: per side, per round, the event times (ms)."""
    per_call_ms = est_ms + 0.1  # the flush and the host's share
    n = int(budget_s * 1e3 / (ROUNDS * 3 * per_call_ms))
    n = max(3, min(200, n))
    k = len(calls["O"])
    times: dict[str, list[list[float]]] = {s: [] for s in calls}
    offset = {side: j for j, side in enumerate(calls)}
    it = 0
    for _ in range(ROUNDS):
        handles: list[tuple[str, Any]] = []
        for _ in range(n):
            order = list(calls)
            rng.shuffle(order)
            for side in order:  # each side advances through the sets; the sides start apart
                bench.flush()
                handles.append((side, bench.queue(calls[side][(it + offset[side]) % k])))
            it += 1
        ms = bench.elapsed([hd for _, hd in handles])
        for side in calls:
            times[side].append([t for (s, _), t in zip(handles, ms) if s == side])
    return times


def _bind(fn: Callable[..., Any], inputs: tuple, outputs: tuple) -> Callable[[], Any]:
    return lambda: fn(*inputs, *outputs)


def time_pair(h: Harness, orig_fn: Callable[..., Any], cand_fn: Callable[..., Any], *, device: str = "cuda",
              shapes: list[str], dtype: str, seed: int, budget_s: float = 8.0, bench: Bench | None = None,
              peak_bw: float | None = None, peak_flops: float | None = None) -> TimingResult:
    """Time ``cand_fn`` against ``orig_fn`` on each shape; see the module docstring for the rules."""

    if bench is None:
        if not device.startswith("cuda"):
            raise RuntimeError("timing needs a GPU (device 'cuda'); on the CPU nothing is timed")
        bench = CudaBench(device)
        if peak_bw is None or peak_flops is None:

            peaks = peaks_for(device)
            if peaks:
                peak_bw = peak_bw or peaks.hbm_bps
                peak_flops = peak_flops or peaks.flops_for(dtype)
    if not shapes:
        raise ValueError("no shapes to time")
    dt = dtype_of(dtype)
    rng = random.Random(seed)
    notes: list[str] = []
    results: list[ShapeResult] = []
    noises: list[float] = []
    wrong: list[str] = []
    share = budget_s / len(shapes)
    for name in shapes:
        start = time.perf_counter()
        shape = h.shapes[name]
        sets = _make_sets(h, shape, dt, seed, device)
        fns = {"O": orig_fn, "C": cand_fn, "N": orig_fn}
        calls: dict[str, list[Callable[[], Any]]] = {
            side: [_bind(fns[side], i, o) for i, o in zip(sets.inputs, sets.outs[side])]
            for side in fns}
        for side in calls:  # compile, autotune, warm up
            for c in calls[side][:2]:
                c()
        bench.sync()
        synced = {side: [bench.synced(calls[side][j % len(calls[side])]) for j in range(5)] for side in ("O", "C")}
        est = max(statistics.median(w for _, w in synced[s]) for s in synced)
        for side in sets.outs:
            for outs in sets.outs[side]:
                for o in outs:
                    poison(o)
        remaining = share - (time.perf_counter() - start)
        times = _time_shape(bench, calls, max(remaining, 0.2 * share), rng, est)
        res = ShapeResult(shape=",".join(f"{k}={v}" for k, v in shape.items()), dtype=dtype)
        results.append(res)
        med = {s: statistics.median(t for r in times[s] for t in r) for s in times}
        res.original_ms, res.candidate_ms = med["O"], med["C"]
        res.speedup = med["O"] / med["C"] if med["C"] > 0 else None
        ratios = [statistics.median(o) / statistics.median(c) for o, c in zip(times["O"], times["C"])]
        self_ratios = [statistics.median(o) / statistics.median(n) for o, n in zip(times["O"], times["N"])]
        res.spread = half_iqr(ratios)
        noise = abs(med["O"] / med["N"] - 1) + half_iqr(self_ratios)
        noises.append(noise)
        err, bad = _check_outputs(h, sets, dtype, "C")
        res.max_error = err
        problems = []
        if bad:
            problems.append(bad)
        cheat, hidden = side_stream_gap(synced["O"], synced["C"])
        if cheat:
            problems.append(f"work outside the timed stream: wall time exceeds event time by {hidden:.3f} ms more "
                            f"than the original's")
        floor = roofline_floor_ms(h, shape, dt, peak_bw, peak_flops)
        if floor is not None and med["C"] < (1 - ROOFLINE_SLACK) * floor:
            if med["O"] < (1 - ROOFLINE_SLACK) * floor:
                notes.append(f"{name}: both sides beat the roofline ({floor:.4f} ms): the harness's bytes_moved/flops "
                             f"look wrong; not used")
            else:
                problems.append(f"faster than the roofline ({med['C']:.4f} ms < {floor:.4f} ms): a measurement error")
        per_verdict = "wrong" if problems else (verdict_of(res.speedup, noise, res.spread) if res.speedup else "wrong")
        res.note = "; ".join([per_verdict, *problems, f"noise {noise:.3f}", f"{len(sets.inputs)} input set(s)",
                              f"{ROUNDS}x{len(times['O'][0])} interleaved"])
        wrong += [f"{name}: {p}" for p in problems]
    speeds = [r.speedup for r in results if r.speedup]
    speedup = geomean(speeds) if len(speeds) == len(results) else None
    spread = max(r.spread or 0.0 for r in results)
    noise = max(noises)
    if wrong or speedup is None:
        verdict = "wrong"
        notes = wrong + notes
    else:
        verdict = verdict_of(speedup, noise, spread)
    method = (f"CUDA events, original/candidate/original interleaved, random order, L2 flushed ({FLUSH_BYTES >> 20} MB "
              f"write) before every call, inputs rotated, median of {ROUNDS} rounds; noise = original vs itself")
    return TimingResult(results, speedup, spread, noise, verdict, method, notes)
