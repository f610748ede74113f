"""A re-mine of an unchanged folder or package without opening the store.

A mine reads and hashes every file and asks the store which hashes it holds; for an
unchanged package that is all it does, yet opening chromadb alone costs about a second.
So a completed mine of a folder leaves, inside the store directory, a small manifest: the
source's name, version and root, the catalog's fingerprint, the size and modification time
of every file and folder the walk visits (a folder's time changes when a file is added,
removed or renamed in it) and the report an unchanged re-mine would print. The next mine
of the same source compares stamps (``stat`` only, no reads) and, when all match, answers
with that report without importing chromadb, once the store's database passes the cheap
check of a damaged store (``check_intact``: a damaged store is refused, never "unchanged").

A file rewritten within the file clock's tick with the same size would keep its stamp, so
(as git does with its index) nothing is recorded while a visited file or folder is younger
than ``RACY_SECONDS``: such a source always takes the full path, which compares contents.
Any mine of the source removes the manifest first and writes it again only when complete,
so an interrupted or failed mine never leaves a stale one. Only folders and packages on
disk have stamps; a git revision is its own stamp and goes the full path.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections import Counter
from pathlib import Path

from skel.miner import walk
from skel.miner.report import MineReport
from skel.miner.sources import DirectorySource, Source
from skel.skeletons import registry  # called as registry.X: tests swap the catalog there
from skel.store.knowledge import check_intact, mined_manifest

RACY_SECONDS = 2.0


def _manifest(location: str, name: str) -> Path:
    return mined_manifest(location, name)


def _local(location: str) -> bool:
    return not location.startswith(("http://", "https://"))


def source_stamp(source: Source) -> str | None:
    """A digest of the source's identity and of every visited file's and folder's size
    and modification time; None when it has none (not on disk, or modified too recently
    for its stamp to be trusted)."""
    if not isinstance(source, DirectorySource):
        return None
    entries = _walk_stamps(source.path)
    if entries is None:
        return None
    newest = max((m for _, _, m in entries), default=0)
    if newest > (time.time() - RACY_SECONDS) * 1e9:
        return None
    h = hashlib.sha1(json.dumps([source.name, source.version, str(Path(source.path).resolve()), source.prefix,
                                 registry.catalog_fingerprint(), walk.MAX_BYTES]).encode())
    for rel, size, mtime in entries:
        h.update(f"{rel}\0{size}\0{mtime}\n".encode())
    return h.hexdigest()


def _walk_stamps(root: Path) -> list[tuple[str, int, int]] | None:
    """(rel, size, mtime_ns) of every folder the walk enters and every file it would read,
    in the walk's order (``walk.discover``'s rules); None on any error (the full path then
    reports it)."""
    root = Path(root)
    out: list[tuple[str, int, int]] = []
    try:
        if root.is_file():
            st = root.stat()
            return [(root.name, st.st_size, st.st_mtime_ns)]
        # a folder seen again (through a symlink) is told by its device and inode: one stat
        # per folder, where resolving each folder's full path made the walk quadratic in depth
        seen: set[tuple[int, int]] = set()
        stack = [root]
        while stack:
            d = stack.pop()
            st = os.stat(d)
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            out.append((str(d) + "/", st.st_size, st.st_mtime_ns))
            subdirs = []
            with os.scandir(d) as listing:
                entries = sorted(listing, key=lambda e: e.name)
            for e in entries:
                if e.is_dir():
                    if not walk.skip_dir(e.name):
                        subdirs.append(Path(e.path))
                elif walk.wanted(e.name):
                    fst = e.stat()
                    out.append((e.path, fst.st_size, fst.st_mtime_ns))
            stack.extend(reversed(subdirs))
    except OSError:
        return None
    return out


def unchanged_report(location: str, source: Source) -> MineReport | None:
    """The report of the last complete mine of ``source`` into the store at ``location``,
    as an unchanged re-mine gives it, when nothing it read has changed since; else None."""
    if not _local(location):
        return None
    t0 = time.perf_counter()
    try:
        saved = json.loads(_manifest(location, source.name).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(saved, dict) or saved.get("stamp") is None:
        return None
    if saved["stamp"] != source_stamp(source):
        return None
    # the stamps say the files are as mined, not that the store still holds them: a damaged
    # store is refused here as the full path refuses it (cached: a stat and a 16-byte read)
    check_intact(location)
    r = saved["report"]
    report = MineReport(source=r["source"], version=r["version"], root=r["root"], files=r["files"],
                        kernel_files=r["kernel_files"], unchanged=r["unchanged"], kernels=r["kernels"],
                        techniques=Counter(r["techniques"]),
                        skipped=[walk.Skipped(s["rel"], s["reason"]) for s in r["skipped"]])
    report.seconds = time.perf_counter() - t0
    return report


def forget(location: str, name: str) -> None:
    """Drop the manifest before a mine of ``name`` writes anything."""
    if _local(location):
        _manifest(location, name).unlink(missing_ok=True)


def record(location: str, source: Source, report: MineReport, files: int, walk_skipped: list) -> None:
    """After a complete mine: the stamps and the report an unchanged re-mine would give
    (every file unchanged, nothing parsed, only the walk's own skips)."""
    if not _local(location):
        return
    stamp = source_stamp(source)
    if stamp is None:
        return
    r = report.to_dict()
    r.update(parsed=0, cached=0, removed=0, kernels_written=0, unchanged=files,
             skipped=[s.__dict__ for s in walk_skipped], seconds=0.0, parse_seconds=0.0)
    path = _manifest(location, source.name)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"stamp": stamp, "report": r}))
        tmp.replace(path)
    except OSError:
        pass  # a short cut only: the next mine takes the full path
