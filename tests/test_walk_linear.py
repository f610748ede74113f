"""The walk of a mined folder (#37): linear in the tree's size, excluded folders pruned
before they are listed, and the walk's time inside the "in N s" a mine reports.

Before, each folder's full path was resolved (``os.path.realpath``: one ``lstat`` per
component) to catch symlink loops, by the walk and again by the stamps' walk: a tree of
3,000 nested folders took 6 min 17 s. ``--exclude`` filtered files after the whole tree
was listed (3 min 9 s for 8 files), and the stamps' walk at the end of a mine, like the
one before it starts, was left out of the reported time.

Nothing here measures wall time (tests must not depend on the machine's load): the walks
are counted (system calls on the tree's paths) and timed by an injected clock that only
the tree's listings advance.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from skel import api
from skel.cli import cli
from skel.miner import walk
from skel.miner.sources import DirectorySource

KERNEL = '''import triton
import triton.language as tl


@triton.jit
def {name}(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)
'''


def _nested(root: Path, depth: int, every: int = 100) -> Path:
    """``depth`` folders, each inside the previous one, a kernel file every ``every``
    levels (made relative to the folder above: the full path outgrows nothing)."""
    root.mkdir(parents=True)
    here = os.getcwd()
    os.chdir(root)
    try:
        for level in range(depth):
            os.mkdir("d")
            os.chdir("d")
            if level % every == 0:
                Path(f"k{level}.py").write_text(KERNEL.format(name=f"k{level}"))
    finally:
        os.chdir(here)
    return root


def _remove_nested(root: Path) -> None:
    """Delete a tree made by ``_nested`` level by level from the bottom: shutil.rmtree (and
    pytest's clean-up of old temporary folders) recurses once per level, past Python's
    recursion limit here."""
    if not root.exists():
        return
    here = os.getcwd()
    try:
        for top in [root, *[p for p in root.iterdir() if p.is_dir() and p.name != "d"]]:
            os.chdir(top)
            depth = 0
            while os.path.isdir("d"):
                os.chdir("d")
                depth += 1
            for _ in range(depth):
                for name in os.listdir("."):
                    os.unlink(name)
                os.chdir("..")
                os.rmdir("d")
            os.chdir(root)
    finally:
        os.chdir(here)


@pytest.fixture(autouse=True)
def _deep_trees_removed(tmp_path):
    yield
    for tree in tmp_path.iterdir():
        if tree.is_dir() and tree.name.startswith("tree"):
            _remove_nested(tree)


class Calls:
    """Counts the file-system calls on paths under ``root`` (a path, or a descriptor)."""

    def __init__(self, monkeypatch, root: Path, on_list=None) -> None:
        self.root, self.on_list = str(root), on_list
        self.by_name: dict[str, int] = {}
        self.listed: list[str] = []
        for name in ("stat", "lstat", "scandir", "listdir"):
            monkeypatch.setattr(os, name, self._spy(name, getattr(os, name)))

    def _spy(self, name, real):
        def spy(path=".", *args, **kwargs):
            p = os.fspath(path) if isinstance(path, (str, bytes, os.PathLike)) else ""
            if isinstance(p, str) and p.startswith(self.root):
                self.by_name[name] = self.by_name.get(name, 0) + 1
                if name in ("scandir", "listdir"):
                    self.listed.append(p)
                    if self.on_list:
                        self.on_list()
            return real(path, *args, **kwargs)
        return spy

    @property
    def total(self) -> int:
        return sum(self.by_name.values())


def _calls_to_mine(tmp_path, monkeypatch, hash_embedder, depth: int) -> int:
    from skel.miner.mine import mine
    from skel.store.knowledge import KnowledgeBase

    tree = _nested(tmp_path / f"tree{depth}", depth)
    kb = KnowledgeBase.open(str(tmp_path / f"store{depth}"))
    with monkeypatch.context() as m:
        calls = Calls(m, tree)
        report = mine(DirectorySource(tree, name=f"deep{depth}"), kb, jobs=1, embedder=hash_embedder)
    assert report.kernels == len(range(0, depth, 100)) and report.skipped == []
    return calls.total


def test_mining_a_deep_tree_costs_calls_linear_in_its_folders(tmp_path, monkeypatch, hash_embedder):
    """Two chains of nested folders, 300 and 1,200 deep, each mined whole (the walk, and
    the stamps' walk at the end): 900 more folders cost a few calls each. Resolving every
    folder's full path cost 1,200 x 1,201 / 2 lstat calls for the deeper one alone."""
    small = _calls_to_mine(tmp_path, monkeypatch, hash_embedder, 300)
    large = _calls_to_mine(tmp_path, monkeypatch, hash_embedder, 1200)
    per_folder = (large - small) / 900
    assert per_folder <= 6, f"{small} calls for 300 folders, {large} for 1,200"


def test_the_walk_lists_and_stats_each_folder_once(tmp_path, monkeypatch):
    tree = _nested(tmp_path / "tree", 1000)
    source = DirectorySource(tree)
    with monkeypatch.context() as m:
        calls = Calls(m, tree)
        items = list(source.items())
    assert len(items) == 10
    assert calls.by_name.get("scandir") == 1000 + 1  # every folder, the root included, listed once
    assert len(set(calls.listed)) == len(calls.listed)
    assert calls.total <= 3 * 1001 + 2 * len(items)


def test_exclude_prunes_a_folder_before_it_is_listed(tmp_path, monkeypatch):
    root = tmp_path / "tree"
    (root / "ops").mkdir(parents=True)
    (root / "ops" / "k.py").write_text(KERNEL.format(name="k"))
    _nested(root / "third_party", 200, every=20)  # a vendored tree: 200 folders, 10 kernel files
    (root / "a" / "third_party").mkdir(parents=True)  # not the top one: "third_party" matches paths from the root
    (root / "a" / "third_party" / "kept.py").write_text(KERNEL.format(name="kept"))
    with monkeypatch.context() as m:
        calls = Calls(m, root / "third_party")
        everything = Calls(m, root)
        report = api.mine(str(root), store=str(tmp_path / "store"), jobs=1, exclude=["third_party"])
    assert calls.total == 0, f"excluded folder touched: {calls.by_name} ({calls.listed[:3]})"
    assert {s.rel: s.reason for s in report.skipped} == {"third_party/": "excluded (--exclude third_party)"}
    assert report.kernels == 2 and report.files == 2
    assert str(root / "a" / "third_party") in everything.listed


def test_exclude_prunes_only_what_every_file_below_would_match():
    """A folder is pruned when a glob matches its path from the root (then it matches every
    file below it); a glob on names or whole file paths is left to the per-file check."""
    assert walk.excluded_dir("third_party", ["third_party"]) == "third_party"
    assert walk.excluded_dir("a/third_party", ["third_party"]) is None
    assert walk.excluded_dir("a/b", ["a/*"]) == "a/*"
    assert walk.excluded_dir("gen", ["*_gen.py"]) is None
    assert walk.excluded_dir("vendor", ["/vendor/"]) == "vendor"
    for rel in ("third_party/x/y.py", "a/b/c.py"):
        folder = rel.rsplit("/", 1)[0]
        for pattern in (["third_party/x"], ["a/*"], ["a/b"]):
            if walk.excluded_dir(folder, pattern):
                assert walk.excluded(rel, pattern)


def test_a_package_prefix_is_part_of_what_exclude_matches(tmp_path):
    root = tmp_path / "pkg"
    (root / "vendor").mkdir(parents=True)
    (root / "vendor" / "v.py").write_text(KERNEL.format(name="v"))
    (root / "k.py").write_text(KERNEL.format(name="k"))
    with walk.excluding(["pkg/vendor"], prefix="pkg/"):
        rels = {i.rel: getattr(i, "reason", "") for i in DirectorySource(root, prefix="pkg/").items()}
    assert rels == {"pkg/k.py": "", "pkg/vendor/": "excluded (--exclude pkg/vendor)"}
    assert {i.rel for i in DirectorySource(root, prefix="pkg/").items()} == {"pkg/k.py", "pkg/vendor/v.py"}


@pytest.mark.parametrize("edit", [False, True])
def test_the_reported_seconds_include_every_walk(tmp_path, monkeypatch, edit):
    """A clock that only the tree's listings advance (an hour each): the mine's "in N s"
    must hold all of them, those before the miner starts (is the tree unchanged?) and
    the stamps' walk after the last write included."""
    tree = _nested(tmp_path / "tree", 40, every=10)
    past = time.time() - 100  # out of the stamps' racy window, as an installed package is
    for p in [tree, *tree.rglob("*")]:
        os.utime(p, (past, past))
    store = str(tmp_path / "store")
    runner = CliRunner()
    if edit:  # a re-mine of an edited tree: the unchanged check walks it before the miner
        assert runner.invoke(cli, ["mine", str(tree), "--store", store, "-j", "1"]).exit_code == 0
        (tree / "k_new.py").write_text(KERNEL.format(name="k_new"))
        for p in [tree, tree / "k_new.py"]:
            os.utime(p, (past, past))
    clock = [0.0]

    def listed() -> None:
        clock[0] += 3600.0

    with monkeypatch.context() as m:
        m.setattr(time, "perf_counter", lambda: clock[0])
        Calls(m, tree, on_list=listed)
        r = runner.invoke(cli, ["mine", str(tree), "--store", store, "-j", "1", "--json"])
    assert r.exit_code == 0, r.output
    walked = clock[0]
    assert walked >= 2 * 41 * 3600  # the mine's own walk and the stamps'
    assert json.loads(r.stdout)["seconds"] == pytest.approx(walked)
