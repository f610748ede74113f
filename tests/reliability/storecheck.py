"""Shared by the fault tests and benchmarks/reliability/reliability.py: run `skel mine` in a child
process, kill it, and compare what a store holds with a clean mine of the same tree.

A store is read in a fresh process each time (``snapshot``): chroma caches clients per
path inside a process, and a reader in the test's own process could be served that cache
instead of what the killed writer left on disk.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from skel.skeletons.registry import fixture_files, fixture_name

ROOT = Path(__file__).resolve().parents[2]

# What a consistent store is, read in a child process. Kernel identity is everything a
# user sees of a kernel (file, function, lines, techniques) plus its id.
_SNAPSHOT = r"""
import json, sys
from skel.store.knowledge import KnowledgeBase
kb = KnowledgeBase.open(sys.argv[1], create=False)
col = kb._col("kernels")
got = col.get(include=["metadatas", "embeddings"])
kernels = sorted([i, m["source"], m["file"], m["function"], m["line_start"], m["line_end"], m["techniques"],
                  m["applicable"]] for i, m in zip(got["ids"], got["metadatas"]))
# the vector index must agree with the records: a query over all of them finds each one
found = set()
if got["ids"]:
    res = col.query(query_embeddings=[list(map(float, got["embeddings"][0]))], n_results=len(got["ids"]),
                    include=[])
    found = set(res["ids"][0])
files = sorted((m["source"], m["file"], m["content_hash"])
               for m in kb._col("files").get(include=["metadatas"])["metadatas"])
sources = sorted([s.name, s.state, s.counts] for s in kb.sources())
stats = kb.stats().to_json()
print(json.dumps({"kernels": kernels, "indexed": len(found), "count": kb.count(), "files": files,
                  "sources": sources, "stats": stats, "embedder": kb.embedder_name()}))
"""


def env(home: Path, **extra: str) -> dict[str, str]:
    e = dict(os.environ)
    e.pop("SKEL_FAULT_KILL_AT", None)
    e.update({"SKEL_HOME": str(home), "SKEL_EMBEDDER": "hash", "PYTHONPATH": str(ROOT),
              "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    e.update(extra)
    return e


def make_tree(dest: Path, n: int = 24) -> Path:
    """A tree of ``n`` real kernel files (the catalog's fixtures, which ship with skel),
    in sub-folders so files collide by name only through their paths."""
    files = sorted((fixture_name(f), f) for f in fixture_files(".py"))[:n]
    for i, (name, f) in enumerate(files):
        sub = dest / f"pkg{i % 3}"
        sub.mkdir(parents=True, exist_ok=True)
        shutil.copy(f, sub / name)
    # older than the racy window of skel/miner/stamps.py, as an installed package's files are:
    # a complete mine then always leaves its stamps, and an unchanged re-mine uses them
    old = time.time() - 100
    for p in [*dest.rglob("*"), dest]:
        os.utime(p, (old, old))
    return dest


def mine_cmd(tree: Path, store: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "skel.cli", "mine", str(tree), "--store", store, "--no-progress", "-j", "1",
            *extra]


def _ctrl_c_back() -> None:
    """In the child: a shell's background job (a CI step, `cmd &`) ignores SIGINT, and an
    ignored signal stays ignored across exec, so a mine would never see the Ctrl-C sent."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_mine(tree: Path, store: str, home: Path, timeout: float = 300, **extra_env: str):
    return subprocess.run(mine_cmd(tree, store), capture_output=True, text=True, env=env(home, **extra_env),
                          preexec_fn=_ctrl_c_back,
                          cwd=ROOT, timeout=timeout)


def mine_killed_after(tree: Path, store: str, home: Path, delay: float, sig: int = signal.SIGKILL):
    """Start a mine, send ``sig`` after ``delay`` seconds; (return code, stderr)."""
    p = subprocess.Popen(mine_cmd(tree, store), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=_ctrl_c_back,
                         env=env(home), cwd=ROOT)
    time.sleep(delay)
    if p.poll() is None:
        p.send_signal(sig)
    out, err = p.communicate(timeout=120)
    return p.returncode, err


def snapshot(store: str, home: Path) -> dict:
    r = subprocess.run([sys.executable, "-c", _SNAPSHOT, store], capture_output=True, text=True, env=env(home),
                       cwd=ROOT, timeout=120)
    if r.returncode != 0:
        raise AssertionError(f"store {store} unreadable: {r.stderr.strip().splitlines()[-1:]}")
    return json.loads(r.stdout)


def problems(got: dict, clean: dict, tree_files: set[str]) -> list[str]:
    """Every way ``got`` differs from a consistent store equal to ``clean``; [] when none."""
    out = []
    if got["kernels"] != clean["kernels"]:
        a = {tuple(map(str, k)) for k in got["kernels"]}
        b = {tuple(map(str, k)) for k in clean["kernels"]}
        out.append(f"kernels differ: {len(a - b)} extra, {len(b - a)} missing")
    keys = [(k[1], k[2], k[3], k[4]) for k in got["kernels"]]
    if len(keys) != len(set(keys)):
        out.append(f"{len(keys) - len(set(keys))} duplicate kernels")
    if got["count"] != len(got["kernels"]) or got["indexed"] != len(got["kernels"]):
        out.append(f"index disagrees: count {got['count']}, indexed {got['indexed']}, records {len(got['kernels'])}")
    orphans = {k[2] for k in got["kernels"]} - tree_files
    if orphans:
        out.append(f"kernels of files not in the tree: {sorted(orphans)[:3]}")
    if {f[1] for f in got["files"]} != tree_files:
        out.append("file records differ from the tree")
    if got["files"] != clean["files"]:
        out.append("file hashes differ from a clean mine")
    if got["sources"] != clean["sources"]:
        out.append(f"sources differ: {got['sources']} vs {clean['sources']}")
    if got["stats"] != clean["stats"]:
        out.append("statistics differ from a clean mine")
    if got["stats"].get("_total", {}).get("kernels") != len(got["kernels"]):
        out.append("statistics count a different number of kernels")
    return out


def tree_files(tree: Path) -> set[str]:
    return {str(p.relative_to(tree)) for p in tree.rglob("*.py")}
