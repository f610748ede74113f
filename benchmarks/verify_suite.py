"""The verification suite: naive kernels, skel's suggestions applied by hand, measured on a GPU.

For every kernel in benchmarks/verify_suite/kernels/ (skel's harness format) and every
KernelBench-format problem in benchmarks/verify_suite/kernelbench/, this checks each hand-applied
candidate (candidates/<name>__<skeleton>.py, one suggestion each, plus <name>__expert.py) for
correctness on the device and times it against the naive original.

    python benchmarks/verify_suite.py                       # everything, on cuda
    python benchmarks/verify_suite.py --only softmax,scan   # some kernels (substring match)
    python benchmarks/verify_suite.py --budget-s 300        # stop starting new pairs after 300 s

Writes benchmarks/results/verify_suite_<date>.md and .jsonl: per kernel, the top-1/2/3
suggestion ids (from suggestions/<name>.json, the raw `skel suggest --json -k 5` output), their
speedups (median and spread over the timed shapes), max error, verdict, the best of the top 3,
the expert candidate, and the geometric means.

Pairs run in priority order (top-1, top-2, top-3 and expert of every kernel first, then
suggestions 4-5), so a tight budget still yields the headline numbers.

One function, :func:`verify_pair`, calls skel's verifier (``skel.verifier.run.verify``) when it
exists and falls back to :func:`fallback_verify` (harness + run_and_check + interleaved
``triton.testing.do_bench``) otherwise.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "benchmarks" / "verify_suite"
RESULTS = ROOT / "benchmarks" / "results"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

NOISE = 0.03  # |speedup - 1| below this is "no-effect" in the fallback (the real verifier measures its floor)
ROUNDS = 5  # interleaved timing rounds per shape
MAX_SHAPES = 2  # timed shapes per kernel (the first ones of the harness's GPU shapes)


# ---- discovery ------------------------------------------------------------------------------

def suggestion_ids(name: str) -> list[str]:
    """The ranked suggestion ids skel gave for a kernel file (first kernel with suggestions, then the rest)."""
    path = SUITE / "suggestions" / f"{name}.json"
    if not path.is_file():
        return []
    data = json.loads(path.read_text())
    ids: list[str] = []
    for k in data.get("kernels", []):
        for s in k.get("suggestions", []):
            if s["id"] not in ids:
                ids.append(s["id"])
    return ids


def skipped() -> dict[tuple[str, str], str]:
    """(kernel, skeleton) -> reason, from candidates/SKIPPED.md lines `- kernel / skeleton (#n): reason`."""
    out: dict[tuple[str, str], str] = {}
    path = SUITE / "candidates" / "SKIPPED.md"
    if path.is_file():
        for line in path.read_text().splitlines():
            if line.startswith("- ") and " / " in line and ":" in line:
                head, reason = line[2:].split(":", 1)
                kernel, sk = head.split(" / ", 1)
                out[(kernel.strip(), sk.split("(")[0].strip())] = reason.strip()
    return out


def problems() -> list[dict[str, Any]]:
    """Every suite problem: name, kind ("harness" | "kernelbench"), original file, ranked suggestions."""
    out = []
    for p in sorted((SUITE / "kernels").glob("*.py")):
        out.append(dict(name=p.stem, kind="harness", original=p, ranked=suggestion_ids(p.stem)))
    for p in sorted((SUITE / "kernelbench").glob("*_naive.py")):
        name = p.stem[: -len("_naive")]
        out.append(dict(name=name, kind="kernelbench", original=p, problem=SUITE / "kernelbench" / f"{name}.py",
                        ranked=suggestion_ids(p.stem)))
    return out


def candidate_path(name: str, skeleton: str) -> Path:
    return SUITE / "candidates" / f"{name}__{skeleton}.py"


# ---- one pair -------------------------------------------------------------------------------

def verify_pair(prob: dict[str, Any], candidate: Path, skeleton: str | None, device: str) -> dict[str, Any]:
    """Check and time one candidate against its original; the one place that calls the verifier.

    Returns a flat dict: verdict, speedup, spread, max_error, per_shape, detail, via.
    """
    if prob["kind"] == "harness":
        try:
            from skel.verifier.run import verify  # type: ignore[import-not-found]  # the sibling's API
        except ImportError:
            verify = None
        if verify is not None:
            v, _report = verify(prob["original"], candidate, skeleton=skeleton, device=device, subject="suite")
            return dict(verdict=v.verdict, speedup=v.speedup, spread=v.spread,
                        max_error=max(v.max_error.values()) if v.max_error else None,
                        per_shape=[s.__dict__ if hasattr(s, "__dict__") else s for s in v.per_shape],
                        detail=v.detail, via="skel.verifier.run.verify")
        return fallback_verify(prob["original"], candidate, device)
    return kernelbench_verify(prob, candidate, device)


def _time_pair(fn_a, fn_b, rounds: int) -> tuple[float, float, float, float]:
    """Interleaved do_bench rounds; (median ratio a/b, half-IQR of the ratio, median ms a, median ms b)."""
    import triton

    ta, tb, ratio = [], [], []
    for _ in range(rounds):
        a = triton.testing.do_bench(fn_a, warmup=5, rep=15, return_mode="median")
        b = triton.testing.do_bench(fn_b, warmup=5, rep=15, return_mode="median")
        ta.append(a)
        tb.append(b)
        ratio.append(a / b)
    ratio.sort()
    q = statistics.quantiles(ratio, n=4) if len(ratio) >= 2 else [ratio[0]] * 3
    return statistics.median(ratio), (q[2] - q[0]) / 2, statistics.median(ta), statistics.median(tb)


def _verdict(speedups: list[float]) -> tuple[float, str]:
    g = math.exp(sum(math.log(s) for s in speedups) / len(speedups))
    return g, ("faster" if g > 1 + NOISE else "slower" if g < 1 - NOISE else "no-effect")


_ORIGINALS: dict[Path, Any] = {}  # originals imported once (an autotuned original tunes once)
_INPUTS: dict[tuple, tuple] = {}  # inputs made once per (kernel, shape, dtype, seed, device); pairs get clones


def _original(path: Path) -> Any:
    """The original's harness, imported once, with make_inputs memoised (a 128k-vocabulary batch takes
    seconds to draw on the host; every pair of the kernel reuses it, as a fresh device copy)."""
    if path not in _ORIGINALS:
        import torch

        from skel.verifier.harness import Harness

        h = Harness.from_file(path)
        make = h.module.make_inputs

        def make_inputs(shape: dict, dtype: Any, seed: int, device: str) -> tuple:
            key = (str(path), tuple(sorted(shape.items())), str(dtype), seed, device)
            if key not in _INPUTS:
                _INPUTS[key] = tuple(make(dict(shape), dtype, seed, device))
            return tuple(x.clone() if isinstance(x, torch.Tensor) else x for x in _INPUTS[key])

        h.make_inputs = make_inputs  # type: ignore[method-assign]
        _ORIGINALS[path] = h
    return _ORIGINALS[path]


def fallback_verify(original: Path, candidate: Path, device: str) -> dict[str, Any]:
    """Harness + correctness.run_and_check on every CPU and timed shape, then interleaved timing."""
    from skel.verifier.correctness import dtype_of, run_and_check
    from skel.verifier.harness import Harness

    h = _original(original)
    try:
        run_orig = h.launcher("run")
        run_cand = Harness.from_file(candidate).launcher("run")
    except Exception as e:  # noqa: BLE001 - any failure to load is the candidate's verdict
        return dict(verdict="failed", detail=f"load: {type(e).__name__}: {e}", via="fallback")
    dt_name = h.dtypes[0]
    timed = list(h.gpu_shapes)[:MAX_SHAPES] if device.startswith("cuda") else []
    max_err = 0.0
    for shape_name in (*h.cpu_shapes, *timed):
        try:
            checks = run_and_check(h, run_cand, h.shapes[shape_name], dt_name, 0, device)
        except Exception as e:  # noqa: BLE001
            return dict(verdict="failed", detail=f"{shape_name}: {type(e).__name__}: {str(e)[:300]}", via="fallback")
        max_err = max([max_err, *(c.max_abs_error for c in checks if c.index >= 0)])
        bad = [c for c in checks if not c.ok]
        if bad:
            c = bad[0]
            return dict(verdict="wrong", max_error=max_err, via="fallback",
                        detail=f"{shape_name}: output {c.index}: {c.bad}/{c.total} bad, max abs {c.max_abs_error:.3g}"
                               f" {c.note}")
    if not device.startswith("cuda"):
        return dict(verdict="correct", max_error=max_err, via="fallback", detail="not timed (no GPU)")
    per_shape = []
    dtype = dtype_of(dt_name)
    for shape_name in timed:
        shape = h.shapes[shape_name]
        inputs = h.make_inputs(shape, dtype, 0, device)
        out_o = h.make_outputs(shape, dtype, device)
        out_c = h.make_outputs(shape, dtype, device)
        med, spread, ms_o, ms_c = _time_pair(lambda i=inputs, o=out_o: run_orig(*i, *o),
                                             lambda i=inputs, o=out_c: run_cand(*i, *o), ROUNDS)
        per_shape.append(dict(shape=shape_name, dtype=dt_name, speedup=med, spread=spread, original_ms=ms_o,
                              candidate_ms=ms_c))
    g, verdict = _verdict([s["speedup"] for s in per_shape])
    return dict(verdict=verdict, speedup=g, spread=max(s["spread"] for s in per_shape), max_error=max_err,
                per_shape=per_shape, via="fallback", detail="interleaved do_bench (median of medians)")


def kernelbench_verify(prob: dict[str, Any], candidate: Path, device: str) -> dict[str, Any]:
    """KernelBench: Model (torch) is the reference; the naive ModelNew the original; the candidate a ModelNew."""
    import torch

    from skel.verifier.harness import import_file

    if not device.startswith("cuda"):  # full-size problems; tests/test_verify_suite.py checks them small on the CPU
        return dict(verdict="correct", via="kernelbench", detail="not run off a GPU (the CPU test covers it)")
    problem = import_file(prob["problem"])
    try:
        naive_cls = import_file(prob["original"]).ModelNew
        cand_cls = import_file(candidate).ModelNew
    except Exception as e:  # noqa: BLE001
        return dict(verdict="failed", detail=f"load: {type(e).__name__}: {e}", via="kernelbench")
    init = problem.get_init_inputs()
    torch.manual_seed(0)
    ref_model = problem.Model(*init).to(device)
    models = []
    for cls in (naive_cls, cand_cls):
        m = cls(*init).to(device)
        m.load_state_dict(ref_model.state_dict())
        models.append(m)
    torch.manual_seed(1)
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]
    with torch.no_grad():
        ref = ref_model(*inputs)
        try:
            out = models[1](*inputs)
        except Exception as e:  # noqa: BLE001
            return dict(verdict="failed", detail=f"{type(e).__name__}: {str(e)[:300]}", via="kernelbench")
        err = float((out.double() - ref.double()).abs().max())
        if not torch.allclose(out, ref, atol=1e-2, rtol=1e-2) or not torch.isfinite(out).all():
            return dict(verdict="wrong", max_error=err, via="kernelbench", detail="atol=rtol=1e-2 against Model")
        if not device.startswith("cuda"):
            return dict(verdict="correct", max_error=err, via="kernelbench", detail="not timed (no GPU)")
        med, spread, ms_o, ms_c = _time_pair(lambda: models[0](*inputs), lambda: models[1](*inputs), ROUNDS)
    _, verdict = _verdict([med])
    return dict(verdict=verdict, speedup=med, spread=spread, max_error=err, via="kernelbench",
                per_shape=[dict(shape="get_inputs()", dtype=str(inputs[0].dtype), speedup=med, spread=spread,
                                original_ms=ms_o, candidate_ms=ms_c)],
                detail="interleaved do_bench (median of medians)")


# ---- the run --------------------------------------------------------------------------------

def plan(probs: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any], str, int | None]]:
    """(priority, problem, skeleton-or-"expert", rank) for every pair; lower priority runs first."""
    pairs = []
    for p in probs:
        # harness kernels: all top-5 suggestions were applied; KernelBench problems: the top 3
        for rank, sk in enumerate(p["ranked"][: 5 if p["kind"] == "harness" else 3], 1):
            pairs.append((0 if rank <= 3 else 2, p, sk, rank))
        pairs.append((1, p, "expert", None))
    return sorted(pairs, key=lambda t: t[0])


def geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def fmt(r: dict[str, Any] | None) -> str:
    if not r:
        return "—"
    if r.get("speedup") is None:
        return r["verdict"]
    return f"{r['speedup']:.2f}x ±{(r.get('spread') or 0):.2f} {r['verdict']}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--only", default="", help="comma-separated substrings of problem names")
    ap.add_argument("--budget-s", type=float, default=330.0, help="start no new pair after this many seconds")
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args(argv)

    t0 = time.time()
    probs = problems()
    if args.only:
        keys = [k.strip() for k in args.only.split(",") if k.strip()]
        probs = [p for p in probs if any(k in p["name"] for k in keys)]
    skip = skipped()
    results: dict[tuple[str, str], dict[str, Any]] = {}
    for _prio, prob, sk, rank in plan(probs):
        name = prob["name"]
        row = dict(kernel=name, kind=prob["kind"], skeleton=sk, rank=rank)
        cand = candidate_path(name, sk)
        if (name, sk) in skip:
            row.update(verdict="not-applied", detail=f"skipped: {skip[(name, sk)]}")
        elif not cand.is_file():
            row.update(verdict="not-applied", detail="no candidate file")
        elif time.time() - t0 > args.budget_s:
            row.update(verdict="not-run", detail=f"budget of {args.budget_s:.0f}s spent")
        else:
            t = time.time()
            try:
                row.update(verify_pair(prob, cand, None if sk == "expert" else sk, args.device))
            except Exception as e:  # noqa: BLE001 - one broken pair must not stop the suite
                row.update(verdict="failed", detail=f"{type(e).__name__}: {str(e)[:300]}",
                           trace=traceback.format_exc()[-2000:])
            row["seconds"] = round(time.time() - t, 2)
        results[(name, sk)] = row
        print(f"[{time.time() - t0:6.1f}s] {name:24s} {sk:30s} {fmt(row)}  {row.get('detail', '')[:80]}", flush=True)
        try:
            import torch

            if args.device.startswith("cuda"):
                torch.cuda.empty_cache()
        except Exception:  # noqa: BLE001
            pass

    date = datetime.date.today().isoformat()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    jsonl = out / f"verify_suite_{date}.jsonl"
    with jsonl.open("w") as f:
        for row in results.values():
            f.write(json.dumps(row, default=str) + "\n")

    lines = [f"# verify suite — {date}", "",
             f"device `{args.device}`; {len(results)} pairs in {time.time() - t0:.0f}s. Speedup = original time / "
             "candidate time (median over interleaved rounds, geomean over timed shapes) ± half-IQR; verdict from "
             "the verifier (fallback: no-effect within ±3%).", "",
             "| kernel | top-1 | top-1 result | top-2 | top-2 result | top-3 | top-3 result | best of top 3 | expert "
             "| max error (top-1) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    top1, best3, expert = [], [], []
    for prob in probs:
        name = prob["name"]
        top = prob["ranked"][:3]
        cells = []
        sp = []
        for i in range(3):
            if i < len(top):
                r = results.get((name, top[i]))
                cells += [f"`{top[i]}`", fmt(r)]
                ok = r and r.get("speedup") and r["verdict"] in ("faster", "slower", "no-effect")
                sp.append(r["speedup"] if ok else (0.0 if r and r["verdict"] in ("wrong", "failed") else None))
            else:
                cells += ["—", "—"]
        if sp and sp[0] is not None:
            top1.append(max(sp[0], 1e-9) if sp[0] else 1.0)  # a wrong/failed top-1 counts as 1.0 (not adopted)
        b = max([s for s in sp if s], default=None)
        if b:
            best3.append(max(b, 1.0))
        e = results.get((name, "expert"))
        if e and e.get("speedup"):
            expert.append(e["speedup"])
        r1 = results.get((name, top[0])) if top else None
        err = f"{r1['max_error']:.3g}" if r1 and r1.get("max_error") is not None else "—"
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {f'{b:.2f}x' if b else '—'} | {fmt(e)} | {err} |")
    g1, g3, ge = geomean(top1), geomean(best3), geomean(expert)
    lines += ["", f"- geomean, top suggestion applied: **{g1:.2f}x**" if g1 else "- geomean top-1: —",
              f"- geomean, best of top 3 (1.0 where none helps): **{g3:.2f}x**" if g3 else "- geomean best of 3: —",
              f"- geomean, expert (headroom): **{ge:.2f}x**" if ge else "- geomean expert: —", "",
              "## every pair", "", "| kernel | rank | skeleton | result | max error | detail |",
              "|---|---|---|---|---|---|"]
    for row in results.values():
        err = f"{row['max_error']:.3g}" if row.get("max_error") is not None else "—"
        lines.append(f"| {row['kernel']} | {row.get('rank') or 'expert'} | `{row['skeleton']}` | {fmt(row)} | {err} "
                     f"| {str(row.get('detail', '')).replace('|', '/')[:120]} |")
    md = out / f"verify_suite_{date}.md"
    md.write_text("\n".join(lines) + "\n")
    print(f"wrote {md} and {jsonl}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
