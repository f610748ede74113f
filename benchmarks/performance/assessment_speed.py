"""How long every skeleton takes to judge real kernels: the catalog's share of `skel suggest`.

    cd /tmp && PYTHONPATH=TREE:CHECKOUT python -m benchmarks.performance.assessment_speed [--repeat N] [--top K]

Extracts every kernel of the installed fla-core and liger-kernel packages once, then times
every skeleton's assessment of each (target: CUDA sm_90, Triton 3.7.1), ``--repeat`` times,
and prints the total and the skeletons that take longest. Run it with two trees first on
PYTHONPATH (from a folder outside both, as ``benchmarks.reliability.assessments_dump``
says) to compare a refactor's cost; the first skeleton to read a kernel's data flow pays
for building it, so compare totals, not single rows.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import time
from pathlib import Path


def kernels() -> list:
    from skel.kernels.extract import extract

    out = []
    for name in ("fla", "liger_kernel"):
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            raise SystemExit(f"{name} is not installed (pip install --no-deps fla-core==0.6.0 liger-kernel==0.8.5)")
        root = Path(list(spec.submodule_search_locations)[0])
        for p in sorted(root.rglob("*.py")):
            text = p.read_text(encoding="utf-8", errors="replace")
            if "jit" in text:
                try:
                    out += extract(text, f"{name}/{p.relative_to(root)}")
                except Exception:  # noqa: BLE001 - a file that does not parse is not timed
                    continue
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="passes over every kernel (default 3)")
    ap.add_argument("--top", type=int, default=10, help="slowest skeletons to list (default 10)")
    a = ap.parse_args()
    import skel
    from skel.skeletons.base import Target
    from skel.skeletons.registry import all_skeletons

    sks = all_skeletons()
    found = kernels()
    target = Target(backend="cuda", cc=90, triton="3.7.1")
    per = {s.id: 0.0 for s in sks}
    totals = []
    for _ in range(a.repeat):
        start = time.perf_counter()
        for k in found:
            for s in sks:
                t0 = time.perf_counter()
                s.assess(k, target)
                per[s.id] += time.perf_counter() - t0
        totals.append(time.perf_counter() - start)
    print(f"skel from {Path(skel.__file__).resolve().parent.parent}: {len(found)} kernels x {len(sks)} skeletons")
    print(f"assessment pass: median {statistics.median(totals):.2f} s (min {min(totals):.2f}, max {max(totals):.2f},"
          f" {a.repeat} passes)")
    print(f"{'skeleton':36s} {'s per pass':>10s}")
    for sid in sorted(per, key=per.__getitem__, reverse=True)[:a.top]:
        print(f"{sid:36s} {per[sid] / a.repeat:10.3f}")


if __name__ == "__main__":
    main()
