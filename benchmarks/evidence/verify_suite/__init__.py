"""The verification suite: naive kernels, skel's suggestions applied by hand, verified on a GPU.

Three steps, because the GPU machine has no knowledge base (chromadb) to rank with:

    python -m benchmarks.evidence.verify_suite plan --store DIR     # CPU: rank every problem (skel suggest, sm_90,
                                                                    #   Triton 3.6, shipped evidence) -> plan.json
    python -m benchmarks.evidence.verify_suite run --device cuda --budget-s 420 --out DIR
                                                                    # GPU: verify every (problem, candidate) pair
    python -m benchmarks.evidence.verify_suite report RUNS.jsonl --store DIR
                                                                    # CPU: rank again, each problem without its own
                                                                    #   runs (leave-one-kernel-out), and score the top 3

Problems: benchmarks/evidence/verify_suite/kernels/*.py (skel's harness format, launcher ``run``) and
benchmarks/evidence/verify_suite/kernelbench/<name>.py + <name>_naive.py (KernelBench's format; the naive
Triton ``ModelNew`` is the original of the loop). Candidates: candidates/<name>__<skeleton>.py, one
suggestion applied by hand each, and <name>__expert.py (the headroom reference).

``run`` verifies a harness pair with ``skel.verifier.run.verify`` (applied? with the skeleton
detected, same results on fresh inputs and perturbed shapes, then interleaved timing against a
noise floor measured in the same run). A KernelBench pair is checked with the same verifier
against the torch ``Model`` (check only), then timed against the naive ``ModelNew`` with
interleaved ``do_bench`` rounds and a noise floor (naive against itself). Each problem runs in
its own process (a CUDA fault poisons a context), pairs in plan order (top-ranked first), inside
the budget. Every pair becomes one ``Verification`` (subject "suite", kernel "suite:<name>").
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
SUITE = ROOT / "benchmarks" / "evidence" / "verify_suite"
PLAN = SUITE / "plan.json"
RESULTS = ROOT / "benchmarks" / "results"

TARGET = dict(backend="cuda", arch="sm90", triton="3.6.0")  # the GPU machine the suite runs on
ROUNDS = 5
TOP = 5  # suggestions per problem that are planned (and, where they apply, have candidates)


# ---- discovery ------------------------------------------------------------------------------

def problems() -> list[dict[str, Any]]:
    """Every suite problem: name, kind ("harness" | "kernelbench"), original file (+ problem file)."""
    out = []
    for p in sorted((SUITE / "kernels").glob("*.py")):
        out.append(dict(name=p.stem, kind="harness", original=p))
    for p in sorted((SUITE / "kernelbench").glob("*_naive.py")):
        name = p.stem[: -len("_naive")]
        out.append(dict(name=name, kind="kernelbench", original=p, problem=SUITE / "kernelbench" / f"{name}.py"))
    return out


def kernel_id(name: str) -> str:
    return f"suite:{name}"


def candidate_path(name: str, skeleton: str) -> Path:
    return SUITE / "candidates" / f"{name}__{skeleton}.py"


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


# ---- plan and report (CPU: they rank) -------------------------------------------------------

def rank(prob: dict[str, Any], store: str | None, exclude_kernel: str | None = None, k: int = TOP) -> list[str]:
    """skel's ranked suggestion ids for the problem's file (all its kernels, best first), against the
    GPU machine's environment. ``exclude_kernel`` hides that kernel's own verification runs."""
    from skel import api
    from skel.retriever.suggest import suggest

    target = api.parse_target(TARGET["backend"], TARGET["arch"], TARGET["triton"])
    kb = api.open_store(store, create=False)
    results = suggest(prob["original"], kb, k=k, target=target,
                      exclude_runs=(lambda r: r.kernel == exclude_kernel) if exclude_kernel else None)
    # each kernel's list is already in skel's order (refuted and no-effect last); a file with several
    # kernels interleaves them by position, then score
    merged = sorted(((pos, -s.score, s.id) for r in results for pos, s in enumerate(r.suggestions)))
    ids: list[str] = []
    for _, _, sid in merged:
        if sid not in ids:
            ids.append(sid)
    return ids[:k]


def cmd_plan(args: argparse.Namespace) -> int:
    plan = {}
    for prob in problems():
        plan[prob["name"]] = rank(prob, args.store)
        print(f"{prob['name']:22s} {' '.join(plan[prob['name']])}")
    PLAN.write_text(json.dumps(plan, indent=1) + "\n")
    print(f"wrote {PLAN}")
    return 0


def geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def _cell(rec: dict[str, Any] | None) -> str:
    if not rec or rec["verdict"] == "not-run":
        return "not measured"
    if rec.get("speedup") is None:
        return rec["verdict"]
    return f"{rec['speedup']:.2f}x ±{(rec.get('spread') or 0):.2f} {rec['verdict']}"


def _gain(rec: dict[str, Any] | None) -> float | None:
    """What adopting the suggestion gives: its speedup when correct; 1.0 (keep the original) when it
    is wrong, fails or does not apply; None when it was never measured."""
    if not rec or rec["verdict"] == "not-run":
        return None
    if rec["verdict"] in ("faster", "slower", "no-effect") and rec.get("speedup"):
        return float(rec["speedup"])
    return 1.0


def cmd_report(args: argparse.Namespace) -> int:
    runs: dict[tuple[str, str], dict[str, Any]] = {}
    for path in args.runs:
        for line in Path(path).read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                runs[(r["problem"], r["candidate"])] = r
    skip = skipped()
    rows, top1, best3, expert, missing, partial3 = [], [], [], [], [], []
    wrong = []
    for prob in problems():
        name = prob["name"]
        if args.ranking == "plan":  # the ranking the run measured in (catalog evidence only)
            ranked = json.loads(PLAN.read_text())[name][:3]
        else:
            ranked = rank(prob, args.store, exclude_kernel=kernel_id(name), k=3)
        cells, gains = [], []
        for sid in ranked:
            rec = runs.get((name, sid))
            if rec is None and (name, sid) in skip:
                rec = dict(verdict="not-applied", detail=skip[(name, sid)])
            if rec is None or rec["verdict"] == "not-run":
                missing.append(f"{name}/{sid}")
            elif rec["verdict"] in ("wrong", "failed"):
                wrong.append(f"{name}/{sid}: {rec['verdict']} ({rec.get('detail', '')[:100]})")
            cells.append(f"`{sid}` {_cell(rec)}")
            gains.append(_gain(rec))
        while len(cells) < 3:
            cells.append("—")
        g1 = gains[0] if gains else 1.0
        if g1 is not None:
            top1.append(g1)
        known = [g for g in gains if g is not None]
        b3 = max(known + [1.0]) if known else None
        if b3 is not None:
            best3.append(b3)
        if any(g is None for g in gains):
            partial3.append(name)
        e = runs.get((name, "expert"))
        if e and _gain(e):
            expert.append(_gain(e))
        rows.append(f"| {name} | " + " | ".join(cells) + f" | {f'{b3:.2f}x' if b3 else '—'} | {_cell(e)} |")
    g1, g3, ge = geomean(top1), geomean(best3), geomean(expert)
    out = [f"# verify suite report — {datetime.date.today().isoformat()}", "",
           f"runs: {', '.join(str(p) for p in args.runs)}. Ranking: "
           + ("`plan.json`, ranked before any suite run existed (the catalog's H200 evidence only)"
              if args.ranking == "plan" else
              "`skel suggest` for sm_90 / Triton 3.6 with the shipped evidence, **each problem ranked without its "
              "own runs** (leave-one-kernel-out)")
           + f", mined store `{args.store}`. A suggestion that is wrong, fails or does not apply counts 1.0 (the "
           "original is kept); slower counts as measured; speedup = original time / candidate time, median of "
           "interleaved rounds ± half-IQR.", "",
           "| problem | top-1 | top-2 | top-3 | best of top 3 | expert |", "|---|---|---|---|---|---|", *rows, "",
           f"- problems: {len(rows)}; top-1 geomean **{g1:.2f}x** over the {len(top1)} whose top-1 was measured"
           if g1 else "- top-1 geomean: —",
           f"- best of top 3 geomean **{g3:.2f}x** over {len(best3)} problems — a lower bound: in "
           f"{len(partial3)} of them part of the top 3 was never measured ({', '.join(partial3)})"
           if g3 else "- best of top 3: —",
           f"- expert geomean (headroom) **{ge:.2f}x**" if ge else "- expert: —",
           f"- top-3 suggestions never measured: {', '.join(missing) or 'none'}",
           f"- wrong or failed among the top 3: {'; '.join(wrong) or 'none'}"]
    text = "\n".join(out) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
        print(f"wrote {args.out}")
    return 0


# ---- run (GPU) ------------------------------------------------------------------------------

def _order(name: str, plan: dict[str, list[str]]) -> list[str]:
    """Candidates of one problem in measuring order: the planned top 4, the expert, the rest."""
    have = sorted(p.name[len(name) + 2:-3] for p in (SUITE / "candidates").glob(f"{name}__*.py"))
    ranked = [s for s in plan.get(name, []) if s in have]
    first = ranked[:4] + (["expert"] if "expert" in have else [])
    rest = [s for s in ranked[4:] + have if s not in first and s != "expert"]
    return first + list(dict.fromkeys(rest))


def do_bench_rounds(fns: dict[str, Any], rounds: int = ROUNDS) -> dict[str, list[float]]:
    """The suite's own timing loop: ``rounds`` rounds, each side of ``fns`` in turn per round
    (interleaved), one ``triton.testing.do_bench`` median per side per round (warmup 10 ms,
    rep 40 ms, L2 flushed by do_bench before every call), under ``torch.no_grad()``."""
    import torch
    import triton

    times: dict[str, list[float]] = {k: [] for k in fns}
    with torch.no_grad():
        for _ in range(rounds):
            for side, fn in fns.items():
                times[side].append(triton.testing.do_bench(fn, warmup=10, rep=40, return_mode="median"))
    return times


def do_bench_stats(times: dict[str, list[float]]) -> dict[str, Any]:
    """Speed-up of "C" over "O" (median of the per-round ratios), its spread (half the IQR), the
    noise floor ("O" against "N", the original again) and the verdict beyond their margin."""
    ratio = sorted(o / c for o, c in zip(times["O"], times["C"]))
    noise_r = sorted(o / n for o, n in zip(times["O"], times["N"]))
    q = statistics.quantiles(ratio, n=4)
    speed, spread = statistics.median(ratio), (q[2] - q[0]) / 2
    noise = abs(statistics.median(noise_r) - 1) + (statistics.quantiles(noise_r, n=4)[2]
                                                     - statistics.quantiles(noise_r, n=4)[0]) / 2
    margin = max(noise, spread, 0.02)
    verdict = "faster" if speed > 1 + margin else "slower" if speed < 1 - margin else "no-effect"
    return dict(verdict=verdict, speedup=speed, spread=spread, noise=noise,
                original_ms=statistics.median(times["O"]), candidate_ms=statistics.median(times["C"]))


def _time_kernelbench(prob: dict[str, Any], candidate: Path, device: str) -> dict[str, Any]:
    """Naive ModelNew against the candidate ModelNew, interleaved do_bench rounds, with the noise
    floor (naive against itself) measured in the same rounds."""
    import torch

    from skel.verifier.harness import import_file

    problem = import_file(prob["problem"])
    init = problem.get_init_inputs()
    torch.manual_seed(0)
    ref = problem.Model(*init).to(device)
    models = []
    for path in (prob["original"], candidate):
        m = import_file(path).ModelNew(*init).to(device)
        m.load_state_dict(ref.state_dict())
        models.append(m)
    torch.manual_seed(1)
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]
    fns = {"O": lambda: models[0](*inputs), "C": lambda: models[1](*inputs), "N": lambda: models[0](*inputs)}
    st = do_bench_stats(do_bench_rounds(fns))
    speed, spread = st["speedup"], st["spread"]
    return dict(verdict=st["verdict"], speedup=speed, spread=spread, noise=st["noise"],
                timing="interleaved do_bench (L2 flushed by do_bench), naive ModelNew vs candidate; "
                       "noise = naive vs itself",
                per_shape=[dict(shape="get_inputs()", dtype=str(inputs[0].dtype).replace("torch.", ""), speedup=speed,
                                spread=spread, original_ms=st["original_ms"], candidate_ms=st["candidate_ms"])])


def _memcheck_kernelbench(rec: dict[str, Any], prob: dict[str, Any], cand: Path) -> None:
    """A KernelBench pair this loop timed as validated-faster gets the verifier's memcheck
    (skel.verifier.sanitizer; harness pairs get it inside verify()): an error fails it."""
    from skel.skeletons.status import VALIDATED_MIN
    from skel.verifier.sanitizer import Target, memcheck

    if rec.get("verdict") != "faster" or (rec.get("speedup") or 0) < VALIDATED_MIN:
        return
    r = memcheck(Target(str(prob["problem"]), str(cand), kernelbench=True))
    rec["notes"] = [*(n for n in rec.get("notes") or [] if not n.startswith("memcheck:")), r.line()]
    if r.status == "errors":
        rec.update(verdict="failed", detail=r.line())


def verify_pair(prob: dict[str, Any], sid: str, device: str) -> dict[str, Any]:
    """One (problem, candidate) pair -> a Verification record (as a dict)."""
    from skel.store.evidence import Verification
    from skel.verifier.run import Request, verify

    cand = candidate_path(prob["name"], sid)
    skeleton = None if sid == "expert" else sid
    if prob["kind"] == "harness":
        res = verify(Request(prob["original"], cand, skeleton=skeleton, device=device, subject="suite"))
        rec = res.record.to_dict()
        rec["notes"] = list(rec.get("notes") or []) + res.unchecked
    else:  # KernelBench: checked against Model by the verifier, then timed against the naive ModelNew
        res = verify(Request(prob["problem"], cand, skeleton=skeleton, device=device, subject="suite", timing=False))
        rec = res.record.to_dict()
        if res.record.verdict == "correct" and device.startswith("cuda"):
            rec.update(_time_kernelbench(prob, cand, device))
            rec["detail"] = f"speedup {rec['speedup']:.3f}x against the naive ModelNew (noise {rec['noise']:.3f})"
            _memcheck_kernelbench(rec, prob, cand)
    rec.update(skeleton=skeleton or "", kernel=kernel_id(prob["name"]), subject="suite")
    Verification.from_dict(rec)  # the fields are right
    return rec


def child(name: str, device: str, budget_s: float, out: Path) -> None:
    """Verify one problem's candidates in plan order, appending one JSON line per pair to ``out``."""
    plan = json.loads(PLAN.read_text()) if PLAN.is_file() else {}
    prob = next(p for p in problems() if p["name"] == name)
    skip = skipped()
    t0 = time.time()
    order = _order(name, plan)
    for i, sid in enumerate(order):
        row: dict[str, Any] = dict(problem=name, candidate=sid, rank=plan.get(name, []).index(sid) + 1
                                   if sid in plan.get(name, []) else None)
        if (name, sid) in skip:
            continue
        if i and time.time() - t0 > budget_s:
            row.update(verdict="not-run", detail=f"out of this problem's budget ({budget_s:.0f} s)")
        else:
            t = time.time()
            try:
                row.update(verify_pair(prob, sid, device))
            except Exception as e:  # one broken pair never stops the problem
                row.update(verdict="failed", detail=f"{type(e).__name__}: {' '.join(str(e).split())[:300]}",
                           skeleton="" if sid == "expert" else sid, kernel=kernel_id(name), subject="suite",
                           traceback=traceback.format_exc()[-1500:])
            row["seconds"] = round(time.time() - t, 1)
        with out.open("a") as f:
            f.write(json.dumps(row, default=str) + "\n")
        print(f"  {name:22s} {sid:28s} {_cell(row)}  {str(row.get('detail', ''))[:90]}", flush=True)


def cmd_run(args: argparse.Namespace) -> int:
    probs = problems()
    if args.only:
        keys = [k.strip() for k in args.only.split(",") if k.strip()]
        probs = [p for p in probs if any(k == p["name"] for k in keys)]
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / f"verify_suite_{datetime.date.today().isoformat()}"
    jsonl = stem.with_suffix(".jsonl")
    jsonl.write_text("")
    t0 = time.time()
    for i, prob in enumerate(probs):
        left = args.budget_s - (time.time() - t0)
        share = max(left / (len(probs) - i), 5.0)
        print(f"[{time.time() - t0:6.1f}s] {prob['name']} (share {share:.0f} s)", flush=True)
        cmd = [sys.executable, "-m", "benchmarks.evidence.verify_suite", "child", prob["name"], "--device", args.device,
               "--budget-s", str(share), "--out", str(jsonl)]
        try:
            subprocess.run(cmd, timeout=share * 2 + 60, check=False, env=dict(os.environ))
        except subprocess.TimeoutExpired:
            with jsonl.open("a") as f:
                f.write(json.dumps(dict(problem=prob["name"], candidate="?", verdict="not-run",
                                        detail="the problem's process was killed at its time limit")) + "\n")
    rows = [json.loads(x) for x in jsonl.read_text().splitlines() if x.strip()]
    md = [f"# verify suite run — {datetime.date.today().isoformat()}", "",
          f"{len(rows)} pairs in {time.time() - t0:.0f} s on {args.device}. Ranks are from plan.json (before "
          "this run's evidence); `report` ranks again without each problem's own runs.", "",
          "| problem | candidate | plan rank | result | max error | detail |", "|---|---|---|---|---|---|"]
    for r in rows:
        err = max((r.get("max_error") or {}).values(), default=None) if isinstance(r.get("max_error"), dict) else None
        md.append(f"| {r['problem']} | `{r['candidate']}` | {r.get('rank') or '—'} | {_cell(r)} | "
                  f"{f'{err:.2g}' if err is not None else '—'} | {str(r.get('detail', '')).replace('|', '/')[:110]} |")
    stem.with_suffix(".md").write_text("\n".join(md) + "\n")
    print(f"wrote {jsonl} and {stem.with_suffix('.md')}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.evidence.verify_suite", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("plan", help="rank every problem (CPU; needs a mined store)")
    p.add_argument("--store", default=None)
    r = sub.add_parser("run", help="verify every pair (GPU)")
    r.add_argument("--device", default="cuda")
    r.add_argument("--only", default="", help="comma-separated problem names")
    r.add_argument("--budget-s", type=float, default=420.0)
    r.add_argument("--out", default=str(RESULTS))
    c = sub.add_parser("child")
    c.add_argument("name")
    c.add_argument("--device", default="cuda")
    c.add_argument("--budget-s", type=float, default=60.0)
    c.add_argument("--out", type=Path, required=True)
    rp = sub.add_parser("report", help="score skel's top 3 per problem from measured runs (CPU)")
    rp.add_argument("runs", nargs="+")
    rp.add_argument("--store", default=None)
    rp.add_argument("--out", default=None)
    rp.add_argument("--ranking", choices=("loo", "plan"), default="loo",
                    help="loo: rank again, each problem without its own runs; plan: the ranking the run used")
    args = ap.parse_args(argv)
    if args.cmd == "plan":
        return cmd_plan(args)
    if args.cmd == "run":
        return cmd_run(args)
    if args.cmd == "child":
        child(args.name, args.device, args.budget_s, args.out)
        return 0
    return cmd_report(args)
