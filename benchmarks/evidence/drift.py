"""What changed between two environments' evidence: each skeleton's status and speedup under
the old one and the new one, and how it drifted (issue #36).

    python -m benchmarks.evidence.drift --from-triton 3.6 --to-triton 3.7 [--gpu H200] [--json]
        [--file skel/data/verifications.jsonl]
    python -m benchmarks.evidence.drift --from-file OLD.jsonl --to-file NEW.jsonl [--gpu H200]
        [--from-triton 3.6] [--to-triton 3.7] [--json]

The first form splits one file (by default the shipped evidence) by Triton version (major.minor);
the second compares two raw run files, as ``benchmarks.evidence.verify_catalog`` and
``verify_suite`` write them (one ``Verification`` a line; ``not-run`` lines and CPU interpreter
runs are left out, a later run of the same pair replaces an earlier one, as in the shipped
file). ``--gpu`` keeps the runs whose device name contains it (any case) on both sides; the
Triton options also filter the two files. Each side's status is computed by the status function
``skel skeletons list`` uses (``skel.skeletons.status.status_of``), from that side's runs alone
(so no side is "stale"), and its speedup is the geomean of every kernel-time run.

Drift, per skeleton (outcomes ordered wrong < slower < flat < pays, where pays is validated or
demonstrated, slower is refuted by a slower run, wrong is a wrong result or a failed launch,
flat is anything else: no-effect, or correct but not paying):

- ``same``             — the same outcome on both sides (the speedups may still differ: see them)
- ``newly faster``     — pays now, did not before
- ``lost its speedup`` — paid before, flat now
- ``now slower``       — refuted by a slower run now, was flat or paying (or wrong) before
- ``now wrong``        — wrong results or a failed launch now, not before
- ``recovered``        — flat now, was wrong or slower before
- ``not timed now``    — the new runs checked results but none was timed (a timing cut short by its
                         limit): no verdict on speed either way
- ``not re-run``       — runs on the old side only
- ``first run``        — runs on the new side only
Skeletons with no run on either side are counted, not listed.

Nightly procedure (a new Triton or a new driver): on the device, run every pair with
``benchmarks/gpu/gpu_session.sh`` (the catalog's example pairs and the verification suite; for a
Triton other than the image's, ``benchmarks/gpu/triton_upgrade_session.sh WHEEL BUDGET``), which
writes ``$OUT/verify_catalog_*.jsonl`` and ``$OUT/verify_suite_*.jsonl``; concatenate them and
drift them against the shipped evidence on the same GPU, e.g.::

    cat $OUT/verify_*.jsonl > new.jsonl
    python -m benchmarks.evidence.drift --from-file skel/data/verifications.jsonl --to-file new.jsonl --gpu H200

The table says what drifted; the runs worth keeping are then shipped with
``python -m benchmarks.evidence.ship_evidence new-runs.jsonl``. Exit 0 whatever drifted (2 on a
usage error or an unreadable file): drift is a report, not a failure.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skel.skeletons.base import Status, Target
from skel.skeletons.status import gpu_matches, status_of
from skel.store.evidence import SHIPPED, VERDICTS, Verification

DRIFTS = ("same", "newly faster", "lost its speedup", "now slower", "now wrong", "recovered", "not timed now",
          "not re-run", "first run")
PAYS = (Status.VALIDATED, Status.DEMONSTRATED)


@dataclass
class Side:
    """One skeleton's evidence in one environment."""

    status: Status | None  # None: no run there
    speedup: float | None  # geomean of every kernel-time run (slower ones included)
    runs: int
    outcome: int  # 0 wrong, 1 slower, 2 flat, 3 pays; -1 no run
    line: str
    timed: bool = True  # some run was timed (a correct-but-untimed run says nothing about speed)

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status.value if self.status else None, "speedup": self.speedup, "runs": self.runs,
                "line": self.line}


def _minor(version: str | None) -> str | None:
    return ".".join(version.split(".")[:2]) if version else None


def read_runs(path: Path) -> list[Verification]:
    """A run file's GPU runs, a later run of a pair replacing an earlier one (its key)."""
    by_key: dict[str, Verification] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            if isinstance(raw, dict) and raw.get("verdict") not in VERDICTS:
                continue  # a pair the budget never reached ("not-run"), as ship_evidence leaves out
            rec = Verification.from_dict(raw)
        except (ValueError, TypeError, AttributeError) as exc:
            raise ValueError(f"{path}:{n}: not a verification record: {exc}") from exc
        if rec.backend == "cpu" or not rec.skeleton:
            continue
        by_key[rec.key] = rec
    return list(by_key.values())


def select(runs: list[Verification], *, triton: str | None, gpu: str | None) -> list[Verification]:
    want = _minor(triton)
    return [r for r in runs if (want is None or _minor(r.triton) == want) and gpu_matches(r.device, gpu)]


def _geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def side(runs: list[Verification], *, triton_bound: bool = True, pays_in: str = "speed") -> Side:
    if not runs:
        return Side(None, None, 0, -1, "no run")
    # the runs were chosen by environment already: an empty target lets each of them count
    rep = status_of(runs, Target(), triton_bound=triton_bound, pays_in=pays_in)
    used = rep.records
    speed = _geomean([r.speedup for r in used if r.speedup and r.verdict in ("faster", "slower", "no-effect")
                      and r.measure in ("kernel", "launch")])
    if any(r.verdict in ("wrong", "failed") for r in used):
        outcome = 0
    elif rep.status is Status.REFUTED:
        outcome = 1
    elif rep.status in PAYS:
        outcome = 3
    else:
        outcome = 2
    timed = any(r.verdict in ("faster", "slower", "no-effect", "no-op") for r in used)
    return Side(rep.status, speed, len(used), outcome, rep.line, timed)


def drift(old: Side, new: Side) -> str | None:
    """The drift from ``old`` to ``new`` (None: no run on either side)."""
    if old.status is None and new.status is None:
        return None
    if new.status is None:
        return "not re-run"
    if old.status is None:
        return "first run"
    if new.outcome == old.outcome:
        return "same"
    if new.outcome == 0:
        return "now wrong"
    if new.outcome == 2 and not new.timed:
        return "not timed now"
    if new.outcome == 1:
        return "now slower"
    if new.outcome == 3:
        return "newly faster"
    return "lost its speedup" if old.outcome == 3 else "recovered"


def compare(old_runs: list[Verification], new_runs: list[Verification]) -> list[dict[str, Any]]:
    """One row per skeleton run on either side: the catalog's order, then ids it no longer has."""
    from skel.skeletons.registry import all_skeletons  # the catalog: only to know how each is judged

    catalog = {s.id: s for s in all_skeletons()}
    ids = list(catalog) + sorted({r.skeleton for r in old_runs + new_runs} - set(catalog))
    rows = []
    for sid in ids:
        s = catalog.get(sid)
        how = {"triton_bound": "triton" in s.languages, "pays_in": s.pays_in} if s else {}
        o = side([r for r in old_runs if r.skeleton == sid], **how)
        n = side([r for r in new_runs if r.skeleton == sid], **how)
        rows.append({"id": sid, "old": o, "new": n, "drift": drift(o, n)})
    return rows


def _where(runs: list[Verification]) -> str:
    found: dict[str, set[str]] = {}
    for r in runs:
        found.setdefault(r.device or "?", set()).update([_minor(r.triton) or "?"])
    return ", ".join(f"{d} on Triton {' and '.join(sorted(v))}" for d, v in sorted(found.items())) or "no runs"


def _env_words(label: str, triton: str | None, gpu: str | None) -> str:
    bits = [label] + ([f"Triton {_minor(triton)}"] if triton else []) + [f"GPU {gpu}" if gpu else "any GPU"]
    return ", ".join(bits)


def _x(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}x"


def _label(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:  # `... | head`: the reader had enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _main(argv: list[str] | None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.evidence.drift", description=__doc__.split("\n\n")[0],
                                 epilog="See the module docstring for the drift categories and the nightly procedure.")
    ap.add_argument("--from-triton", metavar="X.Y", help="the old Triton (major.minor)")
    ap.add_argument("--to-triton", metavar="X.Y", help="the new Triton (major.minor)")
    ap.add_argument("--gpu", metavar="NAME", help="only runs on this GPU (a part of the device name, any case: "
                                                  "H100, H200), on both sides; default: any")
    ap.add_argument("--file", type=Path, help=f"the evidence to split by Triton (default: {SHIPPED})")
    ap.add_argument("--from-file", type=Path, metavar="OLD.jsonl", help="the old runs (with --to-file)")
    ap.add_argument("--to-file", type=Path, metavar="NEW.jsonl", help="the new runs (with --from-file)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    a = ap.parse_args(argv)
    if bool(a.from_file) != bool(a.to_file):
        ap.error("--from-file and --to-file go together")
    if a.from_file and a.file:
        ap.error("--file is for splitting one file by Triton; with --from-file/--to-file drop it")
    if not a.from_file and not (a.from_triton and a.to_triton):
        ap.error("give --from-triton and --to-triton (one file split by Triton), or --from-file and --to-file")
    try:
        if a.from_file:
            old_all, new_all = read_runs(a.from_file), read_runs(a.to_file)
            old_label, new_label = _label(a.from_file), _label(a.to_file)
        else:
            old_all = new_all = read_runs(a.file or SHIPPED)
            old_label = new_label = _label(a.file or SHIPPED)
    except (OSError, ValueError) as exc:
        print(f"drift: {exc}", file=sys.stderr)
        return 2
    old_runs = select(old_all, triton=a.from_triton, gpu=a.gpu)
    new_runs = select(new_all, triton=a.to_triton, gpu=a.gpu)
    rows = compare(old_runs, new_runs)
    listed = [r for r in rows if r["drift"] is not None]
    counts = {d: sum(1 for r in listed if r["drift"] == d) for d in DRIFTS}
    old_env, new_env = _env_words(old_label, a.from_triton, a.gpu), _env_words(new_label, a.to_triton, a.gpu)
    old_dev = {r.device for r in old_runs}
    new_dev = {r.device for r in new_runs}
    caveat = ("the two sides ran on different GPUs: a drift may be the GPU's, not Triton's (pass --gpu)"
              if old_dev and new_dev and not old_dev & new_dev else None)
    count_line = (f"{len(listed)} skeletons with runs on either side, {len(rows) - len(listed)} on neither: "
                  + ", ".join(f"{d} {n}" for d, n in counts.items()))
    if a.json:
        print(json.dumps({
            "old": {"environment": old_env, "runs": len(old_runs), "evidence": _where(old_runs)},
            "new": {"environment": new_env, "runs": len(new_runs), "evidence": _where(new_runs)},
            "caveat": caveat, "counts": counts, "not_run_either": len(rows) - len(listed),
            "skeletons": [{"id": r["id"], "old": r["old"].to_dict(), "new": r["new"].to_dict(), "drift": r["drift"]}
                          for r in listed]}, indent=2))
        return 0
    from skel.tables import table

    print(f"old: {old_env}: {len(old_runs)} runs ({_where(old_runs)})")
    print(f"new: {new_env}: {len(new_runs)} runs ({_where(new_runs)})")
    if caveat:
        print(f"note: {caveat}")
    print(table(["skeleton", "old status", "old speedup", "new status", "new speedup", "drift"],
                [[r["id"], r["old"].status.value if r["old"].status else "—", _x(r["old"].speedup),
                  r["new"].status.value if r["new"].status else "—", _x(r["new"].speedup), r["drift"]]
                 for r in listed]))
    print(count_line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
