"""History mining speed: `skel mine --history` over a whole repository, cold then again.

    python -m benchmarks.performance.history_speed                       # fla's mirror, 2 jobs
    python -m benchmarks.performance.history_speed --repo PATH --jobs 2 --max-commits 500

Mines the repository's first-parent history into a fresh temporary store with an empty
facts cache (cold), then runs the same mine again at once (incremental: no new commit,
nothing read). Prints one table of aggregates only — counts and times, never a commit.
The load average is printed beside the times: on a shared machine it says how much of
the two cores the run had.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import tempfile
import time
from pathlib import Path

DEFAULT_REPO = "/work/.mirror/fla-org+flash-linear-attention/repo"


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (the extraction workers)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", default=DEFAULT_REPO, help="git repository (bare or not)")
    ap.add_argument("--name", default="flash-linear-attention", help="name recorded for the repository")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--max-commits", type=int, default=None)
    args = ap.parse_args()

    from skel.miner.history import mine_history
    from skel.store.history import HistoryStore

    with tempfile.TemporaryDirectory(prefix="skel-history-") as tmp:
        store, cache = Path(tmp) / "store", Path(tmp) / "cache"
        hs = HistoryStore(store)
        load0 = os.getloadavg()[0]
        c0, t0 = cpu_seconds(), time.perf_counter()
        cold = mine_history(args.repo, hs, name=args.name, jobs=args.jobs, cache_root=cache,
                            max_commits=args.max_commits)
        cold_wall, cold_cpu = time.perf_counter() - t0, cpu_seconds() - c0
        load1 = os.getloadavg()[0]
        t1 = time.perf_counter()
        again = mine_history(args.repo, hs, name=args.name, jobs=args.jobs, cache_root=cache,
                             max_commits=args.max_commits)
        again_wall = time.perf_counter() - t1
        drafts = hs.drafts()
        events = hs.events()

    rows = [
        ("repository", f"{args.name} ({args.repo})"),
        ("commits walked (first-parent)", cold.commits_walked),
        ("commits read (changing .py files)", cold.commits_read),
        ("commits touching kernel files", cold.commits_kernels),
        ("kernel files extracted (distinct blobs)", cold.files_extracted),
        ("  parsed / from cache", f"{cold.parsed} / {cold.cached}"),
        ("events introduced", cold.events.get("introduced", 0)),
        ("events refined", cold.events.get("refined", 0)),
        ("events removed", cold.events.get("removed", 0)),
        ("events stored (distinct ids)", len(events)),
        ("drafts", len(drafts)),
        ("files skipped (not UTF-8, too large, parse errors)", len(cold.skipped)),
        ("wall time, cold (empty store and cache)", f"{cold_wall:.1f}s"),
        ("CPU time, cold (all processes)", f"{cold_cpu:.1f}s"),
        ("wall time, immediate re-run (incremental)", f"{again_wall:.2f}s"
         + (" (up to date, nothing read)" if again.up_to_date else f" ({again.commits_read} commits read)")),
        ("jobs", args.jobs),
        ("cpus / load average at start, end", f"{os.cpu_count()} / {load0:.1f}, {load1:.1f}"),
        ("python", platform.python_version()),
    ]
    width = max(len(k) for k, _ in rows)
    print(f"| {'measure'.ljust(width)} | value |")
    print(f"| {'-' * width} | ----- |")
    for k, v in rows:
        print(f"| {k.ljust(width)} | {v} |")


if __name__ == "__main__":
    main()
