"""Fact extraction, tagging and a cold mine, this checkout against an earlier commit, side by side.

    python -m benchmarks.performance.extraction_before_after --base 8245e98          # 3 repeats
    python -m benchmarks.performance.extraction_before_after --base HEAD~5 --repeat 5
    python -m benchmarks.performance.extraction_before_after --base 8f3c24e --stages parse,mine

Checks out ``--base`` into a temporary git worktree and times, for each of the two code
trees, stages over the kernel-bearing files of fla-core and liger-kernel (installed): the
libcst parse floor, fact extraction, extraction + tagging against the catalog (what a mine
worker does per file), and ``mine``: a cold mine of both packages (2 parser processes,
embeddings, store writes) into a fresh store with an empty facts cache; ``mine-no-model``
is the same mine with hashed vectors instead of the model's (what a mine costs beside its
forward passes). Beside each wall time, the CPU seconds of every process of the stage (the
parser workers included) show where the cores' time goes. Every measurement
runs in a fresh interpreter, and the two trees alternate stage by stage, repeat by repeat,
so both see the same machine state. Prints medians with min–max and each stage's ratio to
its own tree's parse floor. The mines embed with the ONNX export of the shipped model when
one is in the local cache (copied into a temporary home both trees share).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Runs inside the code tree under test. Older trees kept the extractor in skel.miner.facts.
CHILD = r'''
import importlib.util, resource, sys, time
from pathlib import Path
import libcst
try:
    from skel.kernels.triton import KERNEL_HINT, extract_file
except ImportError:
    from skel.miner.facts import KERNEL_HINT, extract_file
from skel.miner.mine import tag
from skel.skeletons.registry import all_skeletons
files = []
for name in ("fla", "liger_kernel"):
    root = Path(list(importlib.util.find_spec(name).submodule_search_locations)[0])
    for p in sorted(root.rglob("*.py")):
        text = p.read_text(encoding="utf-8", errors="replace")
        if "triton" in text and KERNEL_HINT.search(text):
            files.append((f"{name}/{p.relative_to(root)}", text))
stage = sys.argv[1]
if stage == "tag":
    all_skeletons()  # the catalog's import is not part of the stage
def cpu():  # seconds of CPU, this process and its finished children (the parser workers)
    return sum(x for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
               for x in resource.getrusage(who)[:2])
if stage in ("mine", "mine-no-model"):
    import tempfile
    from skel.miner.mine import mine
    from skel.miner.sources import PackageSource
    from skel.store.knowledge import KnowledgeBase
    embedder = None
    if stage == "mine-no-model":  # what a mine costs beside the model: hashed vectors, no forward pass
        from skel.embed import HashEmbedder
        embedder = HashEmbedder()
    work = Path(tempfile.mkdtemp(prefix="skel-mine-"))
    kb = KnowledgeBase.open(str(work / "store"))
    t0, c0 = time.perf_counter(), cpu()
    for name in ("fla", "liger_kernel"):
        mine(PackageSource(name), kb, jobs=2, cache_root=work / "cache", embedder=embedder)
    print(time.perf_counter() - t0, cpu() - c0)
    sys.exit(0)
t0, c0 = time.perf_counter(), cpu()
for rel, text in files:
    if stage == "parse":
        libcst.parse_module(text)
    elif stage == "extract":
        extract_file(text, rel)
    else:
        for k in extract_file(text, rel):
            tag(k)
print(time.perf_counter() - t0, cpu() - c0)
'''

STAGES = ("parse", "extract", "tag", "mine", "mine-no-model")


def run(tree: Path, stage: str, home: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of every process) of one stage in a fresh interpreter."""
    env = dict(os.environ, PYTHONPATH=str(tree), SKEL_HOME=str(home))
    out = subprocess.run([sys.executable, "-c", CHILD, stage], check=True, capture_output=True, text=True,
                         env=env, cwd=tempfile.gettempdir())
    wall, cpu = out.stdout.split()[-2:]
    return float(wall), float(cpu)


def _share_export(home: Path) -> str:
    """Copy the local ONNX export of the shipped model into ``home`` (the SKEL_HOME both
    trees mine with); say which embedder the mines will use."""
    import shutil

    from skel import embed

    try:
        found = embed.onnx_export_path()
    except embed.EmbeddingUnavailable as exc:
        return f"the fallback embedders ({exc})"
    if not found.is_file():
        return "the fallback embedders (no ONNX export in the local cache: `skel mine` makes one)"
    target = home / "cache" / "onnx" / found.name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(found, target)
    return f"OnnxMiniLM ({found.name})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="commit, tag or branch to compare against")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--stages", default="parse,extract,tag",
                    help=f"comma-separated, from {','.join(STAGES)} (parse is always timed: the ratios need it)")
    args = ap.parse_args()
    stages = ["parse"] + [x for x in STAGES[1:] if x in args.stages.split(",")]
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.base], check=True,
                         capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="skel-base-") as tmp:
        base = Path(tmp) / "tree"
        home = Path(tmp) / "home"
        if "mine" in stages:
            print(f"mines embed with: {_share_export(home)}", flush=True)
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(base), sha], check=True)
        try:
            trees = {f"base {sha}": base, "this checkout": ROOT}
            times: dict[tuple[str, str], list[float]] = {}
            cpus: dict[tuple[str, str], list[float]] = {}
            for _ in range(args.repeat):
                for stage in stages:
                    for label, tree in trees.items():
                        wall, cpu = run(tree, stage, home)
                        times.setdefault((label, stage), []).append(wall)
                        cpus.setdefault((label, stage), []).append(cpu)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=False)
    from skel.tables import table

    rows = []
    for label in trees:
        floor = statistics.median(times[(label, "parse")])
        for stage in stages:
            xs = times[(label, stage)]
            m = statistics.median(xs)
            c = statistics.median(cpus[(label, stage)])
            rows.append([label, stage, f"{m:.2f}s ({min(xs):.2f}–{max(xs):.2f})", f"{m / floor:.2f}x",
                         f"{c:.1f}s", f"{c / floor:.2f}x"])
    load = os.getloadavg()
    print(f"fla + liger_kernel kernel-bearing files; repeat {args.repeat}; fresh interpreter per measurement; "
          f"cpus {os.cpu_count()}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(table(["code", "stage", "median (min–max)", "vs its parse", "CPU, all processes", "CPU vs parse"], rows))


if __name__ == "__main__":
    main()
