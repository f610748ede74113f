"""`verify` for MCP clients: `skel verify` in a child process, under a time limit.

A candidate is code a model wrote; it runs in a child (`python -m skel.cli verify --json`)
so that a crash, a hang or a cheat cannot take the server down with it, and the child is
killed when the limit passes. While it runs, the caller hears progress every second.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, Awaitable, Callable

import anyio

from skel.errors import VERDICT_EXIT, SkelError, UsageError, VerifyError
from skel.mcp.roots import Roots

Progress = Callable[[float, float, str], Awaitable[None]]  # (elapsed s, limit s, message)
MAX_TIMEOUT = 1800


def command(roots: Roots, *, original: str | None, candidate: str | None, example: str | None,
            kernel: str | None, skeleton: str | None, harness: str | None, device: str | None,
            shapes: list[str] | None, dtype: str | None, record: bool, store: str | None) -> list[str]:
    """The `skel verify` command line for a call, every path checked against the roots."""
    args = [sys.executable, "-m", "skel.cli", "verify", "--json"]
    if example:
        if original or candidate:
            raise UsageError("give either original and candidate, or example, not both")
        args += ["--example", example]
    elif original and candidate:
        args += [str(roots.file(original, "original")), str(roots.file(candidate, "candidate"))]
    else:
        raise UsageError("give original and candidate (files under the server's roots), or example (a skeleton id)")
    if harness:
        args += ["--harness", str(roots.file(harness, "harness"))]
    for flag, value in (("--kernel", kernel), ("--skeleton", skeleton), ("--device", device), ("--dtype", dtype)):
        if value:
            args += [flag, value]
    if shapes:
        args += ["--shapes", ",".join(shapes)]
    if record:
        args.append("--record")
        if store:
            args += ["--store", store]
    return args


def environment(device: str | None) -> dict[str, str]:
    """The child imports this skel (wherever the server's came from) and, on the CPU, runs
    Triton's interpreter."""
    env = dict(os.environ)
    here = str(Path(__file__).resolve().parent.parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [here, env.get("PYTHONPATH")]))
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
    elif device and device.startswith("cuda"):
        env.pop("TRITON_INTERPRET", None)
    return env


async def run(args: list[str], env: dict[str, str], timeout: float, progress: Progress | None,
              cwd: str | None = None) -> dict[str, Any]:
    """Run the child; its verdict JSON, or a SkelError with its one-line message."""
    if not 1 <= timeout <= MAX_TIMEOUT:
        raise UsageError(f"timeout_s={timeout:g}: between 1 and {MAX_TIMEOUT}")
    start = time.monotonic()
    out: dict[str, bytes] = {}
    # its own session, so a timeout kills the whole group (compilers and workers it started)
    async with await anyio.open_process(args, env=env, cwd=cwd, start_new_session=True) as proc:
        async def drain(name: str, stream: Any) -> None:
            chunks = []
            async for chunk in stream:
                chunks.append(chunk)
            out[name] = b"".join(chunks)

        async with anyio.create_task_group() as tg:
            tg.start_soon(drain, "stdout", proc.stdout)
            tg.start_soon(drain, "stderr", proc.stderr)
            timed_out = False
            while proc.returncode is None:
                elapsed = time.monotonic() - start
                if elapsed >= timeout:
                    timed_out = True
                    _kill_group(proc.pid)
                    break
                if progress is not None:
                    await progress(round(elapsed, 1), timeout, f"skel verify running ({elapsed:.0f}s of {timeout:g}s)")
                with anyio.move_on_after(min(1.0, timeout - elapsed)):
                    await proc.wait()
        await proc.wait()
    if timed_out:
        raise VerifyError(f"verify stopped after {timeout:g}s (timeout_s): the candidate, or the checks on it, "
                          "took too long")
    code = proc.returncode
    stdout, stderr = out.get("stdout", b"").decode(errors="replace"), out.get("stderr", b"").decode(errors="replace")
    if code in set(VERDICT_EXIT.values()):
        try:
            report = json.loads(stdout)
        except ValueError:
            report = None
        if isinstance(report, dict) and "record" in report:
            if progress is not None:
                await progress(timeout, timeout, f"verdict: {report['record'].get('verdict')}")
            return report
    raise _child_error(code, stderr)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:  # already gone
        pass


def _child_error(code: int | None, stderr: str) -> SkelError:
    """The child's one-line error (`skel: error: ...`), or what is known of its failure."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for ln in reversed(lines):
        for prefix in ("skel: error: ", "skel: internal error: ", "Error: "):
            if ln.startswith(prefix):
                return VerifyError(ln[len(prefix):] if prefix == "skel: error: " else ln)
    last = lines[-1] if lines else "no output"
    return VerifyError(f"skel verify exited {code}: {last}")
