"""`skel site` speed: the whole catalog plus a store holding fla-core and liger-kernel.

    python -m benchmarks.performance.site_build                   # mines both packages into a temporary store first
    python -m benchmarks.performance.site_build --store DIR       # a store you already mined (kept as it is)
    python -m benchmarks.performance.site_build --runs 5

The mine is set-up, not timed. Then `skel site OUT --store STORE` runs RUNS times, each in a
new process (cold: Python start, imports, the store opened, every page and plot written),
timed side by side with `skel site OUT --catalog-only` (the catalog and shipped evidence
alone) and with `python -c "import chromadb"` (the floor of any command that opens a store).
Prints one table: median wall seconds with min–max, and what was written.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SKEL = [sys.executable, "-m", "skel.cli"]


def timed(cmd: list[str], env: dict) -> tuple[float, str]:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr}")
    return dt, r.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", help="a mined store (default: mine fla-core and liger-kernel into a temporary one)")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="skel-site-bench-"))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SKEL_HOME": str(tmp / "home")}
    try:
        store = a.store
        if store is None:
            store = str(tmp / "store")
            for package in ("fla", "liger_kernel"):
                print(f"mining {package} (set-up, not timed) ...", file=sys.stderr)
                timed([*SKEL, "mine", "--package", package, "--store", store, "--no-progress"], env)
        info = json.loads(timed([*SKEL, "store", "info", "--store", store, "--json"], env)[1])
        rows = {"import chromadb": [], "skel site --catalog-only": [], "skel site --store (catalog + store)": []}
        written = {}
        for _ in range(a.runs):  # interleaved, so a slow moment of the machine hits every row alike
            rows["import chromadb"].append(timed([sys.executable, "-c", "import chromadb"], env)[0])
            dt, out = timed([*SKEL, "site", str(tmp / "c"), "--catalog-only", "--json"], env)
            rows["skel site --catalog-only"].append(dt)
            written["skel site --catalog-only"] = json.loads(out)
            dt, out = timed([*SKEL, "site", str(tmp / "s"), "--store", store, "--json"], env)
            rows["skel site --store (catalog + store)"].append(dt)
            written["skel site --store (catalog + store)"] = json.loads(out)
        print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
              f"load average before: {os.getloadavg()[0]:.2f}")
        print(f"store: {info['kernels']} kernels from "
              + ", ".join(f"{s['name']} {s['version']}" for s in info["sources"]) + f"; {a.runs} runs each\n")
        print(f"{'command':38}  {'median s':>8}  {'min–max s':>11}  pages  plots")
        print(f"{'-' * 38}  {'-' * 8}  {'-' * 11}  -----  -----")
        for name, xs in rows.items():
            w = written.get(name, {})
            print(f"{name:38}  {statistics.median(xs):8.2f}  {min(xs):5.2f}–{max(xs):5.2f}  "
                  f"{w.get('pages', ''):>5}  {w.get('plots', ''):>5}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
