"""The `fuzz` section of benchmarks/reliability.py (run it from there):

    python benchmarks/reliability.py fuzz [--files 10000] [--seed N] [--jobs 2] [--seconds 60]

A seeded corpus of hostile sources (tests/reliability/hostile_corpus.py: mutated
fixture kernels, random token soup, nesting up to 20,000 deep, literals up to 3 MB,
broken encodings, NUL bytes, BOMs, CRLF/CR) through the extractors exactly as the miner
runs them (decode, guard, parse in isolated workers with a per-file time limit); then
the whole ``mine`` over a tree of those files plus a file system's hazards (FIFOs,
symlink loops, links out of the root, dangling links, unreadable files, files that vanish
or change mid-mine); then ``skel suggest`` through the real command line on a sample.
Prints a table; crashes, hangs and escaped exceptions must all be zero.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "reliability")]


def _table(headers: list[str], rows: list[list]) -> str:
    from skel.tables import table

    return table(headers, rows)


def fuzz(files: int, seed: int, jobs: int, seconds: float, mine_files: int, suggest_files: int) -> int:
    import hostile_corpus as hc

    print(f"fuzz: {files} files, seed {seed}, {jobs} workers, {seconds:g}s per file", flush=True)
    corpus = hc.corpus(files, seed, max_deep=20_000, max_literal=3_000_000)
    mb = sum(len(d) for _, _, d in corpus) / 1e6
    out = hc.run_extract(corpus, jobs=jobs, seconds=seconds)
    print(f"\n## extractors ({mb:.1f} MB generated)")
    print(_table(["files", "with kernels", "kernels", "crashes", "hangs", "escaped exceptions", "seconds"],
                 [[out["files"], out["with_kernels"], out["kernels"], len(out["crashes"]), len(out["hangs"]),
                   len(out["errors"]), f"{out['seconds']:.1f}"]]))
    print("\nby kind:")
    print(_table(["kind", "files"], [[k, n] for k, n in sorted(out["by_kind"].items())]))
    print("\nskipped, by reason:")
    print(_table(["reason", "files"], [[r, n] for r, n in out["skipped"].most_common()]))
    for what in ("crashes", "hangs", "errors"):
        for i, reason in out[what][:20]:
            print(f"{what[:-1]}: #{i} {corpus[i][1]}: {reason}")
    bad = len(out["crashes"]) + len(out["hangs"]) + len(out["errors"])

    bad += _mine(hc, corpus[:mine_files], seed, jobs)
    bad += _suggest(corpus, seed, suggest_files)
    print(f"\nresult: {'PASS' if bad == 0 else 'FAIL'} ({bad} crashes, hangs or escaped exceptions)")
    return 0 if bad == 0 else 1


def _mine(hc, files, seed: int, jobs: int) -> int:
    """The whole mine over a tree of corpus files and hazards; returns the failures."""
    from skel.embed import HashEmbedder
    from skel.miner.mine import mine
    from skel.miner.sources import DirectorySource
    from skel.store.knowledge import KnowledgeBase

    tmp = Path(tempfile.mkdtemp(prefix="skel-fuzz-"))
    root = tmp / "tree"
    try:
        made = hc.hazards(root)
        for i, (_, name, data) in enumerate(files):
            d = root / f"d{i % 17}" / f"e{i % 5}"
            d.mkdir(parents=True, exist_ok=True)
            (d / name).write_bytes(data)
        vanish = sorted(root.rglob("m*.py"))[:20]  # deleted by a thread mid-walk
        os.environ["SKEL_HOME"] = str(tmp / "home")
        kb = KnowledgeBase.open(str(tmp / "store"))

        class Shifting(DirectorySource):
            def items(self):
                for n, item in enumerate(super().items()):
                    if n == 0:
                        for p in vanish:
                            p.unlink(missing_ok=True)
                    yield item

        t0 = time.perf_counter()
        crashed = ""
        try:
            report = mine(Shifting(root, name="fuzz"), kb, jobs=jobs, embedder=HashEmbedder())
        except Exception as exc:  # noqa: BLE001 - a crashed mine is the figure we measure
            crashed = f"{type(exc).__name__}: {exc}"
        seconds = time.perf_counter() - t0
    finally:
        for p in (root / "locked.py", root / "closed"):
            if p.exists() or p.is_symlink():
                p.chmod(0o700)
    print(f"\n## whole mine: {len(files)} corpus files + {len(made)} hazards "
          f"({', '.join(sorted(set(made.values())))}), {len(vanish)} files deleted mid-walk")
    if crashed:
        print(f"mine CRASHED: {crashed}")
        shutil.rmtree(tmp, ignore_errors=True)
        return 1
    states = [s.state for s in kb.sources()]
    reasons = Counter(_reason(s.reason) for s in report.skipped)
    unreported = [s.rel for s in report.skipped if not s.reason]
    print(_table(["files", "kernels", "skipped", "skips without reason", "source state", "seconds"],
                 [[report.files, report.kernels, len(report.skipped), len(unreported), ",".join(states),
                   f"{seconds:.1f}"]]))
    print("\nskipped, by reason:")
    print(_table(["reason", "files"], [[r, n] for r, n in reasons.most_common()]))
    if not hc.reads_blocked():
        print("note: running as root: chmod 000 does not stop reads, so the unreadable file and folder were mined")
    shutil.rmtree(tmp, ignore_errors=True)
    return int(states != ["complete"]) + len(unreported)


def _reason(reason: str) -> str:
    import hostile_corpus as hc

    return hc.reason_kind(reason)


def _suggest(corpus, seed: int, n: int) -> int:
    """`skel suggest` through the real command line on a sample: exit 0/1, or 2 with one line."""
    import random

    rng = random.Random(seed)
    sample = rng.sample(range(len(corpus)), min(n, len(corpus)))
    tmp = Path(tempfile.mkdtemp(prefix="skel-suggest-"))
    codes: Counter = Counter()
    bad = []
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SKEL_HOME": str(tmp / "home"), "SKEL_EMBEDDER": "hash"}
    t0 = time.perf_counter()
    for i in sample:
        kind, name, data = corpus[i]
        p = tmp / name
        p.write_bytes(data)
        try:
            r = subprocess.run([sys.executable, "-m", "skel.cli", "suggest", str(p), "-k", "2"], env=env,
                               capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            bad.append(f"#{i} {name}: hang")
            codes["hang"] += 1
            continue
        codes[r.returncode] += 1
        lines = r.stderr.strip().splitlines()
        if r.returncode not in (0, 1, 2) or "Traceback" in r.stderr or "internal error" in r.stderr \
                or (r.returncode == 2 and len(lines) != 1):
            bad.append(f"#{i} {name}: exit {r.returncode}: {r.stderr.strip()[-300:]}")
    seconds = time.perf_counter() - t0
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"\n## skel suggest (command line) on {len(sample)} sampled files")
    print(_table(["files", "exit 0", "exit 1", "exit 2 (one line)", "tracebacks/crashes/hangs", "seconds"],
                 [[len(sample), codes[0], codes[1], codes[2], len(bad), f"{seconds:.1f}"]]))
    for b in bad[:20]:
        print(b)
    return len(bad)


def add_parser(sub) -> None:
    """The `fuzz` section's options, on benchmarks/reliability.py's subcommands."""
    f = sub.add_parser("fuzz", help="hostile sources through the extractors, mine and suggest")
    f.add_argument("--files", type=int, default=10_000)
    f.add_argument("--seed", type=int, default=20261201)
    f.add_argument("--jobs", type=int, default=2)
    f.add_argument("--seconds", type=float, default=60.0, help="per-file parse time limit")
    f.add_argument("--mine-files", type=int, default=1000, help="corpus files in the whole-mine tree")
    f.add_argument("--suggest-files", type=int, default=40, help="files run through `skel suggest`")


def run(a) -> int:
    return fuzz(a.files, a.seed, a.jobs, a.seconds, a.mine_files, a.suggest_files)
