"""One writer at a time per local store: a lock file holding the writer's pid.

Chroma's local (PersistentClient) store is not safe for two writing processes: each keeps
its own in-memory view of the vector index and persists it over the other's. ``skel
mine`` therefore takes an exclusive ``flock`` on ``<store>/skel-writer.lock`` and writes
its pid, host, start time and command line into it for the message the next writer gets.

A stale lock cannot block anyone: the kernel releases a ``flock`` when its holder exits,
however it exits (SIGKILL, power loss of a local disk), so a lock file left behind by a
dead writer is just a file, and the next writer takes it over. A Chroma server serialises
writes itself and needs no lock here.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time
from pathlib import Path

from skel.errors import StoreError

LOCK_NAME = "skel-writer.lock"


class WriterLock:
    def __init__(self, store_dir: str | Path, *, wait: float = 0.0) -> None:
        self.path = Path(store_dir) / LOCK_NAME
        self.wait = wait
        self._fd: int | None = None

    def __enter__(self) -> "WriterLock":
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot write to the store at {self.path.parent}: {exc.strerror}") from exc
        deadline = time.monotonic() + self.wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = _holder(fd)
                    os.close(fd)
                    raise StoreError(f"the store at {self.path.parent} is being written by {holder}; "
                                     "wait for it to finish (or use another --store)") from None
                time.sleep(0.2)
            except OSError as exc:  # a filesystem without flock: say so rather than risk it
                os.close(fd)
                raise StoreError(f"cannot lock the store at {self.path.parent} for writing: {exc.strerror}; "
                                 "put it on a local disk or use a Chroma server (--store http://...)") from exc
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": time.time(),
                                  "command": " ".join(sys.argv[:6])}).encode(), 0)
        self._fd = fd
        return self

    def __exit__(self, *exc) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)  # released: no holder to name
            os.close(self._fd)  # closing releases the flock
            self._fd = None


def _holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        info = {}
    if not info.get("pid"):
        return "another skel process"
    since = time.strftime("%H:%M:%S", time.localtime(info.get("since", 0)))
    return (f"another skel process (pid {info['pid']} on {info.get('host', '?')}, since {since}: "
            f"{info.get('command', '')})")
