"""Mining throughput and suggest latency, measured side by side in one run.

    python benchmarks/mine_and_suggest.py                 # fla + liger_kernel, 3 repeats
    python benchmarks/mine_and_suggest.py --repeat 5 --package liger_kernel

Needs the packages installed (`pip install --no-deps fla-core==0.6.0 liger-kernel==0.8.5`).
Prints one table; every row is the median of --repeat runs with min–max spread.

Rows (the first three each in a fresh interpreter, interleaved repeat by repeat):
- parse floor: `libcst.parse_module` of the same kernel-bearing files, one process — the
  least any libcst miner must spend;
- extract: skel's fact extraction of those files (its one libcst parse included), one
  process, no store;
- extract + tag: the same, then every kernel assessed against the whole catalog (the
  conditions and the data-flow view they read, built from the same parse) — what a mine
  worker does per file;
- mine (cold): `skel mine` into a fresh store with an empty facts cache, including the
  embedding model's load and the store writes; reported in-process;
- re-mine (unchanged): the same mine again — content hashes match, nothing is parsed;
- suggest, new process: `skel suggest` wall time from a fresh interpreter, beside the
  cost of `python -c "import chromadb"` on its own;
- suggest, in process: one more `suggest_for` on a warm process (model and store open).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))


def median_spread(xs: list[float]) -> tuple[float, float, float]:
    return statistics.median(xs), min(xs), max(xs)


def fmt(xs: list[float], unit: str = "s") -> str:
    m, lo, hi = median_spread(xs)
    return f"{m:.3f}{unit} ({lo:.3f}–{hi:.3f})"


def timed(fn, repeat: int) -> tuple[list[float], object]:
    out, last = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        last = fn()
        out.append(time.perf_counter() - t)
    return out, last


def kernel_files(sources) -> list[tuple[str, str]]:
    from skel.miner import walk
    from skel.kernels.triton import KERNEL_HINT

    files = []
    for src in sources:
        for item in src.items():
            if isinstance(item, walk.SourceFile) and "triton" in item.text and KERNEL_HINT.search(item.text):
                files.append((item.rel, item.text))
    return files


def _stage_in_subprocess(stage: str, packages: list[str]) -> tuple[float, int]:
    cmd = [sys.executable, __file__, "--stage", stage] + [x for p in packages for x in ("--package", p)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.split()
    return float(out[0]), int(out[1])


def run_stage(stage: str, packages: list[str]) -> None:
    """Child mode: time one stage over the packages' kernel files; print seconds, kernels."""
    import libcst

    from skel.kernels.triton import extract_file
    from skel.miner.mine import tag
    from skel.miner.sources import PackageSource
    from skel.skeletons.registry import all_skeletons

    files = kernel_files([PackageSource(name) for name in packages])
    if stage == "analyse":
        all_skeletons()  # the catalog's import is not part of the row
    n = 0
    t = time.perf_counter()
    for p, text in files:
        if stage == "parse":
            libcst.parse_module(text)
        elif stage == "extract":
            n += len(extract_file(text, p))
        else:  # what a mine worker does per file: extract, then tag every kernel
            for k in extract_file(text, p):
                tag(k)
                n += 1
    print(f"{time.perf_counter() - t:.6f} {n}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--package", action="append", help="installed package(s) to mine (default: fla, liger_kernel)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--query", default=str(ROOT / "examples" / "row_softmax.py"))
    ap.add_argument("--stage", choices=["parse", "extract", "analyse"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    packages = args.package or ["fla", "liger_kernel"]
    if args.stage:
        run_stage(args.stage, packages)
        return

    from skel.miner.mine import mine
    from skel.miner.sources import PackageSource
    from skel.store.knowledge import KnowledgeBase

    sources = [PackageSource(name) for name in packages]
    files = kernel_files(sources)
    n_files = len(files)
    print(f"packages: {', '.join(f'{s.name} {s.version}' for s in sources)}; {n_files} kernel-bearing files; "
          f"repeat {args.repeat}; jobs {args.jobs}; python {sys.version.split()[0]}; cpus {os.cpu_count()}",
          flush=True)

    # Each of these three rows runs in a fresh interpreter, interleaved with the others
    # repeat by repeat: one process's heap (the catalog, earlier trees, the garbage
    # collector's generations) must not tax another row, and the rows share the machine's
    # state so their ratios are side by side.
    parse_t, extract_t, analyse_t, kernels = [], [], [], 0
    for _ in range(args.repeat):
        for stage, out in (("parse", parse_t), ("extract", extract_t), ("analyse", analyse_t)):
            seconds, kernels = _stage_in_subprocess(stage, packages)
            out.append(seconds)

    work = Path(tempfile.mkdtemp(prefix="skel-bench-"))
    mine_t, remine_t, n_kernels = [], [], 0
    store = None
    for i in range(args.repeat):
        store = work / f"store-{i}"
        cache = work / f"cache-{i}"
        kb = KnowledgeBase.open(str(store))
        t = time.perf_counter()
        n_kernels = 0
        for src in sources:
            n_kernels += mine(src, kb, jobs=args.jobs, cache_root=cache).kernels
        mine_t.append(time.perf_counter() - t)
        t = time.perf_counter()
        for src in sources:
            mine(src, kb, jobs=args.jobs, cache_root=cache)
        remine_t.append(time.perf_counter() - t)

    env = dict(os.environ, SKEL_HOME=str(work / "home"))
    chroma_t, _ = timed(lambda: subprocess.run([sys.executable, "-c", "import chromadb"], check=True, env=env),
                        args.repeat)
    cli = [sys.executable, "-m", "skel.cli"]
    remine_cli_t, _ = timed(lambda: [subprocess.run(cli + ["mine", "--package", name, "--store", str(store)],
                                                    check=True, env=env, capture_output=True)
                                     for name in packages], args.repeat)
    suggest_cold_t, _ = timed(lambda: subprocess.run(cli + ["suggest", args.query, "--store", str(store)],
                                                     env=env, capture_output=True), args.repeat)

    from skel.retriever.suggest import load_kernels, suggest_for

    kb = KnowledgeBase.open(str(store))
    query = load_kernels(args.query)[0]
    suggest_for(query, kb)  # warm: model weights and store opened once
    warm_t, _ = timed(lambda: suggest_for(query, kb), max(args.repeat, 10))
    size = sum(p.stat().st_size for p in store.rglob("*") if p.is_file())

    rows = [
        ("parse floor (libcst.parse_module, 1 process)", fmt(parse_t),
         f"{n_files / statistics.median(parse_t):.1f} files/s", "1.00x"),
        ("extract facts (1 process, no store)", fmt(extract_t),
         f"{kernels / statistics.median(extract_t):.1f} kernels/s",
         f"{statistics.median(extract_t) / statistics.median(parse_t):.2f}x"),
        ("extract + tag against the catalog (1 process)", fmt(analyse_t),
         f"{kernels / statistics.median(analyse_t):.1f} kernels/s",
         f"{statistics.median(analyse_t) / statistics.median(parse_t):.2f}x"),
        (f"mine cold (jobs={args.jobs}, embeddings + store)", fmt(mine_t),
         f"{n_kernels / statistics.median(mine_t):.1f} kernels/s, {n_files / statistics.median(mine_t):.1f} files/s",
         f"{statistics.median(mine_t) / statistics.median(parse_t):.2f}x"),
        ("re-mine unchanged (in process)", fmt(remine_t), "", ""),
        ("re-mine unchanged (`skel mine`, new process)", fmt(remine_cli_t), "", ""),
        ("python -c 'import chromadb' (baseline)", fmt(chroma_t), "", "1.00x"),
        ("skel suggest, new process", fmt(suggest_cold_t), "",
         f"{statistics.median(suggest_cold_t) / statistics.median(chroma_t):.2f}x"),
        ("suggest_for, warm process", fmt([x * 1000 for x in warm_t], "ms"), "", ""),
        ("store size on disk", f"{size / 1e6:.1f} MB", f"{n_kernels} kernels", ""),
    ]
    from skel.tables import table

    print(table(["measure", "median (min–max)", "throughput", "ratio"], [list(r) for r in rows], max_width=80))


if __name__ == "__main__":
    main()
