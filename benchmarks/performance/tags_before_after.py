"""Tags of every kernel, this checkout against an earlier commit: the same, and how fast.

    python -m benchmarks.performance.tags_before_after --base af35bcf
    python -m benchmarks.performance.tags_before_after --base af35bcf ~/.cache/skel-bench/sglang/0.5.14/sglang \
        ~/.cache/skel-bench/vllm/0.33.0/vllm

A change that only makes tagging cheaper must leave every kernel's tags as they were. This
checks out ``--base`` into a temporary git worktree and, in both code trees at once (one
process per tree, so both see the same machine), extracts every Triton kernel of
fla-core and liger-kernel (installed) and of any extra package folders given, tags each
with ``skel.miner.mine.tag_lines`` (what a mine records: techniques used, their lines, the
skeletons that would be suggested), and prints each tree's kernel count, the CPU seconds
spent tagging (extraction not counted), a digest of all the tags and one of all the facts
(``KernelFacts.to_dict``). As in a mine's parser worker, the garbage collector is off during
a file and clears the young generations after it: the seconds that takes and the objects it
frees (a tree held by reference cycles is freed there, not when it is dropped) are printed
too. Exit 1 when the tags or the facts differ.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = r'''
import gc, hashlib, importlib.util, json, sys, time
from pathlib import Path
from skel.kernels.triton import KERNEL_HINT, extract_file
from skel.miner.mine import tag_lines
from skel.skeletons.registry import all_skeletons
all_skeletons()
roots = [Path(list(importlib.util.find_spec(n).submodule_search_locations)[0]) for n in ("fla", "liger_kernel")]
roots += [Path(p) for p in sys.argv[1:]]
digest, facts, kernels, cpu = hashlib.sha256(), hashlib.sha256(), 0, 0.0
gc_seconds, gc_objects = 0.0, 0
gc.freeze()
gc.disable()  # as in a mine's parser worker: no collection during a file, the young generations after it
for root in roots:
    for p in sorted(root.rglob("*.py")):
        text = p.read_text(encoding="utf-8", errors="replace")
        if "triton" not in text or not KERNEL_HINT.search(text):
            continue
        rel = str(p.relative_to(root.parent))
        try:
            found = extract_file(text, rel)
        except Exception:  # a file the extractor refuses is left out of both trees alike
            continue
        c = time.process_time()
        tags = [tag_lines(k) for k in found]
        cpu += time.process_time() - c
        kernels += len(found)
        digest.update(json.dumps([rel, [k.name for k in found], tags]).encode())
        facts.update(json.dumps([k.to_dict() for k in found], sort_keys=True, default=str).encode())
        del found, tags
        c = time.perf_counter()
        gc_objects += gc.collect(1)
        gc_seconds += time.perf_counter() - c
print(kernels, round(cpu, 2), digest.hexdigest(), facts.hexdigest(), round(gc_seconds, 2), gc_objects)
'''


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="commit, tag or branch to compare against")
    ap.add_argument("roots", nargs="*", help="more package folders to take kernels from")
    args = ap.parse_args()
    roots = [str(Path(r).expanduser().resolve()) for r in args.roots]
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.base], check=True,
                         capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="skel-tags-") as tmp:
        base = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(base), sha], check=True)
        try:
            trees = {f"base {sha}": base, "this checkout": ROOT}
            procs = {label: subprocess.Popen([sys.executable, "-c", CHILD, *roots], stdout=subprocess.PIPE, text=True,
                                             env=dict(os.environ, PYTHONPATH=str(tree)), cwd=tmp)
                     for label, tree in trees.items()}
            out = {label: p.communicate()[0].split() for label, p in procs.items()}
            if any(p.returncode for p in procs.values()):
                raise SystemExit("a tagging process failed")
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=False)
    print(f"packages: fla, liger_kernel{''.join(', ' + r for r in roots)}; cpus {os.cpu_count()}")
    for label, (kernels, cpu, digest, facts, gc_s, gc_n) in out.items():
        print(f"{label:16s} {kernels} kernels  tagging CPU {cpu}s  tags {digest[:16]}  facts {facts[:16]}  "
              f"gc.collect after each file {gc_s}s, {gc_n} objects freed")
    same_tags = len({o[2] for o in out.values()}) == 1
    same_facts = len({o[3] for o in out.values()}) == 1
    print("tags: the same" if same_tags else "tags: DIFFERENT")
    print("facts: the same" if same_facts else "facts: DIFFERENT")
    return 0 if same_tags and same_facts else 1


if __name__ == "__main__":
    sys.exit(main())
