"""Where mined code comes from: one seam, several kinds of source.

A ``Source`` has a ``name`` and a ``version`` (recorded with every kernel), a ``root`` (shown
to people and recorded with the source) and ``items()``: every file worth mining as a
``SourceFile`` (rel path with forward slashes, text, digest, is_test) or a ``Skipped`` (rel
path, reason). ``skel.miner.mine.mine`` reads only this, so a new kind of source — another
language, a repository's history — is one more class here, not a fork of the miner.

- ``DirectorySource(path)``: a checkout, a folder or one file on disk.
- ``PackageSource(import_name)``: an installed Python package; paths start with its name.
- ``GitSource(repo, rev)``: a git repository's tree at a revision, read with git plumbing
  (nothing is checked out; the working tree and index are never touched).
- ``GitBlobs(repo, [(rel, blob), ...])``: chosen blobs of a repository (a commit's changed
  files before and after), for history mining.

All of them apply the same filters, size limit and skip reasons (skel/miner/walk.py).

Each also has an ``origin``: where its code comes from, independent of the name it is
recorded under — the repository's remote (``github.com/org/repo``, the same for every clone
and protocol) and the path inside it, else the resolved folder; ``package:NAME`` for a
package. The miner keys records by name; the origin lets it tell a re-mine of the same
code from another folder that merely has the same name (``ops``, ``src``, ``kernels``).

Errors: a source that cannot be found — a missing path, a package that is not installed, a
folder that is not a git repository, a revision or path the repository does not have —
raises ``FileNotFoundError`` with a one-line message when the source is created, before
anything is read. A single bad file never raises; it becomes a ``Skipped``.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import subprocess
import threading
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Generator, Iterator

from skel.kernels.configs import CONFIG_TABLE_DIR, config_tables_in
from skel.miner import walk
from skel.miner.walk import Skipped, SourceFile

Item = SourceFile | Skipped


class Source(ABC):
    """Something to mine: a name and version for the records, a root to show, its files."""

    name: str
    version: str
    root: str

    @abstractmethod
    def items(self) -> Iterator[Item]:
        """Every file worth mining, or why it was skipped; rel paths are unique."""

    def __iter__(self) -> Iterator[Item]:
        return self.items()

    @property
    def origin(self) -> str:
        """Where the code comes from (see the module docstring); the root when a kind of
        source knows nothing better."""
        return self.root

    @property
    def local_path(self) -> Path | None:
        """The folder or file on disk this source reads, when there is one."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, version={self.version!r}, root={self.root!r})"


# --- a folder on disk --------------------------------------------------------------------

class DirectorySource(Source):
    """A checkout, a folder or a single file. Name defaults to the directory's name, version
    to the git HEAD commit when ``path`` is in a git checkout, else to the version in a
    ``*.dist-info`` (or ``*.egg-info``) folder beside it or at its root (an unpacked wheel,
    a folder of ``site-packages``: ``dist_info_version``), else ``"unversioned"``.
    ``prefix`` is put before every rel path (``PackageSource`` uses it)."""

    def __init__(self, path: str | os.PathLike, name: str | None = None, version: str | None = None,
                 *, prefix: str = "") -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise FileNotFoundError(f"{path}: no such file or directory")
        self.name = name or self.path.resolve().name
        self.version = version or git_version(self.path) or dist_info_version(self.path) or "unversioned"
        self.root = str(self.path)
        self.prefix = prefix
        self._origin: str | None = None

    @property
    def origin(self) -> str:
        if self._origin is None:
            self._origin = path_origin(self.path)
        return self._origin

    @property
    def local_path(self) -> Path | None:
        return self.path

    def items(self) -> Iterator[Item]:
        for item in walk.discover(self.path):
            item.rel = self.prefix + item.rel
            yield item


# --- an installed package ----------------------------------------------------------------

class PackageSource(DirectorySource):
    """An installed package, found the way ``import`` would find it. Name defaults to its
    distribution's name (``fla`` → ``fla-core``), version to the distribution's version
    (``"unknown"`` without metadata); rel paths start with ``<import_name>/`` (a single-module
    package: just its file name)."""

    def __init__(self, import_name: str, name: str | None = None, version: str | None = None) -> None:
        path, dist, dist_version = resolve_package(import_name)
        super().__init__(path, name or dist, version or dist_version,
                         prefix="" if path.is_file() else f"{import_name}/")
        self.import_name = import_name

    @property
    def origin(self) -> str:
        # the same package wherever (and in whichever environment) it is installed
        return f"package:{self.import_name}"


def resolve_package(name: str) -> tuple[Path, str, str]:
    """(package directory, distribution name, version) of an installed package."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError) as exc:
        raise FileNotFoundError(f"package {name!r} is not importable: {exc}") from exc
    if spec is None:
        raise FileNotFoundError(f"package {name!r} is not installed in this environment")
    if spec.submodule_search_locations:
        root = Path(list(spec.submodule_search_locations)[0])
    elif spec.origin:
        root = Path(spec.origin)
    else:
        raise FileNotFoundError(f"package {name!r} has no files on disk")
    dist = _distribution_beside(name, root)
    if dist is None:  # an editable install, say: its metadata lives elsewhere
        dists = importlib.metadata.packages_distributions().get(name, [])
        dist = dists[0] if dists else name
    try:
        version = importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return root, dist, version


def _distribution_beside(name: str, root: Path) -> str | None:
    """The name of the distribution installed in the same directory as ``root`` that
    provides ``name`` (``_dist_beside``), or None."""
    dist = _dist_beside(name, root)
    return dist.name if dist is not None else None


def _dist_beside(name: str, root: Path) -> importlib.metadata.Distribution | None:
    """The distribution in the same directory as ``root`` that provides ``name`` (by its
    ``top_level.txt``, else its ``RECORD``), or None. ``packages_distributions()`` answers
    the same by building the file list of every installed distribution, which is slow
    beside torch and its kin, on every `skel mine --package`."""
    entry = f"\n{name}/" if root.is_dir() else f"\n{root.name},"
    try:
        for d in importlib.metadata.distributions(path=[str(root.parent)]):
            top = d.read_text("top_level.txt")
            if top is not None:
                if name in top.split():
                    return d
            elif entry in "\n" + (d.read_text("RECORD") or ""):
                return d
    except (OSError, ValueError):
        return None
    return None


def dist_info_version(path: Path) -> str | None:
    """The version an unpacked wheel (or an installed package's folder) records for the code
    at ``path``: the ``*.dist-info`` beside it that provides it (``pkg/`` next to
    ``pkg-1.2.dist-info/``, as a wheel unpacks and ``site-packages`` holds them), else the
    one distribution whose metadata sits at ``path``'s root (the unpacked wheel's folder
    itself); None when there is none, or several at the root with no way to choose."""
    try:
        resolved = path.resolve()
        name = resolved.name if resolved.is_dir() else resolved.stem
        dist = _dist_beside(name, resolved)
        if dist is None and resolved.is_dir():
            inside = list(importlib.metadata.distributions(path=[str(resolved)]))
            dist = inside[0] if len(inside) == 1 else None
        version = dist.version if dist is not None else None
    except (OSError, ValueError):
        return None
    return version.strip() if isinstance(version, str) and version.strip() else None


def git_version(root: Path) -> str | None:
    """The HEAD commit of the checkout holding ``root``, or None."""
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _git_out(cwd: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def remote_identity(url: str) -> str:
    """``host/path`` of a git remote URL: the same for its https, ssh and scp-like
    spellings, never with a user name or password (a token in a URL must not reach a
    shared store)."""
    url = url.strip()
    m = re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/]*@)?([^/:]+)(?::\d+)?(/.*)?$", url)
    if m and not url.startswith("file://"):
        host, rest = m.group(1), m.group(2) or ""
    elif (m := re.match(r"^(?:[^@/:]+@)?([^/:]+):(?!//)(.+)$", url)) and not re.match(r"^[A-Za-z]:[\\/]", url):
        host, rest = m.group(1), "/" + m.group(2)  # scp-like: [user@]host:path
    else:  # a local path (or file://) remote
        return url.removeprefix("file://").rstrip("/").removesuffix(".git")
    return f"{host.lower()}{rest.rstrip('/').removesuffix('.git')}"


_FORGES = {"github.com": "{base}/blob/{rev}/{path}#L{line}", "gitlab.com": "{base}/-/blob/{rev}/{path}#L{line}",
           "bitbucket.org": "{base}/src/{rev}/{path}#lines-{line}"}
_COMMITS = {"github.com": "{base}/commit/{rev}", "gitlab.com": "{base}/-/commit/{rev}",
            "bitbucket.org": "{base}/commits/{rev}"}


def _forge(identity: str) -> tuple[str, str, str] | None:
    """(host, https://host/owner/repo, path inside the repository) of an identity as
    ``remote_identity`` spells it, when its host is a forge with known URL shapes."""
    parts = identity.split("/")
    if len(parts) < 3 or parts[0] not in _FORGES:
        return None
    return parts[0], "https://" + "/".join(parts[:3]), "/".join(parts[3:])


def file_url(origin: str, version: str, file: str, line: int) -> str | None:
    """A web link to line ``line`` of ``file`` (a path as the miner records it, relative to
    the mined folder) at the mined commit, for a source whose origin is a checkout on a
    known forge and whose version is that commit; None otherwise (a package, a local
    folder, an uncommitted tree: there is no page to point at)."""
    forge = _forge(origin)
    if forge is None or not re.fullmatch(r"[0-9a-f]{40}", version):
        return None
    host, base, inside = forge
    path = f"{inside}/{file}".strip("/") if inside else file
    return _FORGES[host].format(base=base, rev=version, path=path, line=line)


def commit_url(repo_root: str, commit: str) -> str | None:
    """A web link to ``commit`` of the repository checked out at ``repo_root`` (its origin
    remote on a known forge), or None."""
    identity = repo_identity(Path(repo_root)) if Path(repo_root).is_dir() else None
    forge = _forge(identity) if identity else None
    if forge is None:
        return None
    return _COMMITS[forge[0]].format(base=forge[1], rev=commit)


def repo_identity(cwd: Path) -> str | None:
    """The identity of the repository holding ``cwd``: its ``origin`` remote (else its
    first remote), as ``remote_identity``; None without a remote or outside git."""
    remotes = (_git_out(cwd, "remote") or "").split()
    if not remotes:
        return None
    url = _git_out(cwd, "remote", "get-url", "origin" if "origin" in remotes else remotes[0])
    return remote_identity(url) if url else None


def path_origin(path: Path) -> str:
    """The origin of a folder or file on disk: its repository's remote and its path in
    the repository when it is in a checkout with a remote, else its resolved path."""
    resolved = path.resolve()
    folder = resolved if resolved.is_dir() else resolved.parent
    identity = repo_identity(folder)
    prefix = _git_out(folder, "rev-parse", "--show-prefix") if identity else None
    if identity is None or prefix is None:
        return str(resolved)
    inside = prefix.rstrip("/") + ("" if resolved.is_dir() else "/" + resolved.name)
    return f"{identity}/{inside.strip('/')}".rstrip("/")


# --- a git tree at a revision ------------------------------------------------------------

SYMLINK_MODE = "120000"


class GitSource(Source):
    """The tree of a git repository at ``rev`` (a commit, branch, tag, ``HEAD~3`` …), read
    with ``git ls-tree`` and ``git cat-file --batch``: nothing is checked out.

    ``repo_path`` is the repository (a checkout or a bare repository) or a folder or file
    inside a checkout, which limits the mine to that path at ``rev``. Version is the
    resolved commit (``self.commit``) unless given; name defaults to the folder's name, as
    for ``DirectorySource`` (a bare repository's ``.git`` suffix dropped). The walk's
    filters, size limit and skip reasons apply unchanged; symlinks in the tree are not
    followed (a symlinked ``.py`` file is skipped, a symlinked directory ignored) and
    submodules are skipped.
    """

    def __init__(self, repo_path: str | os.PathLike, rev: str = "HEAD", name: str | None = None,
                 version: str | None = None) -> None:
        path = Path(repo_path)
        if not path.exists():
            raise FileNotFoundError(f"{repo_path}: no such file or directory")
        self.cwd = path if path.is_dir() else path.parent
        self.rev = rev
        inside = self._git("rev-parse", "--show-prefix")
        if inside is None:
            raise FileNotFoundError(f"{repo_path}: not a git repository")
        if rev.startswith("-") or not rev.strip():
            raise FileNotFoundError(f"{repo_path}: {rev!r} is not a revision")
        commit = self._git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
        if not commit:
            raise FileNotFoundError(f"{repo_path}: no commit {rev!r} in this repository")
        self.commit = commit.strip()
        self.subpath = inside.strip().rstrip("/")  # where repo_path is inside the repository
        if path.is_file():
            self.subpath = f"{self.subpath}/{path.name}".lstrip("/")
        kind = self._git("cat-file", "-t", f"{self.commit}:{self.subpath}")
        if kind is None or kind.strip() not in ("tree", "blob"):
            raise FileNotFoundError(f"{repo_path}: {self.subpath or '.'} does not exist at {rev}")
        self.is_file = kind.strip() == "blob"
        named = path.resolve()
        if named.name == ".git":  # the repository's own git directory
            named = named.parent
        self.name = name or named.name.removesuffix(".git") or named.name  # as DirectorySource names it
        self.version = version or self.commit
        self.root = f"{path}@{rev}"
        self.path = path
        self._origin: str | None = None

    @property
    def origin(self) -> str:
        """The remote and path in the repository, as ``path_origin`` gives for a checkout
        (a folder and the same folder at another revision are one source); without a
        remote, the repository's resolved location and the path."""
        if self._origin is None:
            identity = repo_identity(self.cwd)
            if identity is None:
                top = _git_out(self.cwd, "rev-parse", "--show-toplevel")
                if not top:  # a bare repository
                    top = (_git_out(self.cwd, "rev-parse", "--absolute-git-dir") or str(self.cwd.resolve()))
                identity = str(Path(top).resolve())
            self._origin = f"{identity}/{self.subpath}".rstrip("/")
        return self._origin

    @property
    def local_path(self) -> Path | None:
        return self.path

    def _git(self, *args: str) -> str | None:
        """stdout of a git command run in the repository, or None when it fails."""
        try:
            out = subprocess.run(["git", "-C", str(self.cwd), *args], capture_output=True, text=True,
                                 timeout=60)
        except FileNotFoundError as exc:
            raise FileNotFoundError("git is not installed (needed to mine a revision)") from exc
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout if out.returncode == 0 else None

    def _entries(self) -> list[tuple[str, str, str, str, str]]:
        """(mode, type, object, size, rel) of every entry under the mined path, recursively."""
        if self.is_file:
            parent, _, base = self.subpath.rpartition("/")
            listing = self._ls_tree(f"{self.commit}:{parent}", recursive=False)
            return [(m, t, o, s, base) for m, t, o, s, rel in listing if rel == base]
        return self._ls_tree(f"{self.commit}:{self.subpath}", recursive=True)

    def _ls_tree(self, tree: str, recursive: bool) -> list[tuple[str, str, str, str, str]]:
        args = ["ls-tree", "-l", "-z", "--full-tree"] + (["-r"] if recursive else []) + [tree]
        try:
            out = subprocess.run(["git", "-C", str(self.cwd), *args], capture_output=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise OSError(f"git ls-tree {tree} failed: {exc}") from exc
        if out.returncode != 0:
            raise OSError(f"git ls-tree {tree} failed: {out.stderr.decode(errors='replace').strip()}")
        entries = []
        for record in out.stdout.split(b"\0"):
            if not record:
                continue
            meta, _, rel = record.partition(b"\t")
            mode, kind, obj, size = meta.decode().split()
            entries.append((mode, kind, obj, size, os.fsdecode(rel)))
        return entries

    def items(self) -> Iterator[Item]:
        plan: list[tuple[str, str | Item]] = []  # (rel, object to read | decided item)
        entries = self._entries()
        tables = config_tables_in([e[4] for e in entries if e[1] == "blob"])
        if self.is_file:  # the listing holds the file alone: read the configs/ folder beside it
            parent = self.subpath.rpartition("/")[0]
            try:
                beside = self._ls_tree(f"{self.commit}:{parent + '/' if parent else ''}{CONFIG_TABLE_DIR}", False)
            except OSError:
                beside = []
            tables = {"": sorted(e[4] for e in beside if e[1] == "blob" and e[4].endswith(".json"))[:8]}
        for mode, kind, obj, size, rel in entries:
            *dirs, base = rel.split("/")
            if any(walk.skip_dir(d) for d in dirs):
                continue
            if kind == "commit":
                plan.append((rel, Skipped(rel, "git submodule (not followed)")))
            elif kind != "blob" or not (self.is_file or walk.wanted(base)):
                continue
            elif mode == SYMLINK_MODE:
                plan.append((rel, Skipped(rel, "symlink (not followed in a git tree)")))
            elif skipped := walk.too_large(rel, int(size)):
                plan.append((rel, skipped))
            else:
                plan.append((rel, obj))
        plan.sort(key=lambda p: walk.order(p[0]))
        to_read = [what for _, what in plan if isinstance(what, str)]
        blobs = self._cat_file(to_read)
        try:
            for rel, what in plan:
                if not isinstance(what, str):
                    yield what
                    continue
                data = next(blobs)
                item = walk.decode(rel, data) if data is not None else \
                    Skipped(rel, "unreadable: object missing from the repository")
                if isinstance(item, SourceFile):
                    item.with_tables(tables.get(rel.rpartition("/")[0], []))
                yield item
        finally:
            blobs.close()  # stops git at once when the caller stops early

    def _cat_file(self, objects: list[str]) -> Generator[bytes | None, None, None]:
        return cat_blobs(self.cwd, objects)


def cat_blobs(cwd: Path, objects: list[str]) -> Generator[bytes | None, None, None]:
    """Contents of ``objects`` in order (None for one the repository lacks), streamed
    through one ``git cat-file --batch`` run in ``cwd``."""
    if not objects:
        return
    proc = subprocess.Popen(["git", "-C", str(cwd), "cat-file", "--batch"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    stdin, stdout = proc.stdin, proc.stdout
    assert stdin is not None and stdout is not None  # both are pipes

    def feed() -> None:  # a thread, so a full stdout pipe never blocks our writes
        try:
            for obj in objects:
                stdin.write(obj.encode() + b"\n")
            stdin.close()
        except OSError:  # git exited (the reader reports it)
            pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    try:
        for obj in objects:
            header = stdout.readline().split()
            if len(header) == 2 and header[1] == b"missing":
                yield None
                continue
            if len(header) != 3:
                raise OSError(f"git cat-file --batch stopped at {obj} in {cwd}")
            data = stdout.read(int(header[2]))
            stdout.read(1)  # the newline after each object
            yield data
    finally:
        stdout.close()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        writer.join(timeout=5)


# --- chosen blobs of a repository ---------------------------------------------------------

class GitBlobs(Source):
    """Given blobs of a git repository, each under the path it had: the files one commit
    changed, before and after (history mining, skel/miner/history.py). Rel paths may repeat
    (a file before and after a change); each item's digest tells them apart. The walk's
    size limit and decoding rules apply unchanged."""

    def __init__(self, repo_path: str | os.PathLike, blobs: list[tuple[str, str]], name: str = "",
                 version: str = "") -> None:
        self.cwd = Path(repo_path)
        self.blobs = blobs
        self.name = name or self.cwd.name
        self.version = version
        self.root = str(self.cwd)

    def items(self) -> Iterator[Item]:
        data = cat_blobs(self.cwd, [sha for _, sha in self.blobs])
        try:
            for rel, _ in self.blobs:
                blob = next(data)
                if blob is None:
                    yield Skipped(rel, "unreadable: object missing from the repository")
                elif skipped := walk.too_large(rel, len(blob)):
                    yield skipped
                else:
                    yield walk.decode(rel, blob)
        finally:
            data.close()
