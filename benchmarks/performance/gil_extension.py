"""A tiny pybind11 extension that blocks in C++ with and without releasing the GIL, and the
measurement of how far a Python thread gets meanwhile.

The evidence behind the `gil-release-blocking-binding` skeleton (tests/test_gil_release.py
asserts on it, benchmarks/performance/gil_release.py prints the table). Built on the CPU with the system
C++ compiler into a folder the caller chooses; nothing here needs a GPU.

Each blocking entry point comes in three bindings of the same C++ function:

- ``*_holding``: bound plainly — the GIL stays held for the whole call, as in DeepEP's
  ``intranode_dispatch`` (it spins on a host-mapped counter the GPU writes);
- ``*_guard``: bound with ``py::call_guard<py::gil_scoped_release>()``;
- ``*_scoped``: a ``py::gil_scoped_release`` local at the top of the function body, as
  DeepEP's ``internode_dispatch`` does.

Two kinds of blocking: ``spin`` busy-waits on the clock and a volatile counter (a CPU
spin-wait: it keeps a core busy, like polling a flag the GPU sets), ``sleep`` parks the
thread (like a blocking synchronisation that yields the core).
"""

from __future__ import annotations

import ctypes
import importlib.util
import shutil
import statistics
import subprocess
import sys
import sysconfig
import threading
import time
from dataclasses import dataclass
from pathlib import Path

MODULE = "skel_gil_demo"

SOURCE = r"""
#include <pybind11/pybind11.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <tuple>

namespace py = pybind11;
using clock_type = std::chrono::steady_clock;
using window = std::tuple<std::int64_t, std::int64_t, double>;

// The measurement reads the Python thread's iteration counter (an int64 that thread keeps
// writing through ctypes) at the first and last moment of the C++ call, and the call's own
// duration: the Python thread's progress inside exactly this window, whatever the OS
// scheduler does around it. Reading the counter needs no GIL.
static std::int64_t read_counter(std::uintptr_t counter) {
    return __atomic_load_n(reinterpret_cast<const std::int64_t*>(counter), __ATOMIC_RELAXED);
}

// Busy-waits until `deadline`, polling the clock like a dispatch that spins until a
// counter the GPU writes turns non-negative, with a timeout check.
static clock_type::time_point after(clock_type::time_point t0, double ms) {
    return t0 + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double, std::milli>(ms));
}

static std::int64_t spin_until(clock_type::time_point deadline) {
    volatile std::int64_t polls = 0;
    while (clock_type::now() < deadline)
        polls = polls + 1;
    return polls;
}

static window spin(double ms, std::uintptr_t counter) {
    const auto t0 = clock_type::now();
    const std::int64_t n0 = read_counter(counter);
    spin_until(after(t0, ms));
    const std::int64_t n1 = read_counter(counter);
    return {n0, n1, std::chrono::duration<double>(clock_type::now() - t0).count()};
}

static window spin_scoped(double ms, std::uintptr_t counter) {
    const auto t0 = clock_type::now();
    const std::int64_t n0 = read_counter(counter);
    py::gil_scoped_release release;  // from here on other Python threads run
    spin_until(after(t0, ms));
    const std::int64_t n1 = read_counter(counter);
    return {n0, n1, std::chrono::duration<double>(clock_type::now() - t0).count()};
}

// Parks the thread for `ms` milliseconds, like a blocking synchronisation that yields.
static window park(double ms, std::uintptr_t counter) {
    const auto t0 = clock_type::now();
    const std::int64_t n0 = read_counter(counter);
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
    const std::int64_t n1 = read_counter(counter);
    return {n0, n1, std::chrono::duration<double>(clock_type::now() - t0).count()};
}

static window park_scoped(double ms, std::uintptr_t counter) {
    const auto t0 = clock_type::now();
    const std::int64_t n0 = read_counter(counter);
    py::gil_scoped_release release;
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
    const std::int64_t n1 = read_counter(counter);
    return {n0, n1, std::chrono::duration<double>(clock_type::now() - t0).count()};
}

PYBIND11_MODULE(skel_gil_demo, m) {
    m.def("spin_holding", &spin);
    m.def("spin_guard", &spin, py::call_guard<py::gil_scoped_release>());
    m.def("spin_scoped", &spin_scoped);
    m.def("sleep_holding", &park);
    m.def("sleep_guard", &park, py::call_guard<py::gil_scoped_release>());
    m.def("sleep_scoped", &park_scoped);
}
"""

KINDS = ("spin", "sleep")
BINDINGS = ("holding", "guard", "scoped")


class BuildUnavailable(RuntimeError):
    """No C++ compiler or no pybind11: the extension cannot be built here."""


def compiler() -> str:
    for name in ("c++", "g++", "clang++"):
        path = shutil.which(name)
        if path:
            return path
    raise BuildUnavailable("no C++ compiler (c++, g++ or clang++) on PATH")


def build(out_dir: Path):
    """Compile the extension into ``out_dir`` and import it; BuildUnavailable when the
    tools are missing, RuntimeError with the compiler's message when compiling fails."""
    try:
        import pybind11
    except ImportError as e:
        raise BuildUnavailable("pybind11 is not installed (pip install pybind11)") from e
    cxx = compiler()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    src = out_dir / f"{MODULE}.cpp"
    src.write_text(SOURCE)
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    lib = out_dir / f"{MODULE}{suffix}"
    cmd = [cxx, "-O2", "-shared", "-fPIC", "-std=c++17", "-fvisibility=hidden",
           f"-I{pybind11.get_include()}", f"-I{sysconfig.get_paths()['include']}",
           str(src), "-o", str(lib)]
    if sys.platform == "darwin":
        cmd[1:1] = ["-undefined", "dynamic_lookup"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"compiling the GIL demo extension failed: {done.stderr.strip()[-2000:]}")
    spec = importlib.util.spec_from_file_location(MODULE, lib)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot import the built extension {lib}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class _Counter:
    """A Python thread that counts loop iterations until told to stop, publishing the count
    in a C int64 the extension reads without the GIL: how much Python work got done while
    the main thread was elsewhere."""

    def __init__(self) -> None:
        self.cell = ctypes.c_int64(0)
        self.address = ctypes.addressof(self.cell)
        self._stop = False
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def count(self) -> int:
        return self.cell.value

    def _run(self) -> None:
        cell, n = self.cell, 0
        self._started.set()
        while not self._stop:
            n += 1
            cell.value = n

    def __enter__(self) -> "_Counter":
        self._thread.start()
        self._started.wait()
        time.sleep(0.02)  # let it reach its steady rate before anything is measured
        return self

    def __exit__(self, *exc) -> None:
        self._stop = True
        self._thread.join()


def free_rate(ms: float) -> float:
    """Counter iterations per second while the main thread sleeps in ``time.sleep`` (which
    releases the GIL): the thread's free-running rate. Edges cost nothing here: while the
    main thread waits to take the GIL back, the counter keeps counting and the clock runs."""
    with _Counter() as c:
        n0, t0 = c.count, time.perf_counter()
        time.sleep(ms / 1000.0)
        n1, t1 = c.count, time.perf_counter()
    return (n1 - n0) / (t1 - t0)


def rate_during(block, ms: float) -> float:
    """Counter iterations per second inside the C++ call ``block(ms, counter)``: the call
    reads the counter at its first and last moment and times itself."""
    with _Counter() as c:
        n0, n1, seconds = block(ms, c.address)
    return (n1 - n0) / seconds


@dataclass
class Progress:
    kind: str  # "spin" or "sleep"
    binding: str  # "holding", "guard" or "scoped"
    runs: list[float]  # the Python thread's rate during the call / its free-running rate

    @property
    def median(self) -> float:
        return statistics.median(self.runs)


def measure(mod, ms: float = 300.0, repeats: int = 5,
            kinds: tuple[str, ...] = KINDS, bindings: tuple[str, ...] = BINDINGS) -> list[Progress]:
    """For each blocking entry point: the Python thread's progress while the main thread is
    in it, as a fraction of its free-running rate. The free-running rate is measured in the
    same round, right before, so a machine that is busy for a while lowers both alike."""
    out = {(k, b): Progress(k, b, []) for k in kinds for b in bindings}
    for _ in range(repeats):
        for kind in kinds:
            for binding in bindings:
                free = free_rate(ms)
                during = rate_during(getattr(mod, f"{kind}_{binding}"), ms)
                out[(kind, binding)].runs.append(during / free if free > 0 else 0.0)
    return list(out.values())
