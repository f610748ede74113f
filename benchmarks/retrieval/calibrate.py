"""Fit the probability that a suggestion is right, and check it on draws it never saw.

    python -m benchmarks.retrieval.calibrate fit      # fit on the earlier draws, check on the later, write the model
    python -m benchmarks.retrieval.calibrate check    # the shipped model's curve on the held-out draws again

The verdicts are the hand-checked pairs of ``precision.json`` (sglang 0.5.14 and vLLM 0.33.0
kernels, judged by people who did not write the ranking). Each judged kernel is ranked again
with today's skel at the judges' target (sm_90, CUDA, Triton 3.6), every candidate listed
(``show_all``), and each (kernel, skeleton) pair that has a verdict becomes a row with the
model's inputs (``skel.retriever.calibration.features``). Candidates whose payoff waits on
sizes (conditional entries) are not rows: the model never ranks them.

The draws are split by time: ``HOLDOUT`` (the last four) are never used to fit; the model's
calibration is checked on them, per bin of predicted probability (observed rate within ±0.1
of the mean prediction), and printed as a curve. The per-skeleton rates of the fit's own
rows are cross-fitted (five folds by kernel) so the fit does not see a pair's own verdict
in its skeleton feature. The threshold is the lowest at which the fit's cross-fitted
predictions give a shown-list precision of at least ``TARGET`` (when none does, the lowest
within one standard error of the best precision over at least ``MIN_SHOWN`` pairs); the held-out precision and
coverage at it are printed beside.

Writes ``skel/data/calibration.json``; each run is logged in ``calibration_runs.md``.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections import defaultdict
from pathlib import Path

from benchmarks.retrieval import repos
from benchmarks.retrieval.precision import DRAWS, PACKAGES, VERDICTS, _paths, kernels_of

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
MODEL = ROOT / "skel" / "data" / "calibration.json"
LOG = HERE / "calibration_runs.md"
HOLDOUT = ("fresh15", "fresh16", "fresh17", "fresh18")
TARGET = 0.6
L2 = 1.0
FOLDS = 5
MIN_SHOWN = 10
COMMAND = "python -m benchmarks.retrieval.calibrate fit"


def rows(cache: Path) -> list[dict]:
    """One row per judged (kernel, skeleton) pair that today's skel lists for that kernel."""
    from skel.retriever.suggest import suggest_for
    from skel.skeletons.base import Target

    verdicts = {(v["kernel"], v["skeleton"]): v["verdict"] for v in json.loads(VERDICTS.read_text())["verdicts"]
                if v["verdict"] in ("correct", "incorrect")}
    draw_of: dict[str, str] = {}
    for name in DRAWS:
        pairs_file = _paths(name)[0]
        if pairs_file.is_file():
            for p in json.loads(pairs_file.read_text()):
                draw_of.setdefault(p["kernel"], name or "first")
    target = Target(backend="cuda", cc=90, triton="3.6.0")
    out = []
    for pkg, version in PACKAGES:
        for path, kf in kernels_of(pkg, version, cache):
            key = f"{pkg}=={version}:{path}:{kf.name}"
            if key not in draw_of:
                continue
            r = suggest_for(kf, None, k=50, target=target, show_all=True)
            for s in r.suggestions:
                v = verdicts.get((key, s.id))
                if v is not None:
                    out.append({"draw": draw_of[key], "kernel": key, "skeleton": s.id, "kind": s.kind,
                                "correct": v == "correct", "x": dict(s.calibration)})
    return out


def _rates(train: list[dict]) -> tuple[dict[str, tuple[int, int]], float]:
    judged: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in train:
        judged[r["skeleton"]][0] += r["correct"]
        judged[r["skeleton"]][1] += 1
    pooled = sum(r["correct"] for r in train) / max(1, len(train))
    return {k: (c, n) for k, (c, n) in judged.items()}, pooled


def _with_rates(rs: list[dict], judged: dict[str, tuple[int, int]], pooled: float) -> list[dict]:
    from skel.retriever.calibration import SMOOTHING, logit

    out = []
    for r in rs:
        c, n = judged.get(r["skeleton"], (0, 0))
        x = dict(r["x"], skeleton=logit((c + SMOOTHING * pooled) / (n + SMOOTHING)))
        out.append(dict(r, x=x))
    return out


def _crossfit(train: list[dict]) -> list[dict]:
    """The training rows with each row's skeleton rate taken from the other folds' kernels."""
    kernels = sorted({r["kernel"] for r in train})
    fold = {k: i % FOLDS for i, k in enumerate(kernels)}
    out = []
    for f in range(FOLDS):
        judged, pooled = _rates([r for r in train if fold[r["kernel"]] != f])
        out += _with_rates([r for r in train if fold[r["kernel"]] == f], judged, pooled)
    return out


def fit_logistic(rs: list[dict]) -> dict[str, float]:
    """L2-regularised logistic regression (the bias unpenalised), by Newton's method."""
    import numpy as np

    from skel.retriever.calibration import FEATURES

    X = np.array([[r["x"].get(f, 0.0) for f in FEATURES] for r in rs], dtype=float)
    y = np.array([float(r["correct"]) for r in rs])
    w = np.zeros(len(FEATURES))
    pen = np.full(len(FEATURES), L2)
    pen[FEATURES.index("bias")] = 0.0
    for _ in range(50):
        p = 1 / (1 + np.exp(-np.clip(X @ w, -30, 30)))
        grad = X.T @ (p - y) + pen * w
        hess = (X * (p * (1 - p))[:, None]).T @ X + np.diag(pen) + 1e-9 * np.eye(len(FEATURES))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return {f: round(float(v), 4) for f, v in zip(FEATURES, w)}


def _predict(weights: dict[str, float], x: dict[str, float]) -> float:
    z = sum(weights.get(f, 0.0) * v for f, v in x.items())
    return 1 / (1 + math.exp(-max(-30.0, min(30.0, z))))


def curve(scored: list[tuple[float, bool]]) -> list[dict]:
    """Observed rate per bin of predicted probability (width 0.1)."""
    bins: dict[int, list[tuple[float, bool]]] = defaultdict(list)
    for p, ok in scored:
        bins[min(9, int(p * 10))].append((p, ok))
    out = []
    for b in sorted(bins):
        xs = bins[b]
        pred = sum(p for p, _ in xs) / len(xs)
        obs = sum(ok for _, ok in xs) / len(xs)
        out.append({"bin": f"{b / 10:.1f}-{(b + 1) / 10:.1f}", "n": len(xs), "predicted": round(pred, 3),
                    "observed": round(obs, 3), "within_0.1": abs(pred - obs) <= 0.1})
    return out


def shown_at(rs: list[dict], probs: list[float], t: float) -> dict:
    """Precision of the pairs at or over ``t`` and the share of kernels keeping one."""
    shown = [(r, p) for r, p in zip(rs, probs) if p >= t]
    kernels = {r["kernel"] for r in rs}
    right = sum(r["correct"] for r, _ in shown)
    return {"threshold": t, "pairs": len(shown), "correct": right,
            "precision": round(right / len(shown), 3) if shown else None,
            "kernels_with_one": len({r["kernel"] for r, _ in shown}), "kernels": len(kernels)}


def _print_curve(title: str, c: list[dict]) -> None:
    print(title)
    print(f"  {'bin':9} {'n':>4} {'predicted':>9} {'observed':>8}  within ±0.1")
    for b in c:
        bar = "#" * round(b["observed"] * 20)
        print(f"  {b['bin']:9} {b['n']:4d} {b['predicted']:9.3f} {b['observed']:8.3f}  "
              f"{'yes' if b['within_0.1'] else 'NO ':3}  {bar}")


def fit(cache: Path) -> int:
    t0 = time.time()
    rs = rows(cache)
    train = [r for r in rs if r["draw"] not in HOLDOUT]
    held = [r for r in rs if r["draw"] in HOLDOUT]
    cf = _crossfit(train)
    weights = fit_logistic(cf)
    judged, pooled = _rates(train)
    cf_probs = [_predict(weights, r["x"]) for r in cf]
    grid = [round(0.05 * i, 2) for i in range(2, 19)]
    table = [shown_at(cf, cf_probs, t) for t in grid]
    ok = [row for row in table if row["precision"] is not None and row["precision"] >= TARGET]
    # none reaches the target: the lowest threshold whose precision is within one standard error
    # of the best over at least MIN_SHOWN pairs (the one-SE rule: precisions that close are not
    # told apart by the verdicts we have, and the lower threshold answers for more kernels)
    counted = [row for row in table if row["pairs"] >= MIN_SHOWN]
    best = max(counted, key=lambda row: (row["precision"], row["pairs"]))
    se = math.sqrt(best["precision"] * (1 - best["precision"]) / best["pairs"])
    within = [row for row in counted if row["precision"] >= best["precision"] - se]
    threshold = ok[0]["threshold"] if ok else min(row["threshold"] for row in within)
    held_x = _with_rates(held, judged, pooled)
    held_probs = [_predict(weights, r["x"]) for r in held_x]
    check = curve(list(zip(held_probs, [r["correct"] for r in held_x])))
    at = shown_at(held_x, held_probs, threshold)
    print(f"rows: {len(rs)} judged pairs today's skel still lists ({len(train)} fit, {len(held)} held out: "
          f"{', '.join(HOLDOUT)})")
    print("weights:", json.dumps(weights))
    print("threshold table (fit's draws, cross-fitted):")
    for row in table:
        print(f"  t={row['threshold']:.2f}  shown {row['pairs']:4d}  precision {row['precision']}  kernels with one "
              f"{row['kernels_with_one']}/{row['kernels']}")
    print(f"threshold: {threshold} (" + (f"lowest with cross-fitted precision >= {TARGET})" if ok else
          f"none reaches {TARGET}: the lowest within one standard error ({se:.3f}) of the best precision, "
          f"{best['precision']} at {best['threshold']}, over at least {MIN_SHOWN} pairs)"))
    _print_curve("calibration on the held-out draws:", check)
    print(f"held-out shown list at {threshold}: {json.dumps(at)}")
    MODEL.write_text(json.dumps({
        "about": "probability that a suggestion is right, fitted on hand-checked verdicts "
                 "(benchmarks/retrieval/precision.json); regenerate, never edit",
        "command": COMMAND, "fit_draws": sorted({r["draw"] for r in train}), "held_out": list(HOLDOUT),
        "rows": {"fit": len(train), "held_out": len(held)}, "weights": weights,
        "judged": {k: list(v) for k, v in sorted(judged.items())}, "pooled": round(pooled, 4),
        "threshold": threshold, "threshold_table": table, "check": check, "check_at_threshold": at,
    }, indent=1) + "\n")
    with LOG.open("a") as fh:
        fh.write(f"\n## {time.strftime('%Y-%m-%d %H:%M')} — `{COMMAND}`\n\n"
                 f"fit {len(train)} rows, held out {len(held)}; "
                 f"threshold {threshold}; held-out shown: {at['pairs']} pairs, precision {at['precision']}, "
                 f"{at['kernels_with_one']}/{at['kernels']} kernels with one; calibration bins within ±0.1: "
                 f"{sum(b['within_0.1'] for b in check)}/{len(check)}\n")
    print(f"wrote {MODEL.relative_to(ROOT)} ({time.time() - t0:.0f}s)")
    return 0


def check(cache: Path) -> int:
    from skel.retriever.calibration import model

    m = model()
    if m is None:
        print("no model shipped: run `python -m benchmarks.retrieval.calibrate fit`", file=sys.stderr)
        return 2
    held = [r for r in rows(cache) if r["draw"] in HOLDOUT]
    held_x = _with_rates(held, m.judged, m.pooled)
    probs = [m.probability(r["x"]) for r in held_x]
    _print_curve(f"calibration of the shipped model on {', '.join(HOLDOUT)}:",
                 curve(list(zip(probs, [r["correct"] for r in held_x]))))
    print(json.dumps(shown_at(held_x, probs, m.threshold)))
    return 0


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=("fit", "check"))
    ap.add_argument("--cache", type=Path, default=repos.DEFAULT_CACHE)
    a = ap.parse_args()
    sys.exit(fit(a.cache) if a.command == "fit" else check(a.cache))
