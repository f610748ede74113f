"""Test-only fault hooks: kill this process at its Nth store write; make one file's
extraction hang.

The reliability suite (tests/reliability, benchmarks/reliability/reliability.py) must kill a mine at
exact, reproducible points *inside* store writes, which random delays rarely hit. With
``SKEL_FAULT_KILL_AT=N`` the process sends itself SIGKILL just before its Nth write
(counting from 1); ``N:MS`` starts a timer instead that fires MS milliseconds after the
Nth write began, i.e. while chroma is still writing it. Unset (always, outside tests),
it costs one dictionary lookup per write. ``SKEL_FAULT_SIGNAL=INT`` sends SIGINT instead
(a Ctrl-C at an exact point).

``SKEL_FAULT_SLOW_FILE=NAME`` makes the extraction of a file named NAME sleep for an hour:
the per-file time limits (in a parser worker, or the in-process timer) must end it. A
naturally slow file is a moving target (each one found was made fast), so the tests of
the limit use this.

``SKEL_FAULT_SLOW_START=PATH`` makes the console script (skel/entry.py), before it imports
the command line, create PATH and sleep for an hour: a test's Ctrl-C then lands while skel
is still starting, at a known moment.
"""

from __future__ import annotations

import os
import signal
import threading
import time

_count = 0


def before_write() -> None:
    spec = os.environ.get("SKEL_FAULT_KILL_AT")
    if not spec:
        return
    global _count
    _count += 1
    at, _, ms = spec.partition(":")
    if _count != int(at):
        return
    sig = signal.SIGINT if os.environ.get("SKEL_FAULT_SIGNAL") == "INT" else signal.SIGKILL
    if not ms:
        os.kill(os.getpid(), sig)
    else:
        threading.Timer(int(ms) / 1000, os.kill, (os.getpid(), sig)).start()


def slow_extraction(rel: str) -> None:
    name = os.environ.get("SKEL_FAULT_SLOW_FILE")
    if name and rel.rsplit("/", 1)[-1] == name:
        time.sleep(3600)


def slow_start() -> None:
    marker = os.environ.get("SKEL_FAULT_SLOW_START")
    if marker:
        open(marker, "w").close()
        time.sleep(3600)
