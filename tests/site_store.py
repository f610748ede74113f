"""A small store for the site's tests: a git repository whose remote is on GitHub (so
evidence links point at the mined commit), mined as a folder and through its history
(a technique introduced, an optimisation-looking change no skeleton explains), plus one
verification run of our own beside the shipped ones."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from skel.skeletons.registry import fixture_file

ROOT = Path(__file__).resolve().parent.parent
REMOTE = "https://github.com/example-org/kernels.git"

SOFTMAX = '''
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + offs, mask=offs < N, other=-float("inf"))
    e = tl.exp(x - tl.max(x, 0))
    tl.store(y_ptr + row * N + offs, e / tl.sum(e, 0), mask=offs < N)


@triton.jit
def add_kernel(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < N)
    tl.store(y_ptr + offs, x + 1, mask=offs < N)


def add(x, y):
    n = x.numel()
    add_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024, num_warps=4)
'''


def _git(repo: Path, *args: str, date: str = "2025-01-01T00:00:00+00:00") -> str:
    env = {"GIT_COMMITTER_DATE": date, "GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com",
           "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.com",
           "PATH": "/usr/bin:/bin:/usr/local/bin", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def _commit(repo: Path, message: str, date: str) -> None:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message, "--date", date, date=date)


def make_repo(base: Path) -> Path:
    """Three commits: kernels, exp2 folding (1.4x), more warps (an unexplained change)."""
    repo = base / "kernels"
    (repo / "ops").mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "remote", "add", "origin", REMOTE)
    k = SOFTMAX
    (repo / "ops" / "softmax.py").write_text(k.lstrip())
    for name in ("online_softmax.py", "split_k_reduction.py", "grouped_l2_swizzle.py", "persistent_kernel.py"):
        shutil.copy(fixture_file(name), repo / "ops" / name)
    _commit(repo, "initial kernels", "2025-01-01T10:00:00+00:00")
    k = k.replace("e = tl.exp(x - tl.max(x, 0))", "e = tl.exp2((x - tl.max(x, 0)) * 1.4426950408889634)")
    (repo / "ops" / "softmax.py").write_text(k.lstrip())
    _commit(repo, "softmax: exp2 with log2(e) folded (1.4x faster)", "2025-01-02T10:00:00+00:00")
    k = k.replace("BLOCK=1024, num_warps=4)", "BLOCK=1024, num_warps=8)")
    (repo / "ops" / "softmax.py").write_text(k.lstrip())
    _commit(repo, "add: 8 warps, 2.1 ms -> 1.7 ms", "2025-01-03T10:00:00+00:00")
    return repo


def build_store(base: Path) -> tuple[Path, Path]:
    """(store, repository): the repository mined as a folder and through its history."""
    from skel.embed import HashEmbedder
    from skel.miner.history import mine_history
    from skel.miner.mine import mine
    from skel.miner.sources import DirectorySource
    from skel.store.evidence import ShapeResult, Verification
    from skel.store.history import HistoryStore
    from skel.store.knowledge import KnowledgeBase

    repo = make_repo(base)
    store = base / "store"
    kb = KnowledgeBase.open(str(store))
    mine(DirectorySource(repo / "ops", name="kernels"), kb, jobs=1, embedder=HashEmbedder())
    mine_history(repo, HistoryStore(store), name="kernels", jobs=1, cache_root=base / "cache")
    kb.add_verification(Verification(
        skeleton="online-softmax", kernel="kernels/ops/online_softmax.py::softmax_kernel", verdict="correct",
        subject="suite", date="2025-01-04T00:00:00+00:00", device="cpu (TRITON_INTERPRET=1)", backend="cpu",
        triton="3.7.1", shapes=["T=1024", "T=4096"], dtypes=["float32"], max_error={"out0": 3e-7},
        per_shape=[ShapeResult(shape="T=1024", dtype="float32", max_error=1e-7),
                   ShapeResult(shape="T=4096", dtype="float32", max_error=3e-7)],
        detail="same results on 2 shapes"))
    return store, repo
