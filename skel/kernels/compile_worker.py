"""A warm compile worker: one long-lived child process that compiles kernels on request.

Compiling a kernel's machine code offline (:mod:`skel.kernels.machine`) means running its
file, and a real file imports torch and its package first: 2 s and more before Triton
starts, paid again by every one-shot child. The worker pays it once per process that asks
(an MCP server, a ``skel suggest --compile`` with candidates to compile too):

- it starts lazily, on the first request (or on :func:`prestart`, which also tells it a file
  to get ready for), with the environment and working directory a one-shot child would
  have; a request under another environment, directory or compute capability starts a new
  worker in place of the old;
- before each compile it imports, in itself, what the file imports (``preload``), so later
  files of the same package find it loaded; then it **forks**, and the fork runs the file
  and compiles (``handle``) in a fresh private Triton cache, so nothing one kernel's file
  does reaches the next; the worker itself never compiles;
- each request has a time limit: a fork past it is killed with its process group (ptxas
  included); a worker that does not answer in time is killed and the caller told it timed
  out; every fork is reaped (``waitpid``) and dies with the worker (``PR_SET_PDEATHSIG``);
  the worker exits on end of input (SIGTERM if busy: :meth:`_Worker.close`), after
  ``idle_s`` without a request, when a file it imported has changed since (its modules
  would be stale; the caller starts a new one), or when something it imported started a
  thread (forking is no longer safe; the one-shot child answers). Its folder is the
  caller's, removed by the caller, so a killed worker leaves no files either;
- :func:`request` answers ``None`` whenever the worker cannot answer (it would not start,
  died, answered garbage, or the fork died without an answer): the caller then runs its
  one-shot child, whose answer and reasons are the reference. After
  :data:`MAX_DEATHS` deaths in one process the worker is not started again there.

Set ``SKEL_COMPILE_WORKER=0`` to compile every kernel in a one-shot child instead; an idle
worker leaves after ``SKEL_COMPILE_WORKER_IDLE_S`` seconds (:data:`IDLE_S`).

This module is generic: what a request does is :mod:`skel.kernels.machine`'s (its
``--worker`` entry point calls :func:`serve`).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

_MARK = b"SKEL-WORKER "
#: a worker idle this long exits (seconds; ``$SKEL_COMPILE_WORKER_IDLE_S``)
IDLE_S = 900.0
#: after this many worker deaths in one process, requests go to the one-shot child
MAX_DEATHS = 3
#: a worker slower than the request's own limit by this much is killed
GRACE_S = 10.0
#: environment variables that do not reach a compile (skel's own settings, pytest's
#: per-test name): a change in them keeps the worker
_ENV_IGNORED = ("SKEL_", "PYTEST_CURRENT_TEST")


def enabled() -> bool:
    return os.environ.get("SKEL_COMPILE_WORKER", "1").strip().lower() not in ("0", "false", "no", "off")


def idle_seconds() -> float:
    try:
        return max(1.0, float(os.environ.get("SKEL_COMPILE_WORKER_IDLE_S", IDLE_S)))
    except ValueError:
        return IDLE_S


def env_key(env: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """What of ``env`` a worker is started with and must still match to be reused."""
    return tuple(sorted((k, v) for k, v in env.items() if not k.startswith(_ENV_IGNORED)))


# ---- the caller's side --------------------------------------------------------------------------

class _Worker:
    """One worker process and its pipes (stdin: requests; stdout: answers; stderr: none)."""

    def __init__(self, key: tuple[Any, ...], argv: list[str], env: dict[str, str]) -> None:
        self.key = key
        self.owner = os.getpid()
        self.idle_s = idle_seconds()
        # its folder (forks' work folders inside): made and removed here, so even a worker
        # killed outright leaves nothing behind
        self.folder = tempfile.mkdtemp(prefix="skel-worker-")
        try:
            self.proc = subprocess.Popen(argv + [str(self.idle_s), self.folder], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                                         start_new_session=True, close_fds=True)
        except OSError:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise
        self.last = time.monotonic()
        self.served = 0  # answers received
        self.preloading = False  # a preload was sent and no answer has come since
        self._buf = b""
        self._next_id = 0

    def alive(self) -> bool:
        # a worker about to leave on its idle limit is treated as gone (no request races its exit)
        margin = min(5.0, self.idle_s / 4)
        return self.proc.poll() is None and time.monotonic() - self.last < self.idle_s - margin

    def send(self, msg: dict[str, Any]) -> int:
        self._next_id += 1
        msg = {**msg, "id": self._next_id}
        stdin = self.proc.stdin
        assert stdin is not None
        stdin.write(json.dumps(msg).encode() + b"\n")
        stdin.flush()
        self.last = time.monotonic()
        return self._next_id

    def receive(self, ident: int, deadline: float) -> dict[str, Any] | None:
        """The answer to request ``ident``; None at end of output. Raises TimeoutError."""
        stdout = self.proc.stdout
        assert stdout is not None
        fd = stdout.fileno()
        while True:
            while b"\n" in self._buf:
                line, self._buf = self._buf.split(b"\n", 1)
                if line.startswith(_MARK):
                    data = json.loads(line[len(_MARK):])
                    if isinstance(data, dict) and data.get("id") == ident:
                        self.last = time.monotonic()
                        self.served += 1
                        self.preloading = False
                        return data
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    return None
                self._buf += chunk

    def close(self) -> None:
        """End of input, then reap it: an idle worker leaves at once; a busy one (getting a
        file ready that nobody will ask about now, say) is stopped with SIGTERM, which it
        answers by killing its fork and removing its files, and killed if it lingers."""
        with contextlib.suppress(OSError, ValueError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=0.0 if self.preloading else 0.2)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                self.kill()
        with contextlib.suppress(OSError, ValueError):
            if self.proc.stdout is not None:
                self.proc.stdout.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # its session's group (a fork has its own, and dies with it)
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        self.proc.wait()
        with contextlib.suppress(OSError, ValueError):
            for f in (self.proc.stdin, self.proc.stdout):
                if f is not None:
                    f.close()
        shutil.rmtree(self.folder, ignore_errors=True)


_LOCK = threading.Lock()
_WORKERS: list[_Worker] = []  # at most one: the current key's
_STATE = {"deaths": 0, "registered": False}


def _current(key: tuple[Any, ...], argv: list[str], env: dict[str, str]) -> _Worker | None:
    """The live worker for ``key``, started if there is none (the caller holds ``_LOCK``)."""
    for w in list(_WORKERS):
        if w.owner != os.getpid():  # a fork of the caller: the worker's pipes are its parent's
            _WORKERS.remove(w)
        elif w.key != key or not w.alive():
            _WORKERS.remove(w)
            w.close()
        else:
            return w
    if _STATE["deaths"] >= MAX_DEATHS or not enabled():
        return None
    if not _STATE["registered"]:
        atexit.register(shutdown)
        _STATE["registered"] = True
    try:
        w = _Worker(key, argv, env)
    except OSError:
        _STATE["deaths"] += 1
        return None
    _WORKERS.append(w)
    return w


def _dead(w: _Worker) -> None:
    with contextlib.suppress(ValueError):
        _WORKERS.remove(w)
    _STATE["deaths"] += 1
    w.kill()


def prestart(key: tuple[Any, ...], argv: list[str], env: dict[str, str], msg: dict[str, Any] | None = None) -> bool:
    """Start the worker for ``key`` now (if none runs) and send it ``msg`` (a preload: no
    answer) without waiting, so it gets ready while the caller works. False if not started."""
    with _LOCK:
        w = _current(key, argv, env)
        if w is None:
            return False
        if msg is not None:
            try:
                w.send(msg)
                w.preloading = True
            except OSError:
                _dead(w)
                return False
        return True


def request(key: tuple[Any, ...], argv: list[str], env: dict[str, str], msg: dict[str, Any],
            timeout: float, what: str = "the request") -> dict[str, Any] | None:
    """The worker's answer to ``msg`` (its ``result``: what ``handle`` returned in the fork,
    or ``{"crash": "WHAT took longer than ..."}`` when it ran past ``timeout`` seconds);
    None when no worker could answer, and the caller should run its one-shot path. A
    worker that finds its modules stale exits, and the request goes once to a new one."""
    with _LOCK:
        for _ in range(2):
            w = _current(key, argv, env)
            if w is None:
                return None
            try:
                ident = w.send({**msg, "timeout": timeout})
                data = w.receive(ident, time.monotonic() + timeout + GRACE_S)
            except TimeoutError:
                _dead(w)  # it did not answer in time: gone, and so is any fork of it
                return {"crash": f"{what} took longer than {timeout:.0f} s"}
            except (OSError, ValueError):  # a broken pipe, or an answer that is not JSON
                _dead(w)
                return None
            if data is None:  # it exited before answering
                _dead(w)
                return None
            if "unforkable" in data:  # it is leaving, and a new one would load the same threads
                _dead(w)
                return None
            if "stale" in data:  # it is leaving; the next round starts a new one
                with contextlib.suppress(ValueError):
                    _WORKERS.remove(w)
                w.close()
                continue
            result = data.get("result")
            if not isinstance(result, dict) or "died" in result:
                return None  # the fork died without an answer: the one-shot child says why
            return result
        return None


def worker_pid() -> int | None:
    """The current worker's process id, if one runs (tests and benchmarks read it)."""
    with _LOCK:
        return next((w.proc.pid for w in _WORKERS if w.owner == os.getpid() and w.proc.poll() is None), None)


def shutdown() -> None:
    """Stop the worker (``_Worker.close``) and reap it. Registered with atexit when the
    first worker starts; safe to call any time."""
    with _LOCK:
        for w in list(_WORKERS):
            _WORKERS.remove(w)
            if w.owner == os.getpid():
                w.close()


# ---- the worker's side --------------------------------------------------------------------------

class _Modules:
    """The files of the modules loaded in the worker, with their modification times."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def record(self) -> None:
        for m in list(sys.modules.values()):
            try:
                f = getattr(m, "__file__", None)
            except Exception:  # not every entry of sys.modules is a plain module
                continue
            if isinstance(f, str) and f not in self.seen:
                try:
                    self.seen[f] = os.stat(f).st_mtime_ns
                except OSError:
                    self.seen[f] = -1

    def changed(self) -> str | None:
        for f, t in self.seen.items():
            try:
                now = os.stat(f).st_mtime_ns
            except OSError:
                now = -1
            if now != t:
                return f
        return None


def _read_line(fd: int, buf: bytearray, idle_s: float) -> bytes | None:
    """The next line of ``fd``; None at end of input or after ``idle_s`` without one."""
    while b"\n" not in buf:
        ready, _, _ = select.select([fd], [], [], idle_s)
        if not ready:
            return None
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return None
        buf += chunk
    i = buf.index(b"\n")
    line = bytes(buf[:i])
    del buf[:i + 1]
    return line


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _die_with(parent: int) -> None:
    """In a fork: be killed when ``parent`` dies (Linux), so a worker killed mid-compile
    leaves no fork compiling for nobody."""
    if sys.platform.startswith("linux"):
        import ctypes  # stdlib, 2 ms; only a worker's fork needs it

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # it died before that took hold
        os._exit(1)


def _in_fork(handle: Callable[[dict[str, Any], Path], dict[str, Any]], spec: dict[str, Any], timeout: float,
             pipes: tuple[int, int], limit_s: float, folder: Path) -> dict[str, Any]:
    """``handle(spec, workdir)`` in a fork of this process: its answer, ``{"crash": ...}``
    past ``timeout`` seconds (the request's limit ``limit_s`` less what getting ready took),
    or ``{"died": ...}`` when it ended without one. Always reaped."""
    workdir = tempfile.mkdtemp(prefix="skel-machine-", dir=folder)
    _RUNNING["workdir"] = workdir
    r, w = os.pipe()
    worker = os.getpid()
    pid = os.fork()
    if pid == 0:  # the fork: never returns
        status = 0
        try:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            _die_with(worker)
            os.close(r)
            os.setpgid(0, 0)  # its own group: a timeout kills what it started too
            for fd in pipes:  # the worker's requests and answers are not the kernel file's
                os.close(fd)
            try:
                result = handle(spec, Path(workdir))
            except Exception as e:  # a bug here must still answer with a reason
                result = {"error": f"internal error while compiling: {type(e).__name__}: {e}"[:400]}
            _write_all(w, json.dumps(result).encode())
        except BaseException:
            status = 1
        finally:
            os._exit(status)
    _RUNNING.update(fork=pid, workdir=workdir)
    os.close(w)
    with contextlib.suppress(OSError):
        os.setpgid(pid, pid)  # also here: whichever runs first
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    timed_out = False
    answered = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([r], [], [], left)
            if ready:
                chunk = os.read(r, 1 << 16)
                if not chunk:
                    answered = True
                    break
                chunks.append(chunk)
    finally:
        os.close(r)
        if not answered:  # past its time, or an error here
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        shutil.rmtree(workdir, ignore_errors=True)
        _RUNNING.update(fork=None, workdir=None)
    if timed_out:
        return {"crash": f"compiling {spec.get('kernel', 'the kernel')} took longer than {limit_s:.0f} s"}
    try:
        data = json.loads(b"".join(chunks))
    except ValueError:
        data = None
    if not isinstance(data, dict):
        how = (f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
               else f"exit status {os.WEXITSTATUS(status)}")
        return {"died": f"the compiling fork ended without an answer ({how})"}
    return data


#: what a stopping worker cleans up: its fork and the folders (set while they exist)
_RUNNING: dict[str, Any] = {"fork": None, "workdir": None, "folder": None}


def _stop(signum: int, frame: Any) -> None:
    """SIGTERM in the worker: kill and reap its fork, remove its folders, leave now (an
    exception would not do: what it is importing may catch anything)."""
    pid = _RUNNING["fork"]
    if pid:
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.waitpid(pid, 0)
    for key in ("workdir", "folder"):
        if _RUNNING[key]:
            shutil.rmtree(_RUNNING[key], ignore_errors=True)
    os._exit(0)


def serve(handle: Callable[[dict[str, Any], Path], dict[str, Any]], preload: Callable[[str], None],
          folder: Path, idle_s: float = IDLE_S, setup: Callable[[Path], None] | None = None) -> None:
    """The worker's loop (never returns): read a request a line from stdin, answer on
    stdout. ``{"op": "preload", "source": TEXT}``: ``preload(TEXT)`` here, no answer;
    ``{"op": "compile", "id": N, "spec": SPEC, "timeout": S}``: ``preload(SPEC["source"])``
    here, then ``handle(SPEC, workdir)`` in a fork, answered ``{"id": N, "result": ...}``.
    What anything else here prints goes nowhere: stdout is the answers' only. ``folder``
    (the caller's, removed by it too) holds the forks' work folders and ``setup``'s
    private one, made once at the start."""
    in_fd, out_fd = os.dup(0), os.dup(1)  # the requests' and answers' own: what runs here sees /dev/null
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    folder.mkdir(parents=True, exist_ok=True)
    private = tempfile.mkdtemp(prefix="own-", dir=folder)
    _RUNNING["folder"] = folder
    signal.signal(signal.SIGTERM, _stop)
    if setup is not None:
        setup(Path(private))
    modules = _Modules()
    modules.record()
    prepared: set[int] = set()
    buf = bytearray()
    status = 0
    try:
        while True:
            line = _read_line(in_fd, buf, idle_s)
            if line is None:
                break
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if not isinstance(msg, dict):
                continue
            stale = modules.changed()
            if stale is not None:
                if msg.get("op") == "compile":
                    _write_all(out_fd, _MARK + json.dumps({"id": msg.get("id"), "stale": stale}).encode() + b"\n")
                break
            spec = msg.get("spec") if msg.get("op") == "compile" else None
            source = spec.get("source") if isinstance(spec, dict) else msg.get("source")
            t0 = time.perf_counter()
            if isinstance(source, str) and hash(source) not in prepared:
                prepared.add(hash(source))
                with contextlib.suppress(BaseException):
                    preload(source)
                modules.record()
            if not isinstance(spec, dict):
                continue
            preload_s = time.perf_counter() - t0
            if threading.active_count() > 1:  # something it imported started a thread: forking is unsafe now
                _write_all(out_fd, _MARK + json.dumps({"id": msg.get("id"), "unforkable": [
                    t.name for t in threading.enumerate()]}).encode() + b"\n")
                break
            timeout = float(msg.get("timeout") or 120.0)
            result = _in_fork(handle, spec, max(1.0, timeout - preload_s), (in_fd, out_fd), timeout, folder)
            if "facts" in result and isinstance(result["facts"], dict):
                result["facts"].setdefault("timings", {})["preload"] = round(preload_s, 4)
            _write_all(out_fd, _MARK + json.dumps({"id": msg.get("id"), "result": result}).encode() + b"\n")
    except BaseException:
        status = 1
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        shutil.rmtree(folder, ignore_errors=True)
        os._exit(status)
