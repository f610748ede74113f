"""Merge GPU verification runs into the evidence that ships with skel.

    python -m benchmarks.evidence.ship_evidence benchmarks/results/verify_catalog_<date>.jsonl [more.jsonl ...]

Each input line is one ``skel.store.evidence.Verification`` (as written by
``benchmarks.evidence.verify_catalog`` and ``benchmarks.evidence.verify_suite``). Runs on the CPU
interpreter (they prove correctness, not speed, and CI re-checks them) and pairs a budget
never reached are left out.
A run replaces the shipped run with the same key (skeleton, kernel, subject, device,
Triton), so re-running a fixed pair supersedes its old verdict. Writes
``skel/data/verifications.jsonl`` sorted by key, so diffs of the data file are readable.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from skel.store.evidence import SHIPPED, VERDICTS, Verification


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, default=SHIPPED)
    args = ap.parse_args()
    by_key: dict[str, Verification] = {}
    if args.out.is_file():
        for line in args.out.read_text().splitlines():
            if line.strip():
                rec = Verification.from_dict(json.loads(line))
                by_key[rec.key] = rec
    before = len(by_key)
    added = skipped = 0
    for path in args.results:
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            raw = json.loads(line)
            if raw.get("verdict") not in VERDICTS:  # a pair the budget never reached ("not-run")
                skipped += 1
                continue
            rec = Verification.from_dict(raw)
            if rec.backend == "cpu":
                skipped += 1
                continue
            by_key[rec.key] = rec
            added += 1
    # a run recorded without its device (a child that crashed before saying where it ran) is
    # superseded by a later run of the same pair: it cannot be placed in any environment
    placed = {(r.skeleton, r.kernel, r.subject): r.date for r in by_key.values() if r.device}
    dropped = [k for k, r in by_key.items()
               if not r.device and placed.get((r.skeleton, r.kernel, r.subject), "") > (r.date or "")]
    for k in dropped:
        del by_key[k]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(by_key[k].to_dict(), sort_keys=True) + "\n" for k in sorted(by_key)))
    print(f"{args.out}: {len(by_key)} runs ({before} before; {added} read, {skipped} CPU or not-run records left "
          f"out, {len(dropped)} superseded runs without a device dropped)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
