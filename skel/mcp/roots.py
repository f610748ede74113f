"""The directories an MCP server may read, and the checks every path a client names goes
through: inside a root (after symlinks are resolved), an existing regular file, and not
larger than the size limit. A model picks these paths, so none is trusted."""

from __future__ import annotations

import os
from pathlib import Path

from skel.errors import InputError, UsageError

MAX_BYTES = 1_000_000  # a kernel file is tens of kB; a megabyte is already an odd input


class Roots:
    """``dirs``: the roots (each must exist); relative paths are taken from the first."""

    def __init__(self, dirs: list[str | Path], max_bytes: int = MAX_BYTES) -> None:
        if not dirs:
            raise UsageError("give at least one --root DIR")
        self.dirs: list[Path] = []
        for d in dirs:
            p = Path(d).expanduser()
            if not p.is_dir():
                raise UsageError(f"--root {d}: not a directory")
            self.dirs.append(p.resolve())
        if max_bytes < 1:
            raise UsageError("--max-bytes must be at least 1")
        self.max_bytes = max_bytes

    def _inside(self, p: Path) -> bool:
        return any(p == d or p.is_relative_to(d) for d in self.dirs)

    def file(self, path: str, what: str = "file") -> Path:
        """The resolved path of a readable file under a root, or an InputError saying why not."""
        if not path or not path.strip():
            raise UsageError(f"{what}: empty path")
        given = Path(path).expanduser()
        # lexical first (.. taken literally), then after symlinks: the two errors say different things
        lexical = Path(os.path.normpath(given if given.is_absolute() else self.dirs[0] / given))
        if not self._inside(lexical):
            raise InputError(f"{path}: outside the server's roots ({self.listing()})")
        real = lexical.resolve()
        if not self._inside(real):
            raise InputError(f"{path}: a symlink leading outside the server's roots (to {real})")
        if not real.exists():
            raise InputError(f"{path}: no such file")
        if not real.is_file():
            raise InputError(f"{path}: not a regular file")
        size = real.stat().st_size
        if size > self.max_bytes:
            raise InputError(f"{path}: {size:,} bytes, over the server's limit of {self.max_bytes:,}")
        return real

    def text(self, text: str, what: str = "source") -> str:
        """Inline text given in a call, held to the same size limit as a file."""
        size = len(text.encode("utf-8"))
        if size > self.max_bytes:
            raise InputError(f"{what}: {size:,} bytes, over the server's limit of {self.max_bytes:,}")
        return text

    def listing(self) -> str:
        return ", ".join(str(d) for d in self.dirs)
