"""compute-sanitizer memcheck (issue #36, item 3), the parts that need no GPU: the command line,
"not available" when the tool is missing, reading memcheck's output (an invalid read, a clean
run, a child that never launched), and how a validated-faster run's verdict follows it."""

from __future__ import annotations

import os
import stat
import sys
from types import SimpleNamespace

import pytest

from skel.verifier import sanitizer
from skel.verifier.sanitizer import EXIT_CODE, MemcheckResult, Target, command, find_binary, parse

INVALID_READ = """\
========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 4 bytes
=========     at rowsum_kernel+0x1b0 in /tmp/pairs/kb_past_row_end.py:12
=========     by thread (31,0,0) in block (15,0,0)
=========     Address 0x7f1c2a00fa00 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7f1c2a000000 of size 64000 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========     Host Frame: [0x2f1c4f] in libcuda.so.1
=========
========= Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure" on CUDA API call \
to cuStreamSynchronize.
=========     Saved host backtrace up to driver entry point at error
=========
========= ERROR SUMMARY: 2 errors
"""

CLEAN = """\
========= COMPUTE-SANITIZER
SKEL-SANITIZE-LAUNCHED M=4096,N=1000 float32
========= ERROR SUMMARY: 0 errors
"""

CRASHED = """\
========= COMPUTE-SANITIZER
Traceback (most recent call last):
  File "<frozen runpy>", line 198, in _run_module_as_main
ModuleNotFoundError: No module named 'my_harness'
========= Target application returned an error
========= ERROR SUMMARY: 0 errors
"""


@pytest.fixture
def nowhere(monkeypatch, tmp_path):
    """No compute-sanitizer anywhere: an empty PATH, no CUDA_HOME, no CUDA install, no wheel."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(sanitizer, "SEARCH_DIRS", ())
    monkeypatch.setattr(sanitizer, "_wheel_dirs", lambda: [])
    return tmp_path


def _fake_tool(directory, output: str, code: int):
    """A compute-sanitizer stand-in that prints ``output`` and exits with ``code``."""
    directory.mkdir(parents=True, exist_ok=True)
    tool = directory / "compute-sanitizer"
    body = output.replace("'", "'\\''")
    tool.write_text(f"#!/bin/sh\nprintf '%s' '{body}'\nexit {code}\n")
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    return tool


def test_command_line():
    t = Target("h.py", "cand.py", "run", "big", "float16", seed=3)
    cmd = command("/opt/cuda/bin/compute-sanitizer", t, python="/venv/bin/python")
    assert cmd == ["/opt/cuda/bin/compute-sanitizer", "--tool", "memcheck", "--error-exitcode", "86",
                   "--print-limit", "20", "/venv/bin/python", "-m", "skel.verifier.sanitize_child",
                   "h.py", "cand.py", "--launcher", "run", "--shape", "big", "--dtype", "float16", "--seed", "3"]
    kb = Target("problem.py", "model_new.py", kernelbench=True)
    assert command("cs", kb, python="py")[8:] == ["-m", "skel.verifier.sanitize_child", "problem.py",
                                                  "model_new.py", "--kernelbench", "--seed", "0"]
    assert kb.label() == "get_inputs()" and t.label() == "big float16"


def test_child_environment_has_no_interpreter_and_no_caching_allocator(monkeypatch):
    env = sanitizer.child_env({"TRITON_INTERPRET": "1", "PATH": "/bin"})
    assert "TRITON_INTERPRET" not in env and env["PYTORCH_NO_CUDA_MEMORY_CACHING"] == "1"
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(sanitizer.Path(sanitizer.__file__).resolve().parents[2])


def test_not_available_when_the_binary_is_missing(nowhere):
    path, why = find_binary()
    assert path is None and "compute-sanitizer not found on PATH" in why
    r = sanitizer.memcheck(Target("h.py", "c.py"))
    assert r.status == "not-available" and not r.ran
    assert r.line().startswith("memcheck: not run (compute-sanitizer not found")


def test_found_on_path_and_under_cuda_home(nowhere, monkeypatch):
    tool = _fake_tool(nowhere / "cuda" / "bin", CLEAN, 0)
    monkeypatch.setenv("CUDA_HOME", str(nowhere / "cuda"))
    assert find_binary() == (str(tool), "")
    monkeypatch.delenv("CUDA_HOME")
    monkeypatch.setenv("PATH", str(tool.parent))
    assert find_binary()[0] == str(tool)


def test_parse_an_invalid_read():
    r = parse(INVALID_READ, EXIT_CODE, "get_inputs()")
    assert r.status == "errors" and r.errors == 2 and r.ran
    assert r.first == "Invalid __global__ read of size 4 bytes at rowsum_kernel+0x1b0 in kb_past_row_end.py:12"
    assert r.line() == ("memcheck: 2 error(s) on get_inputs(); first: Invalid __global__ read of size 4 bytes at "
                        "rowsum_kernel+0x1b0 in kb_past_row_end.py:12")
    assert "\n" not in r.line()


def test_parse_a_clean_run():
    r = parse(CLEAN, 0, "the first GPU shape")  # the child's last line says what it launched
    assert r == MemcheckResult("clean", 0, where="M=4096,N=1000 float32")
    assert r.line() == "memcheck: clean (0 errors) on M=4096,N=1000 float32"
    assert parse("========= ERROR SUMMARY: 0 errors\n", 0, "big").line() == "memcheck: clean (0 errors) on big"


def test_parse_a_child_that_never_launched():
    r = parse(CRASHED, 1)
    assert r.status == "failed" and not r.ran
    assert r.why == "exit status 1: ModuleNotFoundError: No module named 'my_harness'"
    assert parse("", 0).status == "failed"  # no summary: the tool did not run the child


@pytest.mark.skipif(sys.platform == "win32", reason="a shell script stands in for the tool")
def test_memcheck_runs_the_tool_and_reads_it(nowhere, monkeypatch):
    tool = _fake_tool(nowhere / "bin", INVALID_READ, EXIT_CODE)
    monkeypatch.setenv("PATH", str(tool.parent))
    r = sanitizer.memcheck(Target("problem.py", "cand.py", kernelbench=True))
    assert r.status == "errors" and r.errors == 2 and r.command[0] == str(tool)
    assert r.command[-5:] == ["problem.py", "cand.py", "--kernelbench", "--seed", "0"]


# ---- the verifier's use of it -----------------------------------------------------------------

def _run(verdict="faster", speedup=1.3, subject="user", device="cuda"):
    from pathlib import Path

    from skel.verifier.run import Request, StageReport, _Run

    run = _Run(Request(Path("orig.py"), Path("cand.py"), device=device, subject=subject))
    run.verdict, run.detail = verdict, f"speedup {speedup}x"
    run.timing = SimpleNamespace(speedup=speedup)
    run.stages.append(StageReport("faster", "passed", run.detail))
    return run


H = SimpleNamespace(module=SimpleNamespace(), path="orig.py", gpu_shapes=("big",), shapes={"small": {}, "big": {}},
                    dtypes=("float16",))


def test_only_a_validated_claim_is_memchecked(monkeypatch):
    from skel.verifier import run as rm

    calls = []
    monkeypatch.setattr(sanitizer, "memcheck", lambda t, **k: calls.append(t) or MemcheckResult("clean", where="big"))
    for kw in (dict(speedup=1.02), dict(subject="example"), dict(verdict="no-effect"), dict(device="cpu")):
        rm._stage_memcheck(_run(**kw), H, None, None)
    assert not calls
    r = _run()
    rm._stage_memcheck(r, H, SimpleNamespace(__name__="run"), None)
    assert calls == [Target("orig.py", "cand.py", "run", "big", "float16", 0)]
    assert r.verdict == "faster" and r.notes == ["memcheck: clean (0 errors) on big"]


def test_a_memcheck_error_fails_the_run(monkeypatch):
    from skel.verifier import run as rm

    monkeypatch.setattr(sanitizer, "memcheck", lambda t, **k: parse(INVALID_READ, EXIT_CODE, t.label()))
    r = _run()
    rm._stage_memcheck(r, H, None, SimpleNamespace())  # a KernelBench problem
    assert r.verdict == "failed"
    assert r.detail.startswith("memcheck: 2 error(s) on get_inputs(); first: Invalid __global__ read of size 4")
    assert r.stages[0].status == "failed"


def test_memcheck_not_available_is_said_not_passed(monkeypatch, nowhere):
    from skel.verifier import run as rm

    r = _run()
    rm._stage_memcheck(r, H, SimpleNamespace(__name__="run"), None)
    assert r.verdict == "faster"
    assert any(u.startswith("memcheck: not run (compute-sanitizer not found") for u in r.unchecked)
