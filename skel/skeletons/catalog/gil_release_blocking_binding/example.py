"""gil-release-blocking-binding: a bound C++ method that busy-waits → release the GIL while it waits.

The template shown is `before_cuda` → `after_cuda`: a pybind11-bound dispatch that spins on a
host-mapped counter the GPU writes (DeepEP's legacy `Buffer::intranode_dispatch` has this
shape). Before, it holds the GIL for the whole wait and every other Python thread stalls;
after, Python objects are read first, the wait runs in a `py::gil_scoped_release` scope, and
the GIL is taken back before Python objects are built again. A method that touches no Python
object at all can instead be bound with `py::call_guard<py::gil_scoped_release>()`
(nanobind: `nb::call_guard<nb::gil_scoped_release>()`).

There is no GPU harness: the effect is on other Python threads, not on the GPU. The
measurement is CPU-only: benchmarks/performance/gil_release.py builds a pybind11 extension with the same
two shapes and measures a Python thread's progress during the call (0.000 holding the GIL,
0.53-1.03 releasing it; benchmarks/results/gil-release-2026-12-01.md), and
tests/test_gil_release.py asserts it.
"""

before_cuda = r"""
#include <pybind11/pybind11.h>
#include <torch/extension.h>

#include <chrono>
#include <stdexcept>

namespace py = pybind11;

struct Buffer {
    volatile int* recv_counter;  // host-mapped; the notify kernel writes the count
    int timeout_secs = 100;

    torch::Tensor dispatch(const torch::Tensor& x, cudaStream_t stream) {
        *recv_counter = -1;
        launch_notify(x, recv_counter, stream);

        // busy-wait until the GPU has written the number of tokens to receive
        auto start = std::chrono::steady_clock::now();
        int num_recv;
        while ((num_recv = *recv_counter) < 0) {
            if (std::chrono::steady_clock::now() - start > std::chrono::seconds(timeout_secs))
                throw std::runtime_error("dispatch: CPU recv timeout");
        }

        auto recv_x = torch::empty({num_recv, x.size(1)}, x.options());
        launch_dispatch(x, recv_x, stream);
        return recv_x;
    }
};

PYBIND11_MODULE(ep, m) {
    py::class_<Buffer>(m, "Buffer")
        .def("dispatch", &Buffer::dispatch);
}
"""

after_cuda = r"""
#include <pybind11/pybind11.h>
#include <torch/extension.h>

#include <chrono>
#include <stdexcept>

namespace py = pybind11;

struct Buffer {
    volatile int* recv_counter;  // host-mapped; the notify kernel writes the count
    int timeout_secs = 100;

    torch::Tensor dispatch(const torch::Tensor& x, cudaStream_t stream) {
        *recv_counter = -1;
        launch_notify(x, recv_counter, stream);

        // busy-wait until the GPU has written the number of tokens to receive, without
        // the GIL: other Python threads (a KV transfer, the scheduler) keep running
        int num_recv;
        {
            py::gil_scoped_release release;
            auto start = std::chrono::steady_clock::now();
            while ((num_recv = *recv_counter) < 0) {
                if (std::chrono::steady_clock::now() - start > std::chrono::seconds(timeout_secs))
                    throw std::runtime_error("dispatch: CPU recv timeout");
            }
        }  // the GIL is taken back here, before anything touches Python again

        auto recv_x = torch::empty({num_recv, x.size(1)}, x.options());
        launch_dispatch(x, recv_x, stream);
        return recv_x;
    }
};

PYBIND11_MODULE(ep, m) {
    py::class_<Buffer>(m, "Buffer")
        .def("dispatch", &Buffer::dispatch);
}
"""
