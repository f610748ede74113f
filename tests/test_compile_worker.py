"""The warm compile worker (skel/kernels/compile_worker.py) behind machine-code facts.

Real compiles, in a real worker process: one process serves several kernels; its facts equal
a one-shot child's; a worker that dies mid-request, a fork that dies, a fork past its time
limit and a module changed under the worker each end in the one-shot child's answer or
reason; nothing is left running. No timings are asserted (CI is loaded): the benchmark
`python -m benchmarks.performance.suggest_grounded` measures them.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from skel.kernels import compile_worker, machine
from skel.kernels.machine import Launch, MachineFactsUnavailable, machine_facts

pytest.importorskip("triton")

COPY = '''
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)
'''

# a file that imports more than Triton: the worker imports torch before it forks
EXP_TORCH = '''
import torch
import triton
import triton.language as tl

try:
    from triton.language.extra import libdevice  # noqa: F401
except ImportError:
    pass


@triton.jit
def exp_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr = 256):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n).to(tl.float32)
    tl.store(y_ptr + offs, tl.exp(x), mask=offs < n)
'''

LAUNCH = Launch(constexprs={"BLOCK": 1024}, num_warps=4, divisible=("n",))


def _essence(f: machine.MachineFacts) -> dict:
    """The facts without how long they took or where they came from."""
    return {k: v for k, v in f.to_json().items() if k not in ("compile_s", "timings", "cached")}


def _one_shot(monkeypatch, *args, **kwargs):
    with monkeypatch.context() as m:
        m.setenv("SKEL_COMPILE_WORKER", "0")
        return machine_facts(*args, use_cache=False, **kwargs)


def _gone(pid: int, wait_s: float = 20.0) -> bool:
    """Whether process ``pid`` has ended and been reaped (no /proc entry, so no zombie)."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if not Path(f"/proc/{pid}").exists():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture(autouse=True)
def _fresh(tmp_path, monkeypatch):
    """Each test: its own cache, no worker left from another, none left after it."""
    monkeypatch.setenv("SKEL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("SKEL_COMPILE_WORKER", raising=False)
    monkeypatch.setitem(compile_worker._STATE, "deaths", 0)
    compile_worker.shutdown()
    yield
    pid = compile_worker.worker_pid()
    compile_worker.shutdown()
    if pid is not None:
        assert _gone(pid)


def test_one_worker_serves_two_kernels_with_the_one_shot_facts(monkeypatch):
    calls = []
    real = machine._compile_once
    monkeypatch.setattr(machine, "_compile_once", lambda spec, timeout: calls.append(spec) or real(spec, timeout))
    a = machine_facts(COPY, "copy_kernel", LAUNCH, use_cache=False)
    pid = compile_worker.worker_pid()
    b = machine_facts(EXP_TORCH, "exp_kernel", use_cache=False)
    assert pid is not None and compile_worker.worker_pid() == pid  # the same process answered both
    assert calls == []  # and no one-shot child was needed
    assert (a.loads.v4, a.stores.v4) == (1, 1) and b.mufu.get("ex2", 0) >= 1
    assert "preload" in b.timings
    # the one-shot child's facts, field for field
    assert _essence(a) == _essence(_one_shot(monkeypatch, COPY, "copy_kernel", LAUNCH))
    assert _essence(b) == _essence(_one_shot(monkeypatch, EXP_TORCH, "exp_kernel"))


def test_failures_give_the_one_shot_reasons(monkeypatch):
    cases = [(COPY, "copy_kernel", None), (COPY, "nope", LAUNCH), ("x = 1 / 0\n", "k", None),
             (COPY.replace("tl.load(", "tl.no_such_op("), "copy_kernel", LAUNCH)]
    for source, kernel, launch in cases:
        with pytest.raises(MachineFactsUnavailable) as in_worker:
            machine_facts(source, kernel, launch, use_cache=False)
        with pytest.raises(MachineFactsUnavailable) as one_shot:
            _one_shot(monkeypatch, source, kernel, launch)
        assert str(in_worker.value) == str(one_shot.value)
    assert compile_worker.worker_pid() is not None


def test_a_worker_that_dies_mid_request_falls_back_to_the_one_shot_child(monkeypatch, tmp_path):
    marker = tmp_path / "fork-started"
    slow = f"import os, time\nopen({str(marker)!r}, 'w').write(str(os.getpid()))\ntime.sleep(2)\n" + COPY
    machine_facts(COPY, "copy_kernel", LAUNCH, use_cache=False)  # the worker is up
    pid = compile_worker.worker_pid()
    assert pid is not None
    fallbacks = []
    real = machine._compile_once
    monkeypatch.setattr(machine, "_compile_once",
                        lambda spec, timeout: fallbacks.append(spec["kernel"]) or real(spec, timeout))
    forks = []

    def kill_when_compiling() -> None:
        while not marker.exists():
            time.sleep(0.02)
        forks.append(int(marker.read_text() or 0))
        os.kill(pid, signal.SIGKILL)

    killer = threading.Thread(target=kill_when_compiling, daemon=True)
    killer.start()
    facts = machine_facts(slow, "copy_kernel", LAUNCH, use_cache=False)
    killer.join(timeout=30)
    assert fallbacks == ["copy_kernel"]  # the answer came from the one-shot child
    assert _essence(facts) == _essence(_one_shot(monkeypatch, slow, "copy_kernel", LAUNCH))
    assert _gone(pid) and forks and _gone(forks[0])  # the worker reaped, its fork did not outlive it
    # the next request starts a new worker
    machine_facts(COPY, "copy_kernel", Launch(constexprs={"BLOCK": 512}), use_cache=False)
    assert compile_worker.worker_pid() not in (None, pid)


def test_a_worker_that_cannot_start_falls_back(monkeypatch):
    """A "worker" that reads the request and exits without an answer."""
    key, _argv, env = machine._worker_args(90)
    monkeypatch.setattr(machine, "_worker_args", lambda cc: (("broken", *key), [
        sys.executable, "-c", "import sys; sys.stdin.readline()"], env))
    facts = machine_facts(COPY, "copy_kernel", LAUNCH, use_cache=False)
    assert facts.loads.v4 == 1
    assert compile_worker._STATE["deaths"] == 1
    for _ in range(compile_worker.MAX_DEATHS):
        machine_facts(COPY, "copy_kernel", LAUNCH, use_cache=False)
    assert compile_worker._STATE["deaths"] == compile_worker.MAX_DEATHS  # then no more tries
    assert compile_worker.worker_pid() is None


def test_a_fork_that_dies_or_overruns_leaves_the_worker_serving(monkeypatch):
    machine_facts(COPY, "copy_kernel", LAUNCH, use_cache=False)
    pid = compile_worker.worker_pid()
    # a file that ends its process at import: the one-shot child's reason, and the worker lives on
    dying = "import os\nos._exit(3)\n" + COPY
    with pytest.raises(MachineFactsUnavailable) as in_worker:
        machine_facts(dying, "copy_kernel", LAUNCH, use_cache=False)
    with pytest.raises(MachineFactsUnavailable) as one_shot:
        _one_shot(monkeypatch, dying, "copy_kernel", LAUNCH)
    assert str(in_worker.value) == str(one_shot.value) and "died" in str(one_shot.value)
    # past the time limit: the fork (and what it started) is killed, the request says so
    with pytest.raises(MachineFactsUnavailable, match="took longer than 2 s"):
        machine_facts("import time\ntime.sleep(60)\n" + COPY, "copy_kernel", LAUNCH, use_cache=False, timeout=2)
    assert compile_worker.worker_pid() == pid
    assert machine_facts(COPY, "copy_kernel", LAUNCH, use_cache=False).loads.v4 == 1


def test_a_changed_module_starts_a_new_worker(monkeypatch, tmp_path):
    source = _package(tmp_path, monkeypatch, "skel_test_block", "BLOCK = 256\n").replace(
        "BLOCK: tl.constexpr", "BLOCK: tl.constexpr = skel_test_block.BLOCK")
    helper = tmp_path / "lib" / "skel_test_block.py"
    first = machine_facts(source, "copy_kernel", use_cache=False)
    pid = compile_worker.worker_pid()
    helper.write_text("BLOCK = 512\n")
    os.utime(helper, ns=(time.time_ns(), time.time_ns() + 10**9))  # a later time, whatever the clock's grain
    second = machine_facts(source, "copy_kernel", use_cache=False)
    assert first.signature["BLOCK"] == "constexpr=256" and second.signature["BLOCK"] == "constexpr=512"
    assert compile_worker.worker_pid() not in (None, pid) and _gone(pid)


def _package(tmp_path, monkeypatch, name: str, text: str) -> str:
    """A module ``name`` on the path the compiling processes get; the kernel file importing it."""
    lib = tmp_path / "lib"
    lib.mkdir(exist_ok=True)
    (lib / f"{name}.py").write_text(text)
    monkeypatch.setenv("PYTHONPATH", str(lib) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return COPY.replace("import triton\n", f"import triton\nimport {name}\n", 1)


def test_a_package_using_torch_threads_on_import_does_not_hang_the_fork(monkeypatch, tmp_path):
    """A fork of a process whose torch thread pool has started hangs in its first parallel
    op; the worker keeps torch on one thread, so both the package (imported in the worker)
    and the file (run in the fork) may compute on import."""
    pytest.importorskip("torch")
    big = "import torch\nTABLE = float((torch.randn(4_000_000) ** 2).sum())\n"
    source = _package(tmp_path, monkeypatch, "skel_test_torch_table", big) + "\n" + big
    facts = machine_facts(source, "copy_kernel", LAUNCH, use_cache=False, timeout=60)
    assert facts.loads.v4 == 1 and compile_worker.worker_pid() is not None


def test_a_package_that_starts_a_thread_is_compiled_by_the_one_shot_child(monkeypatch, tmp_path):
    """Forking a process with a second thread is unsafe (its locks): the worker says so and
    leaves, and the one-shot child answers."""
    source = _package(tmp_path, monkeypatch, "skel_test_threads",
                      "import threading, time\nthreading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n")
    facts = machine_facts(source, "copy_kernel", LAUNCH, use_cache=False)
    assert compile_worker._STATE["deaths"] == 1 and compile_worker.worker_pid() is None
    assert _essence(facts) == _essence(_one_shot(monkeypatch, source, "copy_kernel", LAUNCH))


def test_prestart_and_shutdown_leave_nothing_running():
    assert machine.prestart(EXP_TORCH)
    pid = compile_worker.worker_pid()
    assert pid is not None
    compile_worker.shutdown()  # while it is still importing torch, or after
    assert compile_worker.worker_pid() is None and _gone(pid)


def test_prestart_skips_a_text_compiled_before():
    """Its facts are likely cached: no worker is started for nothing."""
    machine_facts(COPY, "copy_kernel", LAUNCH)  # cached, and the text marked
    compile_worker.shutdown()
    assert not machine.prestart(COPY) and compile_worker.worker_pid() is None
    assert machine_facts(COPY, "copy_kernel", LAUNCH).cached
    assert machine.prestart(COPY.replace("copy_kernel", "copy_kernel2"))  # another text: started


def test_turned_off_means_one_shot(monkeypatch):
    monkeypatch.setenv("SKEL_COMPILE_WORKER", "0")
    assert machine_facts(COPY, "copy_kernel", LAUNCH, use_cache=False).loads.v4 == 1
    assert not machine.prestart(COPY)
    assert compile_worker.worker_pid() is None


def test_module_imports_are_those_that_always_run():
    source = '''
import torch, math as m
from triton.language import core
from . import sibling
if HIP:
    import hip_only
try:
    from triton.language.extra import libdevice
    import after_libdevice
except ImportError:
    import fallback
with ctx():
    import inside_with


def f():
    import in_function
'''
    got = machine._module_imports(source)
    assert [(name, attrs) for name, attrs, _ in got] == [
        ("torch", ()), ("math", ()), ("triton.language", ("core",)), ("triton.language.extra", ("libdevice",)),
        ("after_libdevice", ()), ("inside_with", ())]
    scopes = {name: scope for name, _, scope in got}
    assert scopes["torch"] == () and scopes["triton.language.extra"] == scopes["after_libdevice"] != ()
