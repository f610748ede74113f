"""The evidence for `gil-release-blocking-binding`: a Python thread stalls while a bound C++
call blocks holding the GIL, and keeps running when the binding releases it.

A small pybind11 extension (benchmarks/performance/gil_extension.py holds its source) is compiled on the
CPU into a temporary folder. Its blocking calls read a Python thread's iteration counter at
their first and last moment, so the progress measured is exactly the progress made inside
the C++ call. Figures seen on this project's shared 2-core machine (load average 2-2.5 from
other sessions, 300 ms calls; benchmarks/results/gil-release-2026-12-01.md): holding the GIL
0.000 in every run, for a spin-wait and a sleep alike; releasing it
(`py::call_guard<py::gil_scoped_release>()` or a `py::gil_scoped_release` local) medians of
0.51-0.94 for the spin-wait (single runs down to 0.27: it keeps one of the two cores busy, so
the thread shares the other with everything else) and 0.96-1.08 for the sleep (single runs
down to 0.51). The thresholds below leave room for a busier machine; holding stays exactly 0.
"""

from __future__ import annotations

import pytest

HOLDING_MAX = 0.05  # the thread may not run at all: anything above means the GIL was released
SLEEP_RELEASED_MIN = 0.5  # a parked call leaves the cores to the Python thread
SPIN_RELEASED_MIN = 0.2  # a spinning call keeps one core busy; on 2 loaded cores the thread shares the other


def _helper():
    from benchmarks.performance import gil_extension

    return gil_extension


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    helper = _helper()
    try:
        ext = helper.build(tmp_path_factory.mktemp("gil_ext"))
    except helper.BuildUnavailable as e:
        pytest.skip(f"cannot build the pybind11 demo extension: {e}")
    return helper, ext


@pytest.mark.parametrize("kind,released_min", [("spin", SPIN_RELEASED_MIN), ("sleep", SLEEP_RELEASED_MIN)])
def test_python_thread_runs_only_when_the_binding_releases_the_gil(demo, kind, released_min):
    helper, ext = demo
    progress = {p.binding: p for p in helper.measure(ext, ms=200.0, repeats=3, kinds=(kind,))}
    report = {b: [round(r, 3) for r in p.runs] for b, p in progress.items()}
    assert progress["holding"].median < HOLDING_MAX, f"held GIL, yet the thread ran: {report}"
    assert progress["guard"].median > released_min, f"call_guard release, thread still stalled: {report}"
    assert progress["scoped"].median > released_min, f"gil_scoped_release local, thread still stalled: {report}"


def test_the_measurement_sees_a_stalled_thread_as_zero(demo):
    """The window is the C++ call's own: a thread that cannot take the GIL makes no progress
    inside it, exactly, however the OS schedules things around the call."""
    helper, ext = demo
    with helper._Counter() as c:
        n0, n1, seconds = ext.sleep_holding(50.0, c.address)
    assert n1 == n0 and seconds >= 0.05


# --- the skeleton on C++ sources -----------------------------------------------------------

#: DeepEP's legacy `Buffer` in miniature (self-written, same shape): a struct whose first member
#: is a macro statement, two dispatch entry points that busy-wait on a counter the GPU writes,
#: one releasing the GIL in its body, the other not, both bound on the same class.
DEEPEP_SHAPE = r"""
#include <pybind11/pybind11.h>
#include <chrono>
#include <stdexcept>

#define EP_STATIC_ASSERT(cond, msg) static_assert(cond, msg)

struct Buffer {
    EP_STATIC_ASSERT(sizeof(int) == 4, "int must be 4 bytes");

    volatile int* moe_recv_counter = nullptr;

    int internode_dispatch(int n) {
        // other Python threads would get stuck behind this busy-wait: release the GIL
        pybind11::gil_scoped_release release;
        auto start = std::chrono::high_resolution_clock::now();
        while (true) {
            int got = *moe_recv_counter;
            if (got >= 0)
                return got + n;
            if (std::chrono::high_resolution_clock::now() - start > std::chrono::seconds(100))
                throw std::runtime_error("timeout (dispatch CPU)");
        }
    }

    int intranode_dispatch(int n) {
        auto start = std::chrono::high_resolution_clock::now();
        while (true) {
            int got = *moe_recv_counter;
            if (got >= 0)
                return got + n;
            if (std::chrono::high_resolution_clock::now() - start > std::chrono::seconds(100))
                throw std::runtime_error("CPU recv timeout");
        }
    }
};

PYBIND11_MODULE(ep, m) {
    pybind11::class_<Buffer>(m, "Buffer")
        .def("internode_dispatch", &Buffer::internode_dispatch)
        .def("intranode_dispatch", &Buffer::intranode_dispatch);
}
"""


def _assess(source: str, path: str = "buffer.hpp"):
    from skel.kernels.extract import extract
    from skel.skeletons import registry

    sk = registry.get("gil-release-blocking-binding")
    return {k.name: sk.assess(k) for k in extract(source, path) if k.kind == "binding"}


def test_fixture_match_names_the_sibling_that_releases_the_gil():
    """The class in the fixtures binds `wait_ready` with `py::call_guard<py::gil_scoped_release>()`:
    the blocking `intranode_dispatch` beside it is a match whose explanation names it."""
    from skel.skeletons.registry import fixture_path

    path = fixture_path("gil-release-blocking-binding")
    found = _assess(path.read_text(), str(path))
    a = found["intranode_dispatch"]
    assert a.kind == "match", a.failed
    sibling = [h for h in a.matched if h.condition == "sibling-releases-gil"]
    assert sibling and "`wait_ready`" in sibling[0].detail and sibling[0].lines, [str(h) for h in a.matched]
    # a blocking binding of a module whose siblings release nothing is a match all the same
    assert found["sync"].kind == "match"
    assert found["wait_ready"].present and found["wait_ready"].kind is None


def test_deepep_shape_with_the_struct_parsed():
    """Without the macro line tree-sitter parses the struct: the spinning entry point that
    keeps the GIL is a match, the one that releases it is not suggested."""
    found = _assess(DEEPEP_SHAPE.replace('    EP_STATIC_ASSERT(sizeof(int) == 4, "int must be 4 bytes");\n', ""))
    assert found["intranode_dispatch"].kind == "match", found["intranode_dispatch"].failed
    assert found["internode_dispatch"].present and found["internode_dispatch"].kind is None


def test_deepep_shape_members_of_a_struct_opening_with_a_macro_are_bindings():
    """A macro statement as the struct's first member (DeepEP's `EP_STATIC_ASSERT(...);`) makes
    tree-sitter drop the struct around its members; the `.def`s still find them."""
    found = _assess(DEEPEP_SHAPE)
    assert found["intranode_dispatch"].kind == "match"
    assert found["internode_dispatch"].present


def test_deepep_shape_names_the_sibling_that_releases_in_its_body():
    """The brief's case: the sibling releases the GIL with a `gil_scoped_release` local in its
    body, not in its `.def`; the match still names it."""
    found = _assess(DEEPEP_SHAPE)
    sibling = [h for h in found["intranode_dispatch"].matched if h.condition == "sibling-releases-gil"]
    assert sibling and "`internode_dispatch`" in sibling[0].detail
