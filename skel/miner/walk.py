"""Finding the files worth mining, and refusing bad ones without stopping.

Every problem becomes a ``Skipped`` entry with a short reason; nothing here raises for a
single bad file. Symlinked directories are followed once: a directory seen again through
another link is a loop and is skipped.

The filtering rules live here, once, for every source (skel/miner/sources.py): which
directories are never entered (``skip_dir``), which files are read (``wanted``), the size
limit (``too_large``) and what makes content unusable (``decode``: NUL bytes, not UTF-8).
``discover`` applies them to a folder on disk; a git tree applies the same functions to
the entries of ``git ls-tree``.
"""

from __future__ import annotations

import errno
import fnmatch
import hashlib
import os
import stat
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from skel.kernels import extractor_version  # derived from the extractor's sources
# which folders are pruned, what a test file is and what a file imports: one rule for the
# miner and for `skel suggest`, which reads the sizes tests call a kernel at (skel.kernels.callers)
from skel.kernels.callers import SKIP_DIRS, TEST_FILE, imports_of, is_test  # noqa: F401 (re-exported)
from skel.kernels.configs import CONFIG_TABLE_DIR, config_tables_beside
from skel.kernels.extract import SUFFIXES
from skel.kernels.guard import MAX_BYTES  # larger files are generated tables, not kernels


@dataclass
class SourceFile:
    rel: str  # path relative to the mined root, with forward slashes
    text: str
    digest: str
    is_test: bool
    # JSON tables of tuned launch configs in a `configs/` folder beside the file: they
    # change what is suggested for its kernels, so they are part of its digest
    config_tables: list[str] = field(default_factory=list)

    # the backend every importer of this file imports it for (skel/kernels/importers.py),
    # and why: its kernels are judged on that backend; part of the digest, like the tables
    backend: tuple[str, str] = ("", "")

    def with_backend(self, backend: str, why: str) -> "SourceFile":
        if backend:
            self.backend = (backend, why)
            self.digest = hashlib.sha1(f"{self.digest}\0{backend}\0{why}".encode()).hexdigest()
        return self

    def with_tables(self, tables: list[str]) -> "SourceFile":
        if tables:
            self.config_tables = list(tables)
            self.digest = hashlib.sha1(f"{self.digest}\0{','.join(tables)}".encode()).hexdigest()
        return self


@dataclass
class Skipped:
    rel: str
    reason: str


def digest(data: bytes) -> str:
    return hashlib.sha1(extractor_version().encode() + b"\0" + data).hexdigest()


#: ``--exclude`` globs for the walks run inside ``excluding`` (and the prefix the source puts
#: before each rel path): ``discover`` prunes a folder they match instead of descending
_EXCLUDE: ContextVar[tuple[tuple[str, ...], str]] = ContextVar("skel_walk_exclude", default=((), ""))


@contextmanager
def excluding(patterns: Iterable[str], prefix: str = "") -> Iterator[None]:
    """Within this block, every ``discover`` leaves out the folders a glob of ``patterns``
    matches (see ``excluded_dir``) without listing them: one ``Skipped`` entry stands for
    the folder. ``prefix`` is what the source puts before each rel path (a package's
    ``name/``), since the globs match the paths as the miner reports them. A context rather
    than an argument, so every source built on ``discover`` prunes without knowing of it."""
    token = _EXCLUDE.set((tuple(patterns), prefix))
    try:
        yield
    finally:
        _EXCLUDE.reset(token)


def discover(root: Path) -> Iterator[SourceFile | Skipped]:
    """Yield every readable .py file under ``root`` (or ``root`` itself if a file).

    Linear in the size of the tree: each folder is listed once and stat'ed once (its
    device and inode tell a folder seen again through a symlink), and rel paths are built
    as the walk goes down, never recomputed from the root. Only a symlink costs a
    resolution of its full path (is it inside the mined root?)."""
    root = Path(root)
    if root.is_file():
        yield _read(root, root.name)
        return
    patterns, prefix = _EXCLUDE.get()
    seen: set[tuple[int, int]] = set()
    top = os.path.realpath(root)
    stack: list[tuple[str, str]] = [(str(root), "")]  # (path, rel: "" for the root)
    while stack:
        d, rel = stack.pop()
        try:
            st = os.stat(d)
        except OSError as exc:
            yield Skipped(rel or ".", f"unreadable directory: {exc.strerror}")
            continue
        key = (st.st_dev, st.st_ino)
        if key in seen:
            yield Skipped(rel or ".", "symlink loop (directory already visited)")
            continue
        seen.add(key)
        try:
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            yield Skipped(rel or ".", f"unreadable directory: {exc.strerror}")
            continue
        subdirs = []
        beside = any(e.name == CONFIG_TABLE_DIR for e in entries)  # a configs/ folder of tuned tables
        for e in entries:
            erel = f"{rel}/{e.name}" if rel else e.name
            try:
                if e.is_symlink() and not _inside(os.path.realpath(e.path), top):
                    # following it could mine /, or someone else's tree: as in a git tree, not followed
                    yield Skipped(erel, "symlink leading outside the mined root (not followed)")
                    continue
                if e.is_dir():  # follows symlinks; loops are caught by `seen`
                    if skip_dir(e.name):
                        continue
                    if patterns and (pattern := excluded_dir(prefix + erel, patterns)):
                        yield Skipped(erel + "/", f"excluded (--exclude {pattern})")  # never listed
                        continue
                    subdirs.append((e.path, erel))
                elif wanted(e.name):
                    yield _read(Path(e.path), erel, tables=beside)
            except OSError as exc:
                reason = "symlink loop" if exc.errno == errno.ELOOP else f"unreadable: {exc.strerror}"
                yield Skipped(erel, reason)
        stack.extend(reversed(subdirs))


def _inside(real: str, top: str) -> bool:
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a character device",
          stat.S_IFBLK: "a block device"}


def _read(path: Path, rel: str, *, tables: bool = True) -> SourceFile | Skipped:
    """The file's ``SourceFile``, or why it is skipped; ``tables``: False when the walk saw
    no ``configs/`` folder beside it (no need to look again)."""
    try:
        # O_NONBLOCK: opening a FIFO (named like a source file) must not wait for a writer;
        # what is open is then checked, so a file swapped for a FIFO after a stat is caught too
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                kind = _KINDS.get(stat.S_IFMT(st.st_mode), "not a regular file")
                return Skipped(rel, f"not a regular file ({kind})")
            if skipped := too_large(rel, st.st_size):
                return skipped
            with os.fdopen(os.dup(fd), "rb") as fh:
                data = fh.read(MAX_BYTES + 1)  # a file growing while read stops at the limit
            if skipped := too_large(rel, len(data)):
                return skipped
        finally:
            os.close(fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return Skipped(rel, "symlink loop")
        if exc.errno == errno.ENOENT and path.is_symlink():
            return Skipped(rel, "broken symlink")
        return Skipped(rel, f"unreadable: {exc.strerror or exc}")
    item = decode(rel, data)
    if isinstance(item, SourceFile) and tables:
        item.with_tables(config_tables_beside(path))
    return item


# --- the rules every source applies ------------------------------------------------------

def skip_dir(name: str) -> bool:
    """True for a directory never mined: VCS data, caches, build output, virtualenvs, hidden."""
    return name in SKIP_DIRS or name.startswith(".")


def wanted(name: str) -> bool:
    """True for a file name worth reading (inside a folder; a file named on its own is read):
    Python (Triton) and C++/CUDA sources."""
    return name.lower().endswith(SUFFIXES)


def too_large(rel: str, size: int) -> Skipped | None:
    """The skip for a file over MAX_BYTES, before its content is read; None when it fits."""
    if size > MAX_BYTES:
        return Skipped(rel, f"too large ({size // 1024} KiB > {MAX_BYTES // 1024} KiB)")
    return None


def excluded(rel: str, patterns: Iterable[str]) -> str | None:
    """The first glob in ``patterns`` matching ``rel`` (``skel mine --exclude``), or None. A
    pattern matches the whole relative path (``*`` crosses ``/``), any folder above the
    file (``vendor``, ``third_party/*``) or the file's name (``*_gen.py``)."""
    parts = rel.split("/")
    names = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)] + [parts[-1]]
    for pattern in patterns:
        pattern = pattern.strip("/")
        if any(fnmatch.fnmatchcase(n, pattern) for n in names):
            return pattern
    return None


def excluded_dir(rel: str, patterns: Iterable[str]) -> str | None:
    """The first glob in ``patterns`` that excludes every file under the folder ``rel``, or
    None: one matching the folder's whole relative path. (Its parents were checked when the
    walk entered them; ``excluded`` of a file under it then always matches, and a folder no
    glob matches here may still hold files a glob matches by name or whole path.)"""
    for pattern in patterns:
        if fnmatch.fnmatchcase(rel, pattern.strip("/")):
            return pattern.strip("/")
    return None


def order(rel: str) -> tuple:
    """Sort key giving ``discover``'s order for a list of paths: in each directory its files
    by name, then its subdirectories by name, depth first."""
    parts = rel.split("/")
    return tuple((1, p) for p in parts[:-1]) + ((0, parts[-1]),)


def decode(rel: str, data: bytes) -> SourceFile | Skipped:
    """A file's bytes as a ``SourceFile``, or why they cannot be mined."""
    if b"\0" in data:
        return Skipped(rel, "binary (NUL bytes)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Skipped(rel, f"not UTF-8 (byte {exc.start})")
    return SourceFile(rel=rel, text=text, digest=digest(data), is_test=is_test(rel))


def module_name(rel: str, package_prefix: str = "") -> str:
    parts = rel[:-3].split("/") if rel.endswith(".py") else rel.split("/")
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    if parts and parts[0] in ("src", "python", "lib"):  # common source roots in repositories
        parts = parts[1:]
    dotted = ".".join(parts)
    return f"{package_prefix}.{dotted}" if package_prefix and dotted else (package_prefix or dotted)
