"""compute-sanitizer's memcheck on a candidate that claims a validated speed-up (issue #36, item 3).

A verification whose verdict would count towards ``validated`` (faster by at least
:data:`skel.skeletons.status.VALIDATED_MIN`, on a kernel other than a skeleton's own example)
launches the candidate once more, on its first GPU shape, in a child process under
``compute-sanitizer --tool memcheck``. Guard bands (``guards.py``) catch a read or write past
an input's end that changes a result; memcheck catches what changes none: a read past the end
of an output or a scratch buffer, a write into memory no tensor owns, a misaligned access.

- :func:`find_binary`: ``compute-sanitizer`` on PATH, in ``$CUDA_HOME/bin``, ``$CUDA_PATH/bin``,
  ``/usr/local/cuda/bin``, or from pip's ``nvidia-cuda-sanitizer-api`` wheel; else None and why.
- :func:`command`: the command line; the child is ``python -m skel.verifier.sanitize_child``
  (:class:`Target` says what it launches), run with ``PYTORCH_NO_CUDA_MEMORY_CACHING=1`` so
  every tensor is its own allocation (the caching allocator's blocks would hide an access
  past a tensor's end from memcheck).
- :func:`parse`: the tool's output and exit status as a :class:`MemcheckResult`: ``clean``,
  ``errors`` (with the count and the first error in one line), ``failed`` (the child did not
  get to launch; why) or ``not-available`` (no binary, no GPU; why).

Nothing here imports torch or Triton: the child does.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

BINARY = "compute-sanitizer"
EXIT_CODE = 86  # --error-exitcode: memcheck found an error (no Python or CUDA failure exits with it)
PRINT_LIMIT = 20
TIMEOUT_S = 300
CHILD = "skel.verifier.sanitize_child"
LAUNCHED = "SKEL-SANITIZE-LAUNCHED"  # the child's line once its launch returned: what it launched follows

_PREFIX = re.compile(r"^=+ ?")
_SUMMARY = re.compile(r"ERROR SUMMARY:\s*(\d+)\s+errors?")
_TOOL_LINES = ("COMPUTE-SANITIZER", "ERROR SUMMARY", "Target application returned", "LEAK SUMMARY",
               "Error: ", "Warning: ", "Internal Sanitizer Error")


@dataclass
class MemcheckResult:
    status: str  # "clean" | "errors" | "failed" | "not-available"
    errors: int = 0
    first: str = ""  # the first error, one line ("Invalid __global__ read of size 4 bytes at k+0x1b0 in f.py:12")
    why: str = ""  # failed / not-available: one line
    where: str = ""  # what was launched ("shape M=4096 float16", "get_inputs()")
    command: list[str] = field(default_factory=list)

    @property
    def ran(self) -> bool:
        return self.status in ("clean", "errors")

    def line(self) -> str:
        """One line for a report's notes."""
        on = f" on {self.where}" if self.where else ""
        if self.status == "clean":
            return f"memcheck: clean (0 errors){on}"
        if self.status == "errors":
            return f"memcheck: {self.errors or 'some'} error(s){on}; first: {self.first}"
        if self.status == "not-available":
            return f"memcheck: not run ({self.why})"
        return f"memcheck: could not run{on} ({self.why})"


# ---- finding the tool ---------------------------------------------------------------------

SEARCH_DIRS: tuple[str, ...] = ("/usr/local/cuda/bin",)  # after PATH and $CUDA_HOME/bin, $CUDA_PATH/bin


def _wheel_dirs() -> list[Path]:
    """Where pip's nvidia-cuda-sanitizer-api wheel puts the tool, for each entry of sys.path."""
    return [Path(entry or ".") / "nvidia" / "cuda_sanitizer_api" / "compute-sanitizer" for entry in sys.path]


def _candidates(env: Mapping[str, str]) -> list[Path]:
    dirs = [Path(env[var]) / "bin" for var in ("CUDA_HOME", "CUDA_PATH") if env.get(var)]
    dirs += [Path(d) for d in SEARCH_DIRS]
    return [d / BINARY for d in [*dirs, *_wheel_dirs()]]


def find_binary(env: Mapping[str, str] | None = None) -> tuple[str | None, str]:
    """(path to compute-sanitizer, "") or (None, why not): PATH first, then the CUDA install
    directories and pip's wheel."""
    env = os.environ if env is None else env
    found = shutil.which(BINARY, path=env.get("PATH", ""))
    if found:
        return found, ""
    for p in _candidates(env):
        if p.is_file() and os.access(p, os.X_OK):
            return str(p), ""
    return None, (f"{BINARY} not found on PATH, in $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin or "
                  "pip's nvidia-cuda-sanitizer-api")


# ---- what the child launches ----------------------------------------------------------------

@dataclass
class Target:
    """What :mod:`skel.verifier.sanitize_child` launches once: the candidate of ``harness``.

    ``kernelbench``: ``harness`` is the KernelBench problem (Model, get_inputs), the
    candidate's ``ModelNew`` is called on ``get_inputs()``. Otherwise ``harness`` is a skel
    harness file; ``launcher`` names the candidate's launcher (None: the harness's
    ``launcher_for(candidate module)``); ``shape``/``dtype`` default to its first GPU shape
    and first dtype."""

    harness: str
    candidate: str
    launcher: str | None = None
    shape: str | None = None
    dtype: str | None = None
    seed: int = 0
    kernelbench: bool = False

    def argv(self) -> list[str]:
        args = [str(self.harness), str(self.candidate)]
        if self.kernelbench:
            args.append("--kernelbench")
        for flag, v in (("--launcher", self.launcher), ("--shape", self.shape), ("--dtype", self.dtype)):
            if v:
                args += [flag, v]
        return [*args, "--seed", str(self.seed)]

    def label(self) -> str:
        if self.kernelbench:
            return "get_inputs()"
        return " ".join(x for x in (self.shape or "the first GPU shape", self.dtype or "") if x)


def command(binary: str, target: Target, python: str | None = None) -> list[str]:
    """The full command line: memcheck, errors exit with :data:`EXIT_CODE`, at most
    :data:`PRINT_LIMIT` errors printed, around one launch of the candidate."""
    return [binary, "--tool", "memcheck", "--error-exitcode", str(EXIT_CODE), "--print-limit", str(PRINT_LIMIT),
            python or sys.executable, "-m", CHILD, *target.argv()]


def child_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The child's environment: no interpreter, no caching allocator, this package importable
    (and the working directory, where a candidate imports its harness from)."""
    out = {k: v for k, v in (os.environ if env is None else env).items() if k != "TRITON_INTERPRET"}
    out["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"
    root = str(Path(__file__).resolve().parents[2])
    out["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.getcwd(), out.get("PYTHONPATH", "")) if p)
    return out


# ---- reading the result ---------------------------------------------------------------------

def _content(line: str) -> str | None:
    """A sanitizer line's text without its ``=========`` prefix; None for other lines."""
    if not line.startswith("="):
        return None
    return _PREFIX.sub("", line, count=1).rstrip()


def first_error(output: str) -> str:
    """The first error memcheck reported, in one line, with where it happened."""
    lines = output.splitlines()
    for i, raw in enumerate(lines):
        text = _content(raw)
        if not text or text[0].isspace() or text.startswith(_TOOL_LINES):
            continue
        at = ""
        for nxt in lines[i + 1:i + 6]:
            t = _content(nxt)
            if t is None or (t and not t[0].isspace()):
                break
            m = re.match(r"\s+at (.+)", t)
            if m:
                at = re.sub(r" in (\S*/)?([^/\s]+)$", r" in \2", m.group(1).strip())  # the file's name, not its path
                break
        return f"{text} at {at}" if at else text
    return ""


def parse(output: str, returncode: int, where: str = "") -> MemcheckResult:
    """compute-sanitizer's output (stdout and stderr together) and exit status, read."""
    said = re.search(rf"^{LAUNCHED} (.+)$", output, re.M)
    where = said.group(1).strip() if said else where
    counts = [int(m.group(1)) for m in _SUMMARY.finditer(output)]
    n = counts[-1] if counts else 0
    first = first_error(output)
    if n > 0 or returncode == EXIT_CODE:
        return MemcheckResult("errors", n, first or "(memcheck gave no error text)", where=where)
    if returncode == 0 and counts:
        return MemcheckResult("clean", 0, where=where)
    tail = [ln.strip() for ln in output.splitlines() if ln.strip() and _content(ln) is None]
    if returncode == 0:
        return MemcheckResult("failed", why="no ERROR SUMMARY in compute-sanitizer's output", where=where)
    why = tail[-1] if tail else (first or f"exit status {returncode}")
    return MemcheckResult("failed", why=f"exit status {returncode}: {why[:300]}", where=where)


# ---- running it -----------------------------------------------------------------------------

def memcheck(target: Target, *, timeout_s: float = TIMEOUT_S, env: Mapping[str, str] | None = None,
             python: str | None = None) -> MemcheckResult:
    """Launch ``target`` once under memcheck and read the result."""
    binary, why = find_binary(env)
    where = target.label()
    if binary is None:
        return MemcheckResult("not-available", why=why, where=where)
    cmd = command(binary, target, python)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=child_env(env), timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return MemcheckResult("failed", why=f"timed out after {timeout_s:.0f} s", where=where, command=cmd)
    except OSError as e:
        return MemcheckResult("not-available", why=f"{binary}: {e.strerror or e}", where=where, command=cmd)
    r = parse(proc.stdout + "\n" + proc.stderr, proc.returncode, where)
    r.command = cmd
    return r
