"""The store's write generation: the mark that says whether a read snapshot
(skel/store/snapshot.py) is still the store.

Every skel write goes through ``KnowledgeBase._write`` (skel/store/knowledge.py), which
marks the generation *dirty* before the write and gives it a new token after it; the
snapshot reader trusts a snapshot only under the clean token it was written with. In a
module of its own because both sides use it: the store marks, the snapshot reads.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from pathlib import Path

FOLDER = "skel-read"
GENERATION = "generation"


def folder(location: str) -> Path:
    """Where the generation and the read snapshots live inside a store."""
    return Path(location) / FOLDER


def atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def mark_dirty(location: str) -> None:
    """Before a write: no snapshot is the store until ``mark_clean``."""
    atomic_write(folder(location) / GENERATION, b"dirty")


def mark_clean(location: str) -> None:
    """After a write that succeeded: a new token, which no existing snapshot carries."""
    atomic_write(folder(location) / GENERATION, secrets.token_hex(8).encode())


def generation(location: str) -> str | None:
    """The clean token, or None (dirty, or never written by a skel that keeps one)."""
    try:
        token = (folder(location) / GENERATION).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return token if token and token != "dirty" else None
