"""Fact extraction and tagging, this checkout against an earlier commit, side by side.

    python benchmarks/extraction_before_after.py --base 8245e98          # 3 repeats
    python benchmarks/extraction_before_after.py --base HEAD~5 --repeat 5

Checks out ``--base`` into a temporary git worktree and times, for each of the two code
trees, three stages over the kernel-bearing files of fla-core and liger-kernel (installed):
the libcst parse floor, fact extraction, and extraction + tagging against the catalog (what
a mine worker does per file). Every measurement runs in a fresh interpreter, and the two
trees alternate stage by stage, repeat by repeat, so both see the same machine state.
Prints medians with min–max and each stage's ratio to its own tree's parse floor.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Runs inside the code tree under test. Older trees kept the extractor in skel.miner.facts.
CHILD = r'''
import importlib.util, sys, time
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
t0 = time.perf_counter()
for rel, text in files:
    if stage == "parse":
        libcst.parse_module(text)
    elif stage == "extract":
        extract_file(text, rel)
    else:
        for k in extract_file(text, rel):
            tag(k)
print(time.perf_counter() - t0)
'''

STAGES = ("parse", "extract", "tag")


def run(tree: Path, stage: str) -> float:
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run([sys.executable, "-c", CHILD, stage], check=True, capture_output=True, text=True,
                         env=env, cwd=tempfile.gettempdir())
    return float(out.stdout.split()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="commit, tag or branch to compare against")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.base], check=True,
                         capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="skel-base-") as tmp:
        base = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(base), sha], check=True)
        try:
            trees = {f"base {sha}": base, "this checkout": ROOT}
            times: dict[tuple[str, str], list[float]] = {}
            for _ in range(args.repeat):
                for stage in STAGES:
                    for label, tree in trees.items():
                        times.setdefault((label, stage), []).append(run(tree, stage))
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=False)
    sys.path.insert(0, str(ROOT))
    from skel.tables import table

    rows = []
    for label in trees:
        floor = statistics.median(times[(label, "parse")])
        for stage in STAGES:
            xs = times[(label, stage)]
            m = statistics.median(xs)
            rows.append([label, stage, f"{m:.2f}s ({min(xs):.2f}–{max(xs):.2f})", f"{m / floor:.2f}x"])
    print(f"fla + liger_kernel kernel-bearing files; repeat {args.repeat}; fresh interpreter per measurement")
    print(table(["code", "stage", "median (min–max)", "vs its parse"], rows))


if __name__ == "__main__":
    main()
