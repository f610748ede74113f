"""A test-only fault hook: kill this process at its Nth store write.

The reliability suite (tests/reliability, benchmarks/reliability.py) must kill a mine at
exact, reproducible points *inside* store writes, which random delays rarely hit. With
``SKEL_FAULT_KILL_AT=N`` the process sends itself SIGKILL just before its Nth write
(counting from 1); ``N:MS`` starts a timer instead that fires MS milliseconds after the
Nth write began, i.e. while chroma is still writing it. Unset (always, outside tests),
it costs one dictionary lookup per write. ``SKEL_FAULT_SIGNAL=INT`` sends SIGINT instead
(a Ctrl-C at an exact point).
"""

from __future__ import annotations

import os
import signal
import threading

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
