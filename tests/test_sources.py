"""Sources: a folder, an installed package and a git tree at a revision all go through one
seam, with the walk's filters and skip reasons."""

from __future__ import annotations

import importlib
import os
import subprocess

import pytest

from conftest import run_skel, write
from skel.miner import walk
from skel.miner.mine import mine
from skel.miner.sources import DirectorySource, GitSource, PackageSource, Source, resolve_package

KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def {name}(x_ptr, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < N) * 2, mask=offs < N)
'''


@pytest.fixture
def git(tmp_path, monkeypatch):
    """Run git in a repository with a fixed identity and no user or system config."""
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # never find an enclosing repo
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}

    def run(repo, *args: str) -> str:
        out = subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True, env=env)
        return out.stdout.strip()

    return run


def commit(git, repo, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-gpg-sign", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def as_rows(items) -> list[tuple]:
    return [(type(i).__name__, i.rel, i.reason) if isinstance(i, walk.Skipped)
            else (type(i).__name__, i.rel, i.digest, i.is_test, i.text) for i in items]


def tricky_tree(root) -> None:
    """Good files, test files, skipped folders and every content-level skip reason."""
    write(root / "pkg" / "ops" / "scale.py", KERNEL.format(name="scale_kernel"))
    write(root / "pkg" / "ops" / "configs" / "E=8,N=128,device_name=H200.json", '{"1": {"BLOCK_SIZE_M": 16}}\n')
    write(root / "pkg" / "__init__.py", "")
    write(root / "pkg" / "a.py", "x = 1\n")
    write(root / "pkg" / "z" / "deep.py", "y = 2\n")
    write(root / "tests" / "test_scale.py", "from pkg.ops.scale import scale_kernel\n")
    write(root / "top.py", "z = 3\n")
    write(root / "README.md", "not python\n")
    for skipped_dir in ("build", "node_modules", ".hidden", "__pycache__"):
        write(root / skipped_dir / "k.py", KERNEL.format(name="never_mined"))
    (root / "pkg" / "latin1.py").write_bytes(b"# caf\xe9\nimport triton\n")
    (root / "pkg" / "blob.py").write_bytes(b"triton jit\0\0\0")
    (root / "pkg" / "huge.py").write_text("# triton jit\n" + "x = 1\n" * 400_000)


# --- GitSource -----------------------------------------------------------------------------

def test_git_revisions_are_mined_as_they_were(tmp_path, git, hash_embedder):
    from skel.store.knowledge import KnowledgeBase

    repo = tmp_path / "kernels"
    write(repo / "pkg" / "ops.py", KERNEL.format(name="first_kernel"))
    git(repo, "init", "-q")
    rev1 = commit(git, repo, "one")
    write(repo / "pkg" / "ops.py", KERNEL.format(name="second_kernel") + KERNEL.format(name="third_kernel"))
    rev2 = commit(git, repo, "two")
    write(repo / "pkg" / "ops.py", KERNEL.format(name="uncommitted_kernel"))  # never seen by GitSource

    for rev, sha, functions in ((rev1, rev1, ["first_kernel"]), ("HEAD~1", rev1, ["first_kernel"]),
                                ("HEAD", rev2, ["second_kernel", "third_kernel"])):
        kb = KnowledgeBase.open(str(tmp_path / f"store-{rev}"))
        src = GitSource(repo, rev)
        assert (src.name, src.version, src.commit) == ("kernels", sha, sha)
        report = mine(src, kb, embedder=hash_embedder, jobs=1)
        assert (report.source, report.version, report.kernels) == ("kernels", sha, len(functions))
        assert sorted(r.function for r in kb.kernels()) == functions
        assert {(r.version, r.file) for r in kb.kernels()} == {(sha, "pkg/ops.py")}
    assert "uncommitted_kernel" in (repo / "pkg" / "ops.py").read_text(), "the working tree is not touched"
    assert git(repo, "status", "--porcelain") == "M pkg/ops.py"

    # one store, revision after revision: the source follows the revision mined last
    kb = KnowledgeBase.open(str(tmp_path / "history"))
    mine(GitSource(repo, rev1), kb, embedder=hash_embedder, jobs=1)
    report = mine(GitSource(repo, rev2), kb, embedder=hash_embedder, jobs=1)
    assert report.kernels == 2 and report.kernels_written == 2
    assert sorted(r.function for r in kb.kernels()) == ["second_kernel", "third_kernel"]
    (src,) = kb.sources()
    assert src.version == rev2


def test_git_tree_yields_what_the_checkout_walk_yields(tmp_path, git):
    repo = tmp_path / "repo"
    tricky_tree(repo)
    git(repo, "init", "-q")
    commit(git, repo, "tree")
    from_git = as_rows(GitSource(repo, "HEAD").items())
    from_disk = as_rows(DirectorySource(repo).items())
    assert from_git == from_disk  # same files, digests, test flags, skips, reasons and order
    reasons = {row[1]: row[2] for row in from_git if row[0] == "Skipped"}
    assert reasons["pkg/latin1.py"].startswith("not UTF-8")
    assert reasons["pkg/huge.py"].startswith("too large")
    assert reasons["pkg/blob.py"].startswith("binary")
    assert not any(row[1].startswith(("build/", "node_modules/", ".hidden/")) for row in from_git)
    # a folder or a single file inside the checkout, at a revision, like on disk
    assert as_rows(GitSource(repo / "pkg", "HEAD").items()) == as_rows(DirectorySource(repo / "pkg").items())
    single = repo / "pkg" / "ops" / "scale.py"
    assert as_rows(GitSource(single, "HEAD").items()) == as_rows(DirectorySource(single).items())
    assert GitSource(repo / "pkg", "HEAD").name == "pkg"


def test_git_tree_and_checkout_share_file_stamps(tmp_path, git, kb, hash_embedder):
    """Mining a checkout, then its HEAD through git, re-mines nothing."""
    repo = tmp_path / "repo"
    tricky_tree(repo)
    git(repo, "init", "-q")
    commit(git, repo, "tree")
    first = mine(DirectorySource(repo), kb, embedder=hash_embedder, jobs=1)
    again = mine(GitSource(repo, "HEAD"), kb, embedder=hash_embedder, jobs=1)
    assert first.kernels == again.kernels == 1
    assert again.kernels_written == 0 and again.unchanged == first.files - len(first.skipped)
    assert [s.__dict__ for s in again.skipped] == [s.__dict__ for s in first.skipped]


def test_git_symlinks_and_submodules_are_not_followed(tmp_path, git):
    repo = tmp_path / "repo"
    write(repo / "real" / "k.py", KERNEL.format(name="k"))
    os.symlink("real/k.py", repo / "alias.py")
    os.symlink("real", repo / "linked_dir")
    git(repo, "init", "-q")
    commit(git, repo, "links")
    rows = as_rows(GitSource(repo, "HEAD").items())
    assert [r[:2] for r in rows] == [("Skipped", "alias.py"), ("SourceFile", "real/k.py")]
    assert rows[0][2] == "symlink (not followed in a git tree)"

    sub = tmp_path / "sub"
    write(sub / "s.py", "x = 1\n")
    git(sub, "init", "-q")
    sub_head = commit(git, sub, "sub")
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{sub_head},vendor/sub")
    git(repo, "commit", "-q", "--no-gpg-sign", "-m", "submodule")
    skipped = [i for i in GitSource(repo, "HEAD").items() if isinstance(i, walk.Skipped)]
    assert [(s.rel, s.reason) for s in skipped][-1] == ("vendor/sub", "git submodule (not followed)")


def test_bad_revisions_and_paths_are_clear_errors(tmp_path, git):
    repo = tmp_path / "repo"
    write(repo / "pkg" / "k.py", "x = 1\n")
    git(repo, "init", "-q")
    commit(git, repo, "one")
    (repo / "later").mkdir()
    for rev, message in (("no-such-branch", "no commit 'no-such-branch'"), ("--all", "is not a revision"),
                         ("HEAD~5", "no commit 'HEAD~5'")):
        with pytest.raises(FileNotFoundError, match=message) as info:
            GitSource(repo, rev)
        assert "\n" not in str(info.value)
    with pytest.raises(FileNotFoundError, match="later does not exist at HEAD"):
        GitSource(repo / "later", "HEAD")
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(FileNotFoundError, match="not a git repository"):
        GitSource(plain, "HEAD")
    with pytest.raises(FileNotFoundError, match="no such file"):
        GitSource(tmp_path / "nowhere", "HEAD")


def test_bare_repository(tmp_path, git):
    repo = tmp_path / "repo"
    write(repo / "k.py", KERNEL.format(name="k"))
    git(repo, "init", "-q")
    head = commit(git, repo, "one")
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(tmp_path / "mirror.git"))
    src = GitSource(tmp_path / "mirror.git", head)
    assert (src.name, src.version) == ("mirror", head)
    assert [i.rel for i in src.items()] == ["k.py"]


def test_cli_mines_a_revision(tmp_path, git):
    import json

    repo = tmp_path / "repo"
    write(repo / "k.py", KERNEL.format(name="old_kernel"))
    git(repo, "init", "-q")
    rev1 = commit(git, repo, "one")
    write(repo / "k.py", KERNEL.format(name="new_kernel"))
    commit(git, repo, "two")
    store = str(tmp_path / "store")
    r = run_skel("mine", str(repo), "--rev", "HEAD~1", "--store", store, "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert (report["version"], report["kernels"], report["root"]) == (rev1, 1, f"{repo}@HEAD~1")
    r = run_skel("mine", str(repo), "--rev", "nope", "--store", store)
    assert r.returncode == 2 and "no commit 'nope'" in r.stderr
    r = run_skel("mine", "--package", "skel", "--rev", "HEAD", "--store", store)
    assert r.returncode == 2 and "--rev needs PATH" in r.stderr


# --- DirectorySource and PackageSource -----------------------------------------------------

def _unpacked_wheel(root, *, top_level: bool):
    """``root`` as `unzip liger_kernel-0.5.4-py3-none-any.whl` leaves it: the package and
    its ``.dist-info`` side by side (``top_level.txt`` or only a ``RECORD`` naming it)."""
    write(root / "liger_kernel" / "ops" / "scale.py", KERNEL.format(name="scale_kernel"))
    meta = root / "liger_kernel-0.5.4.dist-info"
    write(meta / "METADATA", "Metadata-Version: 2.1\nName: liger_kernel\nVersion: 0.5.4\n")
    write(meta / "RECORD", "liger_kernel/ops/scale.py,,\nliger_kernel-0.5.4.dist-info/METADATA,,\n")
    if top_level:
        write(meta / "top_level.txt", "liger_kernel\n")
    # another distribution beside it, as in site-packages, is not this package's
    write(root / "other-9.9.dist-info" / "METADATA", "Metadata-Version: 2.1\nName: other\nVersion: 9.9\n")
    write(root / "other-9.9.dist-info" / "RECORD", "other/__init__.py,,\n")


@pytest.mark.parametrize("top_level", [True, False])
def test_an_unpacked_wheel_is_versioned_by_its_dist_info(tmp_path, top_level):
    wheel = tmp_path / "wheel"
    _unpacked_wheel(wheel, top_level=top_level)
    assert DirectorySource(wheel / "liger_kernel").version == "0.5.4"  # the package folder: the one beside it
    assert DirectorySource(wheel / "liger_kernel", version="1.0").version == "1.0"  # --version wins
    # the wheel's own folder: its root holds two distributions, and nothing says which
    assert DirectorySource(wheel).version == "unversioned"
    (wheel / "other-9.9.dist-info" / "METADATA").unlink()
    (wheel / "other-9.9.dist-info" / "RECORD").unlink()
    (wheel / "other-9.9.dist-info").rmdir()
    assert DirectorySource(wheel).version == "0.5.4"  # one distribution at the root: its version
    assert DirectorySource(wheel / "liger_kernel" / "ops").version == "unversioned"  # nothing beside ops/
    store = str(tmp_path / "store")
    r = run_skel("mine", str(wheel / "liger_kernel"), "--store", store, "--json")
    assert r.returncode == 0, r.stderr
    assert __import__("json").loads(r.stdout)["version"] == "0.5.4"


def test_directory_source_is_the_walk(tmp_path):
    root = tmp_path / "tree"
    tricky_tree(root)
    os.symlink(root / "pkg", root / "pkg" / "loop")
    src = DirectorySource(root)
    assert (src.name, src.version, src.root) == ("tree", "unversioned", str(root))
    assert as_rows(src.items()) == as_rows(walk.discover(root))
    assert as_rows(src) == as_rows(walk.discover(root)), "a source is iterable, again and again"
    named = DirectorySource(root, "demo", "1.0")
    assert (named.name, named.version) == ("demo", "1.0")
    with pytest.raises(FileNotFoundError, match="no such file"):
        DirectorySource(tmp_path / "nowhere")


def test_package_source_is_the_walk_under_the_package_name(tmp_path, monkeypatch):
    site = tmp_path / "site"
    tricky_tree(site / "tinykern")
    write(site / "tiny_kernels-1.2.3.dist-info" / "METADATA",
          "Metadata-Version: 2.1\nName: tiny-kernels\nVersion: 1.2.3\n")
    write(site / "tiny_kernels-1.2.3.dist-info" / "top_level.txt", "tinykern\n")
    write(site / "onefile.py", KERNEL.format(name="k"))
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()

    src = PackageSource("tinykern")
    assert (src.name, src.version, src.root) == ("tiny-kernels", "1.2.3", str(site / "tinykern"))
    expected = []
    for item in walk.discover(site / "tinykern"):
        item.rel = "tinykern/" + item.rel
        expected.append(item)
    assert as_rows(src.items()) == as_rows(expected)

    single = PackageSource("onefile", name="one", version="0.1")  # a module: its file name, no prefix
    assert (single.name, single.version) == ("one", "0.1")
    assert [i.rel for i in single.items()] == ["onefile.py"]
    with pytest.raises(FileNotFoundError, match="not installed"):
        PackageSource("no_such_package_xyz")


def test_a_package_s_distribution_is_found_beside_it(tmp_path, monkeypatch):
    """The distribution comes from the package's own directory: by top_level.txt, else by
    RECORD (wheels built without top_level.txt), else, when no metadata is there (an
    editable install), from every installed distribution."""
    site = tmp_path / "site"
    write(site / "viarecord" / "__init__.py", "")
    write(site / "other_dist-2.0.dist-info" / "METADATA", "Metadata-Version: 2.1\nName: other-dist\nVersion: 2.0\n")
    write(site / "other_dist-2.0.dist-info" / "top_level.txt", "unrelated\n")
    write(site / "record_only-0.5.dist-info" / "METADATA", "Metadata-Version: 2.1\nName: record-only\nVersion: 0.5\n")
    write(site / "record_only-0.5.dist-info" / "RECORD",
          "viarecord/__init__.py,,\nrecord_only-0.5.dist-info/METADATA,,\n")
    write(site / "lonely.py", "")
    write(site / "lone_mod-3.1.dist-info" / "METADATA", "Metadata-Version: 2.1\nName: lone-mod\nVersion: 3.1\n")
    write(site / "lone_mod-3.1.dist-info" / "RECORD", "lonely.py,,\n")
    write(site / "nometa" / "__init__.py", "")
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()

    assert resolve_package("viarecord")[1:] == ("record-only", "0.5")
    assert resolve_package("lonely")[1:] == ("lone-mod", "3.1")
    assert resolve_package("nometa")[1:] == ("nometa", "unknown"), "no distribution: the import name"


def test_mine_takes_a_source(tmp_path, kb):
    assert isinstance(DirectorySource(tmp_path), Source)
    with pytest.raises(TypeError, match="takes a Source"):
        mine(tmp_path, kb)


def test_tuned_config_tables_beside_a_file_travel_with_it(tmp_path, git):
    """JSON launch-config tables in `configs/` beside a kernel file (vLLM/SGLang fused MoE)
    reach its facts from every source, and change its digest (re-mined when they appear)."""
    repo = tmp_path / "repo"
    tricky_tree(repo)
    git(repo, "init", "-q")
    commit(git, repo, "tree")
    single = repo / "pkg" / "ops" / "scale.py"
    for src in (DirectorySource(repo), GitSource(repo, "HEAD"), DirectorySource(single), GitSource(single, "HEAD")):
        files = {i.rel: i for i in src.items() if isinstance(i, walk.SourceFile)}
        scale = next(f for rel, f in files.items() if rel.endswith("scale.py"))
        assert scale.config_tables == ["E=8,N=128,device_name=H200.json"], src
        assert all(not f.config_tables for rel, f in files.items() if not rel.endswith("scale.py"))
    plain = walk.decode("pkg/ops/scale.py", single.read_bytes())
    assert plain.digest != next(i for i in DirectorySource(single).items()).digest


TILED = '''
import triton
import triton.language as tl


@triton.jit
def tiled_copy(x_ptr, y_ptr, N, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    for start in range(0, N, BLOCK_SIZE):
        offs = start + tl.arange(0, BLOCK_SIZE)
        tl.store(y_ptr + pid * N + offs, tl.load(x_ptr + pid * N + offs, mask=offs < N) * 2.0, mask=offs < N)
'''


def test_mined_kernels_beside_config_tables_are_not_launch_tuning_candidates(tmp_path, kb, hash_embedder):
    """A kernel whose folder keeps tuned JSON configs (launched elsewhere) is not counted as
    fitting autotune-configs; the same kernel without the tables is, and adding the tables
    re-mines the file."""
    write(tmp_path / "repo" / "ops" / "copy.py", TILED)
    mine(DirectorySource(tmp_path / "repo"), kb, embedder=hash_embedder, jobs=1)
    (rec,) = kb.kernels(where={"source": "repo"})
    assert "autotune-configs" in rec.applicable
    write(tmp_path / "repo" / "ops" / "configs" / "N=4096,device_name=H200.json", "{}\n")
    report = mine(DirectorySource(tmp_path / "repo"), kb, embedder=hash_embedder, jobs=1)
    assert report.kernels_written == 1
    (rec,) = kb.kernels(where={"source": "repo"})
    assert "autotune-configs" not in rec.applicable
