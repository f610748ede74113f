"""Rendering a verification: text for a terminal, markdown for a PR, JSON for programs.

The verdict and its exit code come first, then each stage, then — always, never folded
away — what this run could not check, so a CPU "correct" is never read as "verified".
This module only formats; it imports nothing heavy.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skel.verifier.run import VerifyResult

MEANING = {
    "faster": "same results, faster beyond the noise floor",
    "correct": "same results; not timed",
    "no-effect": "same results; the speed difference is inside the noise floor",
    "slower": "same results, slower beyond the noise floor",
    "wrong": "different results (or a cheat caught)",
    "not-applied": "the change is not there",
    "no-op": "the candidate is the original (same code)",
    "tests-failed": "the project's tests fail with the candidate",
    "failed": "the candidate does not compile or run",
}


def as_json(r: VerifyResult) -> str:
    return json.dumps(r.to_dict(), indent=2)


def _tolerance(r: VerifyResult) -> str:
    """"tolerance atol A, rtol R" (per dtype where they differ): what the error is judged by."""
    tol = r.tolerance
    if not tol:
        return "tolerance not recorded"
    pairs: dict[str, list[str]] = {}
    for dtype, (a, b) in tol.items():
        pairs.setdefault(f"atol {a:g}, rtol {b:g}", []).append(dtype)
    if len(pairs) == 1:
        return f"tolerance {next(iter(pairs))}"
    return "tolerance " + "; ".join(f"{p} for {', '.join(ds)}" for p, ds in pairs.items())


def _errors(r: VerifyResult) -> str:
    """"max error E (tolerance atol A, rtol R)", one figure per output ("out0 E, out1 E")."""
    figures = ", ".join(f"{k} {v:.3g}" for k, v in r.record.max_error.items())
    return f"max error {figures} ({_tolerance(r)})"


def text(r: VerifyResult, verbose: bool = False) -> str:
    rec = r.record
    lines = [f"skel verify: {r.candidate} against {r.original} ({r.format} format, {rec.device})",
             f"verdict: {rec.verdict} — {MEANING[rec.verdict]} (exit {r.exit_code})",
             f"  {rec.detail}" if rec.detail else "", "", "stages:"]
    width = max(len(s.name) for s in r.stages)
    for s in r.stages:
        lines.append(f"  {s.name:<{width}}  {s.status:<7}  {s.detail}")
        shown = s.notes if verbose else [n for n in s.notes if not n.startswith("passed: ")]
        lines += [f"  {'':<{width}}           - {n}" for n in shown]
    if rec.shapes:
        lines.append(f"shapes: {'; '.join(rec.shapes)}   dtypes: {', '.join(rec.dtypes)}")
    if rec.max_error:
        lines.append(_errors(r))
    if rec.per_shape:
        lines.append("timed:")
        lines += [f"  {p.shape} {p.dtype}: {p.speedup if p.speedup is not None else '-'}x "
                  f"± {p.spread if p.spread is not None else '-'} {p.note}" for p in rec.per_shape]
    lines.append("not checked:" if r.unchecked else "not checked: nothing left out")
    lines += [f"  - {u}" for u in r.unchecked]
    return "\n".join(line for i, line in enumerate(lines) if line or i == 3) + "\n"


def markdown(r: VerifyResult) -> str:
    rec = r.record
    out = [f"### skel verify: `{rec.verdict}` (exit {r.exit_code})", "",
           f"{MEANING[rec.verdict]}. {rec.detail}", "",
           f"`{r.candidate}` against `{r.original}` — {r.format} format, {rec.device}, "
           f"torch {rec.torch}, triton {rec.triton}", "",
           "| stage | status | detail |", "|---|---|---|"]
    out += [f"| {s.name} | {s.status} | {s.detail.replace('|', '/')} |" for s in r.stages]
    out.append("")
    if rec.shapes:
        out.append(f"Shapes: {'; '.join(f'`{s}`' for s in rec.shapes)}; dtypes: {', '.join(rec.dtypes)}.")
    if rec.max_error:
        out.append(f"M{_errors(r)[1:]}.")
    if rec.speedup is not None:
        out.append(f"Speedup {rec.speedup:.3f}x ± {rec.spread or 0:.3f}, noise floor {rec.noise or 0:.3f} "
                   f"({rec.timing}).")
    out += ["", "**Not checked:**" if r.unchecked else "**Not checked:** nothing left out."]
    out += [f"- {u}" for u in r.unchecked]
    return "\n".join(out) + "\n"
