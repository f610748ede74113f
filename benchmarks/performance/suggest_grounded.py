"""What the grounded answer costs: payoffs and the probability, and `--compile`'s machine code.

    python -m benchmarks.performance.suggest_grounded              # 3 repeats, liger_kernel's kernels
    python -m benchmarks.performance.suggest_grounded --repeat 5

Needs liger-kernel installed (`pip install --no-deps liger-kernel==0.8.5`). Rows, each the
median of --repeat with min–max, side by side in one run:

- `import chromadb` in a new interpreter: the reference of issue #35's cold targets;
- `skel suggest FILE --kernel K` in a new interpreter (no store: the catalog answers);
- the same with `--compile`, an empty machine-code cache (a new compile of the kernel and of
  each shown mechanical candidate), then with the cache filled;
- in one warm process, a kernel not seen before: `suggest` on the next kernel of another file
  (its facts extracted, every skeleton assessed, payoffs and probabilities), without and with
  `--compile` (a new compile: the cache is emptied before each);
- compile facts per kernel against extraction per kernel (what facts at mine time would cost).

Targets (issue #35): cold suggest with machine code ≤ 2.5 s over `import chromadb`; a new
kernel in a warm process ≤ 150 ms without a compile and ≤ 1 s with one; compile facts of a
mined repository ≤ 1× its extraction time.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SKEL = [sys.executable, "-m", "skel.cli"]
#: (file under liger_kernel/ops, kernel): row kernels the catalog answers for
KERNELS = (("rms_norm.py", "_rms_norm_forward_kernel"), ("swiglu.py", "_swiglu_forward_kernel"),
           ("geglu.py", "_geglu_tanh_forward_kernel"), ("layer_norm.py", "_layer_norm_forward_kernel"),
           ("cross_entropy.py", "liger_cross_entropy_kernel"))


def _ms(xs: list[float]) -> str:
    return f"{statistics.median(xs) * 1000:8.0f} ms ({min(xs) * 1000:.0f}–{max(xs) * 1000:.0f})"


def _wall(cmd: list[str], env: dict) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT, check=False)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    spec = importlib.util.find_spec("liger_kernel")
    if spec is None or not spec.submodule_search_locations:
        print("liger_kernel is not installed: pip install --no-deps liger-kernel==0.8.5", file=sys.stderr)
        return 2
    ops = Path(list(spec.submodule_search_locations)[0]) / "ops"
    tmp = Path(tempfile.mkdtemp(prefix="skel-grounded-"))
    env = dict(os.environ, SKEL_HOME=str(tmp / "home"), SKEL_CACHE_DIR=str(tmp / "cache"))
    env.pop("SKEL_THRESHOLD", None)
    first = str(ops / KERNELS[0][0])
    rows: dict[str, list[float]] = {k: [] for k in ("import chromadb", "suggest, new process",
                                                    "suggest --compile, new process, empty cache",
                                                    "suggest --compile, new process, cache filled")}
    for _ in range(args.repeat):  # interleaved, repeat by repeat
        rows["import chromadb"].append(_wall([sys.executable, "-c", "import chromadb"], env))
        rows["suggest, new process"].append(_wall(SKEL + ["suggest", first, "--kernel", KERNELS[0][1]], env))
        shutil.rmtree(tmp / "cache", ignore_errors=True)
        rows["suggest --compile, new process, empty cache"].append(
            _wall(SKEL + ["suggest", first, "--kernel", KERNELS[0][1], "--compile"], env))
        rows["suggest --compile, new process, cache filled"].append(
            _wall(SKEL + ["suggest", first, "--kernel", KERNELS[0][1], "--compile"], env))

    # a warm process: each call a kernel of a file not read before in it
    os.environ.update(SKEL_HOME=env["SKEL_HOME"], SKEL_CACHE_DIR=env["SKEL_CACHE_DIR"])
    os.environ.pop("SKEL_THRESHOLD", None)
    from skel.kernels.extract import extract
    from skel.retriever import suggest as sg

    sg.suggest(ops / KERNELS[0][0], None, kernel=KERNELS[0][1])  # the catalog and the model load once
    new, new_compiled, extraction, compiling = [], [], [], []
    for fname, kname in KERNELS[1:]:
        sg._EXTRACTED.clear()
        t0 = time.perf_counter()
        sg.suggest(ops / fname, None, kernel=kname)
        new.append(time.perf_counter() - t0)
        sg._EXTRACTED.clear()
        shutil.rmtree(tmp / "cache", ignore_errors=True)
        t0 = time.perf_counter()
        sg.suggest(ops / fname, None, kernel=kname, compile=True)
        new_compiled.append(time.perf_counter() - t0)
        text = (ops / fname).read_text()
        t0 = time.perf_counter()
        kernels = extract(text, str(ops / fname))
        extraction.append((time.perf_counter() - t0) / max(1, len(kernels)))
        from skel.kernels.machine import MachineFactsUnavailable, machine_facts

        shutil.rmtree(tmp / "cache", ignore_errors=True)
        t0 = time.perf_counter()
        try:
            machine_facts(text, kname)
        except MachineFactsUnavailable as exc:
            print(f"  {kname}: {exc}")
        compiling.append(time.perf_counter() - t0)
    rows["new kernel, warm process"] = new
    rows["new kernel, warm process, --compile (new compile)"] = new_compiled
    rows["extraction per kernel"] = extraction
    rows["compile facts per kernel (one kernel, new compile)"] = compiling
    shutil.rmtree(tmp, ignore_errors=True)

    print(f"liger_kernel {ops.parent.name}: {len(KERNELS)} kernels; {args.repeat} repeats; {os.cpu_count()} cores")
    for name, xs in rows.items():
        print(f"  {name:52} {_ms(xs)}")
    base = statistics.median(rows["import chromadb"])
    checks = [
        ("cold suggest with machine code - import chromadb <= 2.5 s",
         statistics.median(rows["suggest --compile, new process, empty cache"]) - base, 2.5),
        ("new kernel, warm process <= 0.15 s", statistics.median(new), 0.15),
        ("new kernel, warm process, new compile <= 1 s", statistics.median(new_compiled), 1.0),
        ("compile facts / extraction per kernel <= 1x",
         statistics.median(compiling) / statistics.median(extraction), 1.0),
    ]
    print("targets:")
    for what, value, limit in checks:
        print(f"  {what:60} {value:8.2f}  {'pass' if value <= limit else 'FAIL'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
