"""Drive `skel serve` with the MCP SDK's own clients, over stdio or streamable HTTP, as
an agent client would: a fresh server process per session."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import AsyncIterator

ROOT = Path(__file__).resolve().parent.parent
PASSED = ("SKEL_HOME", "SKEL_EMBEDDER", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "TRITON_INTERPRET", "SKEL_THRESHOLD")


def server_env() -> dict[str, str]:
    """What the server needs from the test's environment (the SDK starts it with a minimal
    one): this checkout's skel, the test's SKEL_HOME and the hash embedder."""
    env = {k: os.environ[k] for k in PASSED if k in os.environ}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return env


@asynccontextmanager
async def stdio_session(*args: str, cwd: Path | None = None) -> AsyncIterator:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "skel.cli", "serve", *args],
                                   env=server_env(), cwd=str(cwd or ROOT))
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@asynccontextmanager
async def http_session(*args: str, cwd: Path | None = None) -> AsyncIterator:
    """`skel serve --http 127.0.0.1:PORT` in a child process, and a session to it."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    port = free_port()
    env = dict(os.environ) | server_env()
    proc = subprocess.Popen([sys.executable, "-m", "skel.cli", "serve", "--http", f"127.0.0.1:{port}", *args],
                            cwd=str(cwd or ROOT), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:  # wait for the port to open
            if proc.poll() is not None:
                raise RuntimeError(f"skel serve --http exited {proc.returncode}: {proc.stderr.read().decode()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
