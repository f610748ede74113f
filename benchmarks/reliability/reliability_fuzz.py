"""The `fuzz` section of benchmarks/reliability/reliability.py (run it from there):

    python -m benchmarks.reliability.reliability fuzz [--files 10000] [--seed N] [--jobs 2] [--seconds 60]
                                                      [--parts extract,mine,suggest]

A seeded corpus of hostile sources (tests/reliability/hostile_corpus.py: mutated
fixture kernels, random token soup, nesting up to 20,000 deep, literals up to 3 MB,
broken encodings, NUL bytes, BOMs, CRLF/CR) through the extractors exactly as the miner
runs them (decode, guard, parse in isolated workers with a per-file time limit); then
the whole ``mine`` over a tree of those files plus a file system's hazards (FIFOs,
symlink loops, links out of the root, dangling links, unreadable files, files that vanish
or change mid-mine); then ``skel suggest`` through the real command line on a sample.
Prints a table; crashes, hangs and escaped exceptions must all be zero. A file stopped at
the per-file time limit is contained (skipped with its reason) and counted apart; a hang
is that limit failing. ``--parts extract`` runs the first part alone, which imports only
skel's parsers (no chromadb, no embedding model): it can run on a machine without them.
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

ROOT = Path(__file__).resolve().parents[2]


def _table(headers: list[str], rows: list[list]) -> str:
    from skel.tables import table

    return table(headers, rows)


PARTS = ("extract", "mine", "suggest")


def fuzz(files: int, seed: int, jobs: int, seconds: float, mine_files: int, suggest_files: int,
         parts: tuple[str, ...] = PARTS) -> int:
    from tests.reliability import hostile_corpus as hc

    print(f"fuzz: {files} files, seed {seed}, {jobs} workers, {seconds:g}s per file, parts {','.join(parts)}",
          flush=True)
    corpus = hc.corpus(files, seed, max_deep=20_000, max_literal=3_000_000)
    bad = 0
    if "extract" in parts:
        bad += _extract(hc, corpus, jobs, seconds)
    if "mine" in parts:
        bad += _mine(hc, corpus[:mine_files], seed, jobs)
    if "suggest" in parts:
        bad += _suggest(corpus, seed, suggest_files)
    print(f"\nresult: {'PASS' if bad == 0 else 'FAIL'} ({bad} crashes, hangs or escaped exceptions)")
    return 0 if bad == 0 else 1


def _extract(hc, corpus, jobs: int, seconds: float) -> int:
    """The extractors over the corpus, as the miner runs them; returns the failures. Needs
    only skel's parsers (libcst, tree-sitter): no store, no embedding model."""
    import faulthandler
    import importlib

    # a missing grammar would turn every .cu file into a 'syntax error' skip: a pass that
    # measured nothing (skel/kernels/cuda.py reports it per file, as a parse error)
    for module in ("libcst", "tree_sitter", "tree_sitter_cuda", "tree_sitter_cpp"):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise SystemExit(f"fuzz: the extractors need {module} ({exc}); install skel's parsers first") from None
    mb = sum(len(d) for _, _, d in corpus) / 1e6
    limit = seconds + hc.HANG_GRACE + 240  # a hang that never ends: tracebacks, then exit

    def rearm() -> None:
        faulthandler.dump_traceback_later(limit, exit=True)

    rearm()
    try:
        out = hc.run_extract(corpus, jobs=jobs, seconds=seconds, tick=rearm)
    finally:
        faulthandler.cancel_dump_traceback_later()
    print(f"\n## extractors ({mb:.1f} MB generated)")
    print(_table(["files", "with kernels", "kernels", "crashes", "hangs", "escaped exceptions",
                  "stopped at the time limit", "longest wait for a result (s)", "seconds"],
                 [[out["files"], out["with_kernels"], out["kernels"], len(out["crashes"]), len(out["hangs"]),
                   len(out["errors"]), len(out["timed_out"]), f"{out['longest_silence']:.1f}",
                   f"{out['seconds']:.1f}"]]))
    print(f"\n'stopped at the time limit': contained, not failures: the file's worker was killed at "
          f"{seconds:g}s, the file skipped with the reason, the run went on. A hang is the limit failing "
          f"(no result for over {seconds + hc.HANG_GRACE:g}s).")
    print("\nby kind:")
    print(_table(["kind", "files"], [[k, n] for k, n in sorted(out["by_kind"].items())]))
    print("\nskipped, by reason:")
    print(_table(["reason", "files"], [[r, n] for r, n in out["skipped"].most_common()]))
    for what, label in (("crashes", "crash"), ("hangs", "hang"), ("errors", "error"),
                        ("timed_out", "stopped at the time limit")):
        for i, reason in out[what][:20]:
            print(f"{label}: #{i} {corpus[i][1]}: {reason}")
    return len(out["crashes"]) + len(out["hangs"]) + len(out["errors"])


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
    from tests.reliability import hostile_corpus as hc

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


def _parts(text: str) -> tuple[str, ...]:
    import argparse

    got = tuple(p.strip() for p in text.split(",") if p.strip())
    wrong = [p for p in got if p not in PARTS]
    if wrong or not got:
        raise argparse.ArgumentTypeError(f"{','.join(wrong) or 'nothing'}: choose from {','.join(PARTS)}")
    return got


def add_parser(sub) -> None:
    """The `fuzz` section's options, on benchmarks.reliability.reliability's subcommands."""
    f = sub.add_parser("fuzz", help="hostile sources through the extractors, mine and suggest")
    f.add_argument("--files", type=int, default=10_000)
    f.add_argument("--seed", type=int, default=20261201)
    f.add_argument("--jobs", type=int, default=2)
    f.add_argument("--seconds", type=float, default=60.0, help="per-file parse time limit")
    f.add_argument("--mine-files", type=int, default=1000, help="corpus files in the whole-mine tree")
    f.add_argument("--suggest-files", type=int, default=40, help="files run through `skel suggest`")
    f.add_argument("--parts", type=_parts, default=PARTS,
                   help="comma-separated, of extract,mine,suggest (default: all). extract needs only skel's "
                        "parsers (libcst, tree-sitter, click): no chromadb, no embedding model")


def run(a) -> int:
    return fuzz(a.files, a.seed, a.jobs, a.seconds, a.mine_files, a.suggest_files, a.parts)
