"""Mining CUDA C++ (DeepGEMM's headers and sources) against the tree-sitter parse floor.

    python -m benchmarks.performance.cuda_mine_speed                         # DeepGEMM's mirror at HEAD
    python -m benchmarks.performance.cuda_mine_speed --repo PATH --rev v2.0 --runs 5

The floor is what no C++ miner can go below with this parser: tree-sitter parsing every
C++/CUDA file the mine reads (the same bytes, the same grammar choice), and nothing else.
Measured side by side in one process, each row a median over ``--runs`` with its spread:

- ``parse floor``: tree-sitter parse of every file;
- ``skel extract``: skel's extraction of the same files (parse + facts: calls, loops,
  inline PTX, launches, bindings, folded helpers);
- ``extract + tag``: extraction plus judging every CUDA skeleton on every unit (what
  the miner's workers do per file);
- ``skel mine, cold``: the whole `skel mine` of the repository at the revision into a new
  store with an empty facts cache (git read, extraction, tags, embedding, store writes);
- ``skel mine, again``: the same mine at once (nothing changed: the incremental path).

The machine (CPU count, load average) is printed with the table.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_REPO = os.path.join(os.environ.get("SKEL_BENCH_MIRRORS", "/work/.mirror"), "deepseek-ai+DeepGEMM", "repo")


def _files(repo: str, rev: str) -> list[tuple[str, str]]:
    """(rel, text) of every C++/CUDA file the miner would read at ``rev``."""
    from skel.miner.sources import GitSource
    from skel.miner.walk import SourceFile

    return [(f.rel, f.text) for f in GitSource(repo, rev).items() if isinstance(f, SourceFile)
            and not f.rel.endswith(".py")]


def _timed(fn, runs: int) -> tuple[float, float, float]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times), max(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", default=DEFAULT_REPO, help="git repository (bare or not)")
    ap.add_argument("--rev", default="HEAD")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--mine-runs", type=int, default=3)
    args = ap.parse_args()
    if not Path(args.repo).exists():
        sys.exit(f"{args.repo}: no such repository (git clone https://github.com/deepseek-ai/DeepGEMM, "
                 "or pass --repo)")

    from skel.kernels import cuda
    from skel.kernels.extract import CUDA_SUFFIXES, hint
    from skel.miner.mine import tag

    files = [(rel, text) for rel, text in _files(args.repo, args.rev) if rel.lower().endswith(CUDA_SUFFIXES)]
    # the floor parses what the extractor parses: the text with qualifier macros expanded, in
    # the grammar the extractor picks for it (both decided here, outside the timing)
    data = []
    for rel, text in files:
        expanded = cuda.expand_qualifier_macros(text)
        is_cuda = rel.endswith((".cu", ".cuh")) or bool(cuda._CUDA_SYNTAX.search(expanded))
        data.append((rel, text, expanded.encode(), is_cuda))
    with_units = [(rel, text) for rel, text in files if hint(text, rel)]
    commit = subprocess.run(["git", "-C", args.repo, "rev-parse", "--short", args.rev], capture_output=True,
                            text=True).stdout.strip()

    def floor() -> None:
        for _, _, raw, is_cuda in data:
            cuda._parser(is_cuda).parse(raw)

    def extract_all() -> None:
        for rel, text, _, _ in data:
            cuda.extract_file(text, rel)

    units = []

    def extract_and_tag() -> None:
        units.clear()
        for rel, text, _, _ in data:
            for k in cuda.extract_file(text, rel):
                units.append((k, tag(k)))

    floor()  # load both grammars before timing
    rows = [("parse floor (tree-sitter)", _timed(floor, args.runs)),
            ("skel extract", _timed(extract_all, args.runs)),
            ("extract + tag", _timed(extract_and_tag, args.runs))]

    from skel.miner.mine import mine
    from skel.miner.sources import GitSource
    from skel.store.knowledge import KnowledgeBase

    cold, again = [], []
    report = None
    for _ in range(args.mine_runs):
        with tempfile.TemporaryDirectory(prefix="skel-cuda-mine-") as tmp:
            kb = KnowledgeBase.open(str(Path(tmp) / "store"))
            t0 = time.perf_counter()
            report = mine(GitSource(args.repo, args.rev, name="DeepGEMM"), kb, jobs=2,
                          cache_root=Path(tmp) / "cache")
            cold.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            mine(GitSource(args.repo, args.rev, name="DeepGEMM"), kb, jobs=2, cache_root=Path(tmp) / "cache")
            again.append(time.perf_counter() - t0)
    rows += [("skel mine, cold (new store)", (statistics.median(cold), min(cold), max(cold))),
             ("skel mine, again (unchanged)", (statistics.median(again), min(again), max(again)))]

    nbytes = sum(len(raw) for _, _, raw, _ in data)
    kernels = sum(1 for k, _ in units if k.kind == "kernel")
    bindings = sum(1 for k, _ in units if k.kind == "binding")
    used = sorted({t for _, (uses, _) in units for t in uses})
    print(f"DeepGEMM {commit}: {len(files)} C++/CUDA files ({nbytes / 1e6:.2f} MB), {len(with_units)} with a "
          f"kernel or binding; {kernels} kernels, {bindings} bindings")
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; "
          f"python {platform.python_version()}; runs: {args.runs} (mine: {args.mine_runs})")
    floor_s = rows[0][1][0]
    print()
    print(f"{'stage':32} {'median s':>9} {'min':>7} {'max':>7} {'x floor':>8}")
    print(f"{'-' * 32} {'-' * 9} {'-' * 7} {'-' * 7} {'-' * 8}")
    for name, (med, lo, hi) in rows:
        print(f"{name:32} {med:9.3f} {lo:7.3f} {hi:7.3f} {med / floor_s:8.1f}")
    print()
    print(f"mine report: {report.kernels if report else 0} units in {report.kernel_files if report else 0} files")
    print("CUDA techniques found (units using each): " + ", ".join(
        f"{t} {sum(1 for _, (uses, _) in units if t in uses)}" for t in used))


if __name__ == "__main__":
    main()
