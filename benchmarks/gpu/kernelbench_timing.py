"""The KernelBench timing path on a GPU, checked against the suite's own loop (issue #36, item 4).

For each (problem, candidate) pair of the verification suite's KernelBench problems
(benchmarks/evidence/verify_suite/kernelbench/<name>.py, candidates/<name>__<id>.py):

1. **skel's path**: ``skel.api.verify(PROBLEM, CANDIDATE, device="cuda")`` — what ``skel verify
   PROBLEM CANDIDATE --device cuda`` runs: machine code, same results, then the KernelBench
   timing path (``kernelbench.to_harness`` + ``timing.time_pair``: torch ``Model`` against the
   candidate's ``ModelNew``, CUDA events, original/candidate/original interleaved in random
   order, L2 flushed before every call), and memcheck where the verdict claims ``validated``;
2. **the suite's loop** (``benchmarks.evidence.verify_suite.do_bench_rounds``): the same two
   models on the same problem's inputs, 5 interleaved rounds of ``triton.testing.do_bench``
   medians, the noise floor from Model against itself.

Both medians (Model, ModelNew) and both speed-ups are printed side by side. PASS when

- the speed-ups agree, relatively: ``|s_skel / s_suite - 1| <= max(2 * (spread_skel / s_skel +
  spread_suite / s_suite), 0.03)``. Each spread is half the interquartile range of its loop's
  per-round ratios, so twice their (relative) sum is a wide band for the difference of two
  medians; 3 % is the floor because the verifier calls nothing under 2 % an effect and each
  loop's own median moves by about 1 % from run to run (relative, since a 1 % difference on a
  4x speed-up is 0.04 in absolute terms);
- and each side's medians agree within 10 %: absolute times are not interleaved between the two
  loops (they run seconds apart, the GPU's clocks and temperature move in between), which the
  ratio cancels and an absolute time does not.

    python benchmarks/gpu/kernelbench_timing.py                     # 2 pairs, about 55 s on an H100
    python benchmarks/gpu/kernelbench_timing.py --pairs kb_softmax:expert --out DIR

Writes kernelbench_timing.txt and .json to ``--out``, else to $OUT when set. Without a GPU it
prints one line and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "benchmarks" / "evidence" / "verify_suite"
# a row norm (with a weight: Model's state dict copied) and an elementwise chain; torch runs several kernels
# for each, the fused candidate one
PAIRS = ("kb_rmsnorm:expert", "kb_swish_gelu:expert")  # kb_softmax:expert too with --pairs (25 s more)
MEDIAN_TOL = 0.10
RATIO_FLOOR = 0.03


def agree(skel: dict[str, Any], suite: dict[str, Any]) -> tuple[bool, float, list[str]]:
    """(pass?, the speed-up tolerance used, what disagreed) for one pair's two measurements."""
    tol = max(2 * ((skel["spread"] or 0.0) / skel["speedup"] + (suite["spread"] or 0.0) / suite["speedup"]),
              RATIO_FLOOR)
    bad = []
    off = abs(skel["speedup"] / suite["speedup"] - 1)
    if off > tol:
        bad.append(f"speed-ups differ by {off:.1%} > {tol:.1%}")
    for side in ("original_ms", "candidate_ms"):
        r = skel[side] / suite[side]
        if abs(r - 1) > MEDIAN_TOL:
            bad.append(f"{side} skel/suite = {r:.3f}, outside ±{MEDIAN_TOL:.0%}")
    return not bad, tol, bad


def _skel_path(problem: Path, candidate: Path) -> dict[str, Any]:
    from skel import api

    t = time.perf_counter()
    res = api.verify(problem, candidate, device="cuda")
    rec = res.record
    out: dict[str, Any] = dict(verdict=rec.verdict, detail=rec.detail, notes=list(rec.notes),
                               unchecked=list(res.unchecked), seconds=round(time.perf_counter() - t, 1))
    if rec.per_shape:
        ps = rec.per_shape[0]
        out.update(speedup=ps.speedup, spread=ps.spread, noise=rec.noise, original_ms=ps.original_ms,
                   candidate_ms=ps.candidate_ms)
    return out


def _suite_loop(problem: Path, candidate: Path) -> dict[str, Any]:
    import torch

    from benchmarks.evidence.verify_suite import do_bench_rounds, do_bench_stats
    from skel.verifier.harness import import_file

    t = time.perf_counter()
    prob = import_file(problem)
    init = prob.get_init_inputs()
    torch.manual_seed(0)
    model = prob.Model(*init).cuda()
    new = import_file(candidate).ModelNew(*init).cuda()
    if model.state_dict():
        new.load_state_dict(model.state_dict())
    torch.manual_seed(1)
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in prob.get_inputs()]
    fns = {"O": lambda: model(*inputs), "C": lambda: new(*inputs), "N": lambda: model(*inputs)}
    st = do_bench_stats(do_bench_rounds(fns))
    st["seconds"] = round(time.perf_counter() - t, 1)
    return st


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", default=",".join(PAIRS), help="NAME:CANDIDATE,... (candidates/NAME__CANDIDATE.py)")
    ap.add_argument("--out", default=os.environ.get("OUT") or None)
    args = ap.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("kernelbench_timing: torch is not installed; nothing timed")
        return 0
    if not torch.cuda.is_available():
        print("kernelbench_timing: no GPU (torch sees no CUDA device); nothing timed")
        return 0
    if os.environ.pop("TRITON_INTERPRET", None) == "1":
        print("kernelbench_timing: TRITON_INTERPRET=1 unset for this run")
    sys.path.insert(0, str(ROOT))
    import triton

    lines = [f"# KernelBench timing path vs the suite's loop — {torch.cuda.get_device_name()}, torch "
             f"{torch.__version__}, Triton {triton.__version__}",
             f"# PASS: speed-ups within max(2 x (relative spread_skel + spread_suite), {RATIO_FLOOR:.0%}) of each "
             f"other and each side's medians within {MEDIAN_TOL:.0%} (see the script's docstring for why)",
             f"{'pair':32s} {'loop':6s} {'Model ms':>9s} {'ModelNew ms':>11s} {'speed-up':>9s} {'spread':>7s} "
             f"{'noise':>6s}  verdict"]
    print("\n".join(lines), flush=True)
    rows, ok_all, t0 = [], True, time.perf_counter()
    for pair in [p.strip() for p in args.pairs.split(",") if p.strip()]:
        name, cid = pair.split(":", 1)
        problem, candidate = SUITE / "kernelbench" / f"{name}.py", SUITE / "candidates" / f"{name}__{cid}.py"
        row: dict[str, Any] = dict(pair=pair)
        try:
            row["skel"] = _skel_path(problem, candidate)
            torch.cuda.empty_cache()
            row["suite"] = _suite_loop(problem, candidate)
            torch.cuda.empty_cache()
        except Exception as e:  # noqa: BLE001 - one broken pair is reported, the others still run
            row["error"] = f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"
        out = []
        for loop in ("skel", "suite"):
            m = row.get(loop)
            if not m:
                continue
            if m.get("speedup") is None:
                out.append(f"{pair:32s} {loop:6s} not timed: {m.get('verdict')} — {m.get('detail', '')[:120]}")
                continue
            out.append(f"{pair:32s} {loop:6s} {m['original_ms']:9.4f} {m['candidate_ms']:11.4f} "
                       f"{m['speedup']:9.3f} {m['spread'] or 0:7.3f} {m['noise'] or 0:6.3f}  {m['verdict']} "
                       f"({m['seconds']} s)")
        if "error" in row or any(row.get(k, {}).get("speedup") is None for k in ("skel", "suite")):
            row["pass"] = False
            out.append(f"{pair:32s} FAIL   {row.get('error') or 'one of the loops did not time the pair'}")
        else:
            ok, tol, bad = agree(row["skel"], row["suite"])
            row.update({"pass": ok, "tolerance": tol, "disagreements": bad})
            sk, su = row["skel"], row["suite"]
            out.append(f"{pair:32s} {'PASS' if ok else 'FAIL':6s} speed-up skel/suite "
                       f"{sk['speedup'] / su['speedup']:.3f} (tolerance ±{tol:.1%}); Model ms skel/suite "
                       f"{sk['original_ms'] / su['original_ms']:.3f}, ModelNew ms "
                       f"{sk['candidate_ms'] / su['candidate_ms']:.3f}" + (f"; {'; '.join(bad)}" if bad else ""))
        mem = [n for n in row.get("skel", {}).get("notes", []) if n.startswith("memcheck")]
        if mem:
            out.append(f"{pair:32s} note   {mem[0]}")
        ok_all &= bool(row["pass"])
        rows.append(row)
        print("\n".join(out), flush=True)
        lines += out
    final = (f"{'PASS' if ok_all else 'FAIL'}: {sum(r['pass'] for r in rows)}/{len(rows)} pairs agree between "
             f"skel's KernelBench timing path and the suite's loop ({time.perf_counter() - t0:.0f} s)")
    print(final)
    lines.append(final)
    if args.out:
        d = Path(args.out)
        d.mkdir(parents=True, exist_ok=True)
        (d / "kernelbench_timing.txt").write_text("\n".join(lines) + "\n")
        (d / "kernelbench_timing.json").write_text(json.dumps(rows, indent=2, default=str) + "\n")
        print(f"wrote {d / 'kernelbench_timing.txt'} and .json")
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
