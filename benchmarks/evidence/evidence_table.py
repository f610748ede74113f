"""The shipped H200 evidence as a table: each skeleton's own example pair and its computed status.

    python -m benchmarks.evidence.evidence_table [--arch sm90 --backend cuda --triton 3.6.0]

Reads skel/data/verifications.jsonl (what ``benchmarks.evidence.ship_evidence`` wrote from the GPU runs
under benchmarks/results/) and prints markdown: the verdict and speedup of the skeleton's own
example pair, how many suite kernels were measured with it, and the status skel computes from all
of its runs for the target (``skel.skeletons.status``).
"""

from __future__ import annotations

import argparse

from skel import api
from skel.skeletons.registry import all_skeletons
from skel.skeletons.status import status_of
from skel.store.evidence import merge_evidence, shipped_verifications


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", default="sm90")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--triton", default="3.6.0")
    a = ap.parse_args()
    target = api.parse_target(a.backend, a.arch, a.triton)
    runs = merge_evidence(shipped_verifications())
    print("| skeleton | own example on the H200 | speedup ± spread | suite kernels (faster / measured) | status |")
    print("|---|---|---|---|---|")
    for s in all_skeletons():
        rs = runs.get(s.id, [])
        ex = next((r for r in rs if r.subject == "example"), None)
        suite = [r for r in rs if r.subject == "suite"]
        fast = sum(1 for r in suite if r.verdict == "faster")
        what = "—" if ex is None else ex.verdict + ("" if ex.measure == "kernel" else f" ({ex.measure} time)")
        sp = f"{ex.speedup:.2f}× ±{ex.spread or 0:.2f}" if ex and ex.speedup else "—"
        print(f"| {s.id} | {what} | {sp} | {f'{fast} / {len(suite)}' if suite else '—'} | "
              f"{status_of(rs, target, triton_bound='triton' in s.languages, pays_in=s.pays_in).status.value} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
