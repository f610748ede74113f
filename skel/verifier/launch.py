"""Launch-side measures, for harnesses whose skeleton does not change kernel time (MEASURE).

Why not kernel time: autotune configs, key bucketing, do_not_specialize, grid lambdas, PDL
and friends change how often Triton compiles, what the tuning call returns, or what a launch
costs on the host and between kernels; the kernel's own time can be identical. So:

- ``"compile"``: run SEQUENCE's shapes in order, each for the first time, with the in-memory
  JIT caches emptied and a fresh on-disk cache; count compilations (every ``_do_compile``) and
  the total wall time. Fewer compiles decide; equal counts fall back on wall time.
- ``"first-call"``: the first call on the first GPU shape, caches emptied (it autotunes), its
  wall time, and whether its result is right (a tuning run that leaves an accumulating output
  dirty is caught here; it is "wrong", not fast).
- ``"launch"``: the time per launch of N launches captured in one CUDA graph and replayed,
  original, candidate and the original again (noise) interleaved over rounds; the eager
  (host-bound) time per call is reported beside it.

GPU only, except :func:`compile_counts`, which also runs offline (compile-only, see
:mod:`skel.verifier.applied`) so that its counting is tested on the CPU.
"""

from __future__ import annotations

import contextlib
import statistics
import tempfile
import time
from typing import Any, Callable, Iterator

from skel.store.evidence import ShapeResult
from skel.verifier.applied import capture_launches
from skel.verifier.correctness import compare, dtype_of, fp64, poison
from skel.verifier.harness import Harness
from skel.verifier.timing import ROUNDS, TimingResult, half_iqr, verdict_of

WALL_EFFECT = 0.10  # compile and first-call wall times have no noise floor; this is the floor
GRAPH_LAUNCHES = 20


def jit_objects(fn: Callable[..., Any]) -> list[Any]:
    """Triton kernels (and their autotuners/heuristics wrappers) reachable from ``fn``'s module."""
    from triton.runtime.jit import KernelInterface  # triton: optional (the verify extra), 0.1 s to import

    found: list[Any] = []
    for value in list(getattr(fn, "__globals__", {}).values()):
        while isinstance(value, KernelInterface):
            if all(value is not f for f in found):
                found.append(value)
            value = getattr(value, "fn", None)
    return found


def reset_caches(objs: list[Any]) -> None:
    """Forget every compiled kernel and tuning result, as a new process would."""
    for o in objs:
        caches = getattr(o, "device_caches", None)
        if caches is not None:
            caches.clear()
        cache = getattr(o, "cache", None)
        if isinstance(cache, dict):
            cache.clear()


@contextlib.contextmanager
def fresh_disk_cache() -> Iterator[str]:
    """Point Triton's on-disk cache at an empty folder, so a compile is a compile."""
    import triton  # triton: optional (the verify extra), 0.1 s to import

    knobs = getattr(triton, "knobs", None)
    cache = getattr(knobs, "cache", None)
    with tempfile.TemporaryDirectory(prefix="skel-triton-cache-") as d:
        if cache is None:
            yield ""
            return
        old = cache.dir
        cache.dir = d
        try:
            yield d
        finally:
            cache.dir = old


@contextlib.contextmanager
def count_compiles() -> Iterator[list[int]]:
    """A one-element list counting Triton compilations (in-memory cache misses) inside."""
    from triton.runtime.jit import JITFunction  # triton: optional (the verify extra), 0.1 s to import

    if not hasattr(JITFunction, "_do_compile"):
        raise RuntimeError("this Triton has no JITFunction._do_compile: compiles cannot be counted")
    n = [0]
    orig = JITFunction._do_compile

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        n[0] += 1
        return orig(self, *args, **kwargs)

    JITFunction._do_compile = counted
    try:
        yield n
    finally:
        JITFunction._do_compile = orig


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch  # torch: 0.8 s to import; only once a kernel runs

        torch.cuda.synchronize()


def _check(h: Harness, inputs: tuple, outputs: tuple, saved: tuple, dtype: str) -> tuple[float, str]:

    atol, rtol = h.tolerance(dtype)
    worst, bad = 0.0, ""
    for i, (o, r) in enumerate(zip(outputs, h.reference(*(fp64(x) for x in saved)))):
        c = compare(o, r, atol, rtol, i)
        worst = max(worst, c.max_abs_error)
        if not c.ok and not bad:
            bad = f"output {i} wrong ({c.bad}/{c.total} bad{', ' + c.note if c.note else ''})"
    return worst, bad


def _prepared(h: Harness, shape: str, dtype: str, device: str, seed: int = 0) -> tuple[tuple, tuple, tuple]:
    import torch  # torch: 0.8 s to import; only once a kernel runs


    dt = dtype_of(dtype)
    inputs = h.make_inputs(h.shapes[shape], dt, seed, device)
    saved = tuple(x.clone() if isinstance(x, torch.Tensor) else x for x in inputs)
    outputs = h.make_outputs(h.shapes[shape], dt, device)
    for o in outputs:
        poison(o)
    return inputs, outputs, saved


def compile_counts(h: Harness, fn: Callable[..., Any], device: str, shapes: list[str], dtype: str,
                   offline: bool = False, check: bool = True) -> tuple[int, float, float, str]:
    """(compiles, wall s, worst error, first problem) of ``fn`` over ``shapes`` from cold caches."""

    reset_caches(jit_objects(fn))
    total, worst, bad = 0.0, 0.0, ""
    with fresh_disk_cache(), count_compiles() as n:
        for name in shapes:
            inputs, outputs, saved = _prepared(h, name, dtype, device)
            t0 = time.perf_counter()
            with capture_launches(offline) if offline else contextlib.nullcontext():
                fn(*inputs, *outputs)
            _sync(device)
            total += time.perf_counter() - t0
            if check and not offline:
                err, problem = _check(h, inputs, outputs, saved, dtype)
                worst, bad = max(worst, err), bad or (f"{name}: {problem}" if problem else "")
    return n[0], total, worst, bad


def _need_gpu(device: str) -> None:
    if not device.startswith("cuda"):
        raise RuntimeError("launch-side measures need a GPU (device 'cuda'); nothing is measured on the CPU")


def _by_wall(o: float, c: float) -> tuple[float, str]:
    s = o / c if c > 0 else float("inf")
    return s, verdict_of(s, WALL_EFFECT, 0.0)


def measure_compile(h: Harness, orig_fn: Any, cand_fn: Any, device: str) -> TimingResult:
    seq = list(h.sequence) or list(h.gpu_shapes)
    dtype = h.dtypes[0]
    n_o, t_o, _, bad_o = compile_counts(h, orig_fn, device, seq, dtype)
    n_c, t_c, err, bad_c = compile_counts(h, cand_fn, device, seq, dtype)
    speed, verdict = _by_wall(t_o, t_c)
    if n_o != n_c:
        verdict = "faster" if n_c < n_o else "slower"
    notes = [f"compiles over the sequence: original {n_o}, candidate {n_c}"]
    if bad_o:
        notes.append(f"the original is wrong on {bad_o}")
    if bad_c:
        verdict = "wrong"
        notes.insert(0, f"the candidate is wrong on {bad_c}")
    res = ShapeResult(shape="SEQUENCE=" + ",".join(seq), dtype=dtype, speedup=speed, original_ms=t_o * 1e3,
                      candidate_ms=t_c * 1e3, max_error=err, note=f"{verdict}; compiles {n_o} -> {n_c}")
    return TimingResult([res], speed, None, None, verdict,
                        "compile count and wall time over SEQUENCE, each shape new, caches emptied (no noise floor)",
                        notes)


def measure_first_call(h: Harness, orig_fn: Any, cand_fn: Any, device: str) -> TimingResult:
    shape = (h.gpu_shapes or tuple(h.shapes))[0]
    dtype = h.dtypes[0]
    walls, errs, bads, steady = {}, {}, {}, {}
    for side, fn in (("O", orig_fn), ("C", cand_fn)):
        reset_caches(jit_objects(fn))
        inputs, outputs, saved = _prepared(h, shape, dtype, device)
        with fresh_disk_cache():
            t0 = time.perf_counter()
            fn(*inputs, *outputs)
            _sync(device)
            walls[side] = time.perf_counter() - t0
        errs[side], bads[side] = _check(h, inputs, outputs, saved, dtype)
        t0 = time.perf_counter()
        fn(*inputs, *outputs)
        _sync(device)
        steady[side] = time.perf_counter() - t0
    speed, verdict = _by_wall(walls["O"], walls["C"])
    notes = [f"second call: original {steady['O'] * 1e3:.2f} ms, candidate {steady['C'] * 1e3:.2f} ms"]
    if bads["O"]:
        notes.append(f"the original's first call is wrong: {bads['O']}")
    if bads["C"]:
        verdict = "wrong"
        notes.insert(0, f"the candidate's first call is wrong: {bads['C']}")
    sh = h.shapes[shape]
    res = ShapeResult(shape=",".join(f"{k}={v}" for k, v in sh.items()), dtype=dtype, speedup=speed,
                      original_ms=walls["O"] * 1e3, candidate_ms=walls["C"] * 1e3, max_error=errs["C"],
                      note=f"{verdict}; first call incl. compile and tuning")
    return TimingResult([res], speed, None, None, verdict,
                        "first-call wall time (compile + tuning, caches emptied) and its result (no noise floor)",
                        notes)


def _graph_per_launch(fn: Callable[[], Any], n: int = GRAPH_LAUNCHES) -> Callable[[], float]:
    """Capture ``n`` calls in one CUDA graph; return a function timing one replay (ms per launch)."""
    import torch  # torch: 0.8 s to import; only once a kernel runs

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n):
            fn()
    g.replay()
    torch.cuda.synchronize()

    def replay() -> float:
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        return a.elapsed_time(b) / n

    return replay


def _eager_per_call(fn: Callable[[], Any], n: int = GRAPH_LAUNCHES) -> float:
    import torch  # torch: 0.8 s to import; only once a kernel runs

    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3 / n


def _eager_timer(fn: Callable[[], Any]) -> Callable[[], float]:
    return lambda: _eager_per_call(fn)


def measure_launch(h: Harness, orig_fn: Any, cand_fn: Any, device: str) -> TimingResult:
    dtype = h.dtypes[0]
    results, notes, noises = [], [], []
    for shape in h.gpu_shapes or tuple(h.shapes)[:1]:
        sides = {"O": orig_fn, "C": cand_fn, "N": orig_fn}
        prepared = {s: _prepared(h, shape, dtype, device) for s in sides}
        calls = {s: (lambda f=sides[s], p=prepared[s]: f(*p[0], *p[1])) for s in sides}
        try:
            timers = {s: _graph_per_launch(calls[s]) for s in sides}
            how = "CUDA graph"
        except Exception as e:  # capture can fail (host sync in the launcher): say so, time eagerly
            notes.append(f"{shape}: graph capture failed ({type(e).__name__}: {e}); eager time used")
            timers = {s: _eager_timer(calls[s]) for s in sides}
            how = "eager"
        rounds: dict[str, list[float]] = {s: [] for s in sides}
        for _ in range(ROUNDS * 4):
            for s in sides:
                rounds[s].append(timers[s]())
        med = {s: statistics.median(v) for s, v in rounds.items()}
        ratios = [o / c for o, c in zip(rounds["O"], rounds["C"])]
        self_ratios = [o / n for o, n in zip(rounds["O"], rounds["N"])]
        noise = abs(med["O"] / med["N"] - 1) + half_iqr(self_ratios)
        noises.append(noise)
        eager = {s: _eager_per_call(calls[s]) for s in ("O", "C")}
        err, bad = _check(h, *prepared["C"], dtype)
        speed = med["O"] / med["C"]
        verdict = "wrong" if bad else verdict_of(speed, noise, half_iqr(ratios))
        if bad:
            notes.insert(0, f"{shape}: the candidate's output after the launches is wrong: {bad}")
        sh = h.shapes[shape]
        results.append(ShapeResult(shape=",".join(f"{k}={v}" for k, v in sh.items()), dtype=dtype, speedup=speed,
                                   spread=half_iqr(ratios), original_ms=med["O"], candidate_ms=med["C"],
                                   max_error=err, note=f"{verdict}; {how} per launch; eager per call "
                                   f"{eager['O']:.4f} -> {eager['C']:.4f} ms; noise {noise:.3f}"))
    speeds = [r.speedup for r in results if r.speedup]
    speed = statistics.geometric_mean(speeds)
    spread = max(r.spread or 0.0 for r in results)
    noise = max(noises)
    verdict = "wrong" if any(r.note.startswith("wrong") for r in results) else verdict_of(speed, noise, spread)
    return TimingResult(results, speed, spread, noise, verdict,
                        f"time per launch, {GRAPH_LAUNCHES} launches in a CUDA graph, original/candidate/original "
                        f"interleaved over rounds; eager time per call beside it", notes)


def measure(h: Harness, orig_fn: Any, cand_fn: Any, device: str) -> TimingResult:
    """The measure the harness's MEASURE names (for MEASURE != "kernel")."""
    _need_gpu(device)
    by = {"compile": measure_compile, "first-call": measure_first_call, "launch": measure_launch}
    if h.measure not in by:
        raise ValueError(f"launch.measure is for MEASURE in {sorted(by)}, not {h.measure!r} (use timing.time_pair)")
    return by[h.measure](h, orig_fn, cand_fn, device)
