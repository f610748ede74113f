"""What reading a kernel's importers costs, and what it changes (skel/kernels/importers.py).

    python -m benchmarks.performance.importers            # sglang 0.5.14 and vLLM 0.33.0 wheels (fetched once, cached)

For each wheel:
- `skel suggest`'s lookup, `settle_backends_on_disk(file, kernels)` (the importers of the
  module, then the callers of each kernel's launcher), in a fresh process per call with the
  file already parsed (the package is read again each time, as one `skel suggest` command
  does), on five kernel files chosen by a fixed seed, three times each: median (min–max)
  seconds;
- the miner's pass, `backends_by_importers(files)` over every file of the wheel, in process;
- how many Triton kernels the importers move to a backend their own file did not name, how
  many the callers of their launchers move, and how many a file names itself.
"""

from __future__ import annotations

import random
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from benchmarks.retrieval import repos

ROOT = Path(__file__).resolve().parents[2]

PACKAGES = (("sglang", "0.5.14"), ("vllm", "0.33.0"))
FILES, REPEAT, SEED = 5, 3, 20261203
# the extractor is imported first: `skel suggest` has it loaded (it just parsed the file)
# before it looks the importers up, and its import (libcst) is not the lookup's cost
ONE_CALL = ("import sys, time; from skel.kernels.triton import extract_file; "
            "from skel.kernels.importers import settle_backends_on_disk; p = sys.argv[1]; "
            "ks = extract_file(open(p, encoding='utf-8', errors='replace').read(), p); "
            "t = time.perf_counter(); settle_backends_on_disk(p, ks); print(time.perf_counter() - t)")


def spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):.3f}s ({min(xs):.3f}–{max(xs):.3f})"


def main() -> int:
    from benchmarks.retrieval.releases import fetch
    from skel.kernels.importers import folder_graph, settle_backends
    from skel.kernels.triton import extract_file
    from skel.miner.mine import backends_by_importers
    from skel.miner.walk import SourceFile, decode
    from skel.tables import table

    rows = []
    for pkg, version in PACKAGES:
        root = fetch.ensure(pkg, version, repos.DEFAULT_CACHE, verbose=False)
        files = sorted(p for p in (root / pkg).rglob("*.py"))
        texts = {p: p.read_text(encoding="utf-8", errors="replace") for p in files}
        kernel_files = [p for p, t in texts.items() if "triton" in t and "jit" in t]
        picked = random.Random(f"{SEED}:{pkg}").sample(kernel_files, min(FILES, len(kernel_files)))
        calls = [float(subprocess.run([sys.executable, "-c", ONE_CALL, str(p)], capture_output=True, text=True,
                                      check=True, cwd=ROOT).stdout) for p in picked for _ in range(REPEAT)]
        sources = [f for f in (decode(p.relative_to(root).as_posix(), p.read_bytes()) for p in files)
                   if isinstance(f, SourceFile)]
        mined = []
        for _ in range(REPEAT):
            t0 = time.perf_counter()
            backends_by_importers(sources)
            mined.append(time.perf_counter() - t0)
        graph = folder_graph(root, pkg)
        moved, called, own = Counter(), Counter(), Counter()
        for p in kernel_files:
            rel = p.relative_to(root).as_posix()
            try:
                kernels = extract_file(texts[p], rel)
            except Exception:  # noqa: BLE001 - a file the extractor refuses counts for nothing
                continue
            for k in kernels:
                if k.backend_hint:
                    own[k.backend_hint] += 1
            settle_backends(graph, rel, kernels)
            for k in kernels:
                if k.backend_reason.startswith("its launcher"):
                    called[k.backend_hint] += 1
                elif k.backend_reason:
                    moved[k.backend_hint] += 1
        rows.append([f"{pkg} {version}", len(files), spread(calls), spread(mined),
                     ", ".join(f"{n} {b}" for b, n in sorted(moved.items())) or "0",
                     ", ".join(f"{n} {b}" for b, n in sorted(called.items())) or "0",
                     ", ".join(f"{n} {b}" for b, n in sorted(own.items())) or "0"])
    print(table(["wheel", "files", "skel suggest's lookup (new process)", "miner's pass (all files)",
                 "kernels moved by importers", "by their launchers' callers", "kernels their file names"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
