"""The CUDA C++ extractor (skel/kernels/cuda.py) and the language dispatch (skel/kernels/extract.py)."""

from __future__ import annotations

import pytest

from skel.kernels.extract import extract, hint, language_of

KERNEL = r"""
#include <cuda_runtime.h>
namespace ops {

// Reduces one row per warp.
__device__ __forceinline__ float warp_sum(float v) {
  #pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
  return v;
}

template <int kThreads, typename T>
__global__ void __launch_bounds__(kThreads, 2) row_sum(const T* __restrict__ x, float* y, int n) {
  __shared__ float partial[32];
  extern __shared__ char dyn[];
  float4 v = reinterpret_cast<const float4*>(x)[threadIdx.x];
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    asm volatile("{\n.reg .pred p;\n@p cp.async.cg.shared.global [%0], [%1], 16;\n}\n" :: "r"(0), "l"(x));
  }
  float s = warp_sum(v.x);
  if (threadIdx.x == 0) y[blockIdx.x] = s;
}

}  // namespace ops

void launch(const float* x, float* y, int rows, int n, cudaStream_t stream) {
  cudaMemsetAsync(y, 0, rows * sizeof(float), stream);
  ops::row_sum<256, float><<<rows, 256, 0, stream>>>(x, y, n);
  cudaGetLastError();
}
"""

BINDING = r"""
#include <pybind11/pybind11.h>
namespace py = pybind11;

void wait_for(volatile int* flag) { while (*flag == 0) {} }

struct Buffer {
  volatile int* flag;
  // blocks until the peer is done
  int dispatch(int x) { wait_for(flag); return x; }
  int combine(int x) {
    py::gil_scoped_release release;
    cudaDeviceSynchronize();
    return x;
  }
};

PYBIND11_MODULE(ext, mod) {
  py::class_<Buffer>(mod, "Buffer")
      .def("dispatch", &Buffer::dispatch)
      .def("combine", &Buffer::combine, py::call_guard<py::gil_scoped_release>());
  mod.def("ping", [](int x) { return x + 1; });
}
"""


def _one(source: str, path: str = "k.cu", **kw):
    found = extract(source, path, **kw)
    return {k.name: k for k in found}


def test_language_by_suffix_and_hint():
    assert language_of("a/b.cu") == language_of("x.cuh") == language_of("x.hpp") == "cuda"
    assert language_of("k.py") == "triton"
    assert hint("__global__ void k() {}", "k.cu") and not hint("int main() {}", "k.cpp")
    assert not hint("__global__ void k() {}", "k.py")  # a .py file is Triton, whatever it says


def test_kernel_facts_signature_qualifiers_and_template():
    k = _one(KERNEL)["row_sum"]
    assert (k.language, k.kind) == ("cuda", "kernel")
    assert k.line_start == KERNEL.splitlines().index("template <int kThreads, typename T>") + 1
    lb = k.decorator("__launch_bounds__")
    assert lb is not None and lb.list_items == ["kThreads", "2"]
    assert k.decorator("__global__") is not None
    assert [(p.name, p.constexpr) for p in k.params] == [("kThreads", True), ("T", True), ("x", False),
                                                         ("y", False), ("n", False)]
    assert k.param("x").annotation == "const T*"
    assert {"__restrict__", "__shared__", "extern __shared__", "float4"} <= set(k.names)
    assert "threadIdx.x" in k.attributes and "blockDim.x" in k.attributes
    assert k.var_types["v"] == "float4" and k.var_dtypes["s"] == "fp32"
    b = _one("__global__ void k(int* y) { volatile int* f = y; }")["k"]
    assert b.var_types["f"] == "volatile int*"


def test_calls_loops_asm_and_folded_device_helper():
    k = _one(KERNEL)["row_sum"]
    names = [c.name for c in k.calls]
    assert "ptx:cp.async.cg.shared.global" in names and "asm" in names  # predicate and .reg dropped
    shfl = k.calls_named("__shfl_xor_sync")[0]
    assert shfl.loop_depth == 1 and k.helper_at(shfl.line) == "warp_sum"  # folded from the __device__ helper
    asm = k.calls_named("ptx:cp.async.cg.shared.global")[0]
    assert asm.loop_depth == 1 and asm.loop_line == KERNEL.splitlines().index(
        "  for (int i = threadIdx.x; i < n; i += blockDim.x) {") + 1
    unrolled = [lp for lp in k.loops if lp.kwargs.get("pragma") == "unroll"]
    assert len(unrolled) == 1 and unrolled[0].targets == ["o"]
    assert "warp_sum" not in _one(KERNEL)  # a helper is not a kernel ...
    helpers = _one(KERNEL, helpers=True)
    assert helpers["warp_sum"].kind == "helper"  # ... unless asked for


def test_launch_site_with_config_and_host_calls_around_it():
    k = _one(KERNEL)["row_sum"]
    (ln,) = k.launches
    assert (ln.kernel, ln.grid, ln.host_function) == ("row_sum", "rows", "launch")
    assert ln.kwargs == {"block": "256", "smem": "0", "stream": "stream"}
    assert "cudaMemsetAsync" in ln.calls_before and "cudaGetLastError" in ln.calls_after


def test_python_bindings_with_owner_siblings_and_folded_host_helpers():
    units = _one(BINDING, "ext.cpp")
    assert set(units) == {"dispatch", "combine", "ping"}
    d = units["dispatch"]
    assert d.kind == "binding"
    assert d.folded == {"wait_for": [5, 5]}  # the spin-wait lives in a host helper it calls
    assert any(lp.kind == "while" for lp in d.loops)
    assert [(b["python_name"], b["self"], b["releases_gil"]) for b in d.bindings] == [
        ("dispatch", True, False), ("combine", False, True)]
    c = units["combine"]
    own = next(b for b in c.bindings if b["self"])
    assert own["guards"] == ["py::call_guard<py::gil_scoped_release>()"] and own["owner"] == "Buffer"
    assert "py::gil_scoped_release" in c.names and "cudaDeviceSynchronize" in {x.name for x in c.calls}
    assert units["ping"].bindings[0]["owner"] == "module"
    assert any(n["text"] == "blocks until the peer is done" for n in d.notes)


def test_no_unit_and_broken_code_give_empty_or_partial_results_never_errors():
    assert extract("int add(int a, int b) { return a + b; }", "m.cpp") == []
    broken = "__global__ void k(float* x) { x[0] = ; if ( { }\n__global__ void ok(float* y) { y[0] = 1; }"
    assert "ok" in {k.name for k in extract(broken, "b.cu")}  # tree-sitter recovers


def test_deep_nesting_does_not_recurse():
    expr = "(" * 3000 + "x" + ")" * 3000
    found = extract(f"__global__ void k(float* x) {{ float y = {expr}; }}", "deep.cu")
    assert [k.name for k in found] == ["k"]


def test_suggest_reads_a_cuda_file(tmp_path):
    from skel.retriever.suggest import load_kernels

    p = tmp_path / "k.cu"
    p.write_text(KERNEL)
    assert [k.name for k in load_kernels(p)] == ["row_sum"]
    q = tmp_path / "helpers.cuh"
    q.write_text("__device__ float sq(float x) { return x * x; }\n// __global__ kernels live elsewhere\n")
    from skel.errors import SuggestError

    with pytest.raises(SuggestError, match="no __global__ kernel or Python-bound function"):
        load_kernels(q)


def test_qualifier_macros_of_cutlass_and_of_the_file_are_expanded():
    src = ("#define DEVICE_INLINE __device__ __forceinline__\n"
           "DEVICE_INLINE float sq(float x) { return x * x; }\n"
           "template <int N>\n"
           "CUTLASS_GLOBAL void __launch_bounds__(N, 1) k(float* y) { y[threadIdx.x] = sq(2.f); }\n")
    (k,) = extract(src, "gemm.cuh")
    assert (k.name, k.line_start, k.folded) == ("k", 3, {"sq": [2, 2]})
    assert "CUTLASS_GLOBAL" in k.source  # units show the source as written


def test_a_binding_is_found_when_a_macro_hides_its_class():
    """tree-sitter-cpp drops a struct whose body opens with a macro statement it cannot expand
    (DeepEP's `EP_STATIC_ASSERT(...);`): the `.def(&Buffer::f)` still finds the one `f`, and a
    sibling that releases the GIL in its body says so."""
    src = BINDING.replace("struct Buffer {\n", "struct Buffer {\n  EP_STATIC_ASSERT(sizeof(int) == 4, \"int\");\n")
    units = _one(src, "ext.cpp")
    assert {"dispatch", "combine"} <= set(units)
    assert [b["releases_gil"] for b in units["dispatch"].bindings] == [False, True]


def test_cluster_dims_and_align_qualifiers_parse():
    src = ("__global__ void __launch_bounds__(128, 1) __cluster_dims__(2, 1, 1)\n"
           "gemm(float* y) {\n  __shared__ __align__(128) float tile[64];\n  y[threadIdx.x] = tile[0];\n}\n")
    k = _one(src)["gemm"]
    assert k.decorator("__cluster_dims__").list_items == ["2", "1", "1"]
    assert k.decorator("__launch_bounds__").list_items == ["128", "1"] and "__shared__" in k.names


def test_skel_suggest_on_a_cu_file_explains_with_line_numbers():
    """`skel suggest kernel.cu` answers like `skel suggest kernel.py`: exit 0 on a match, each
    suggestion's "why" lines inside the kernel, the C++ template shown."""
    import json
    import re

    from click.testing import CliRunner

    from skel.cli import cli
    from skel.skeletons.registry import fixture_path

    path = str(fixture_path("warp-shuffle-reduction"))
    r = CliRunner().invoke(cli, ["suggest", path, "--kernel", "row_sum_squares", "--json"])
    assert r.exit_code == 0, r.output
    (res,) = json.loads(r.output)["kernels"]
    top = {s["id"]: s for s in res["suggestions"]}["warp-shuffle-reduction"]
    lines = [int(n) for w in top["why"] for n in re.findall(r"\d+", w.rsplit("(line", 1)[-1]) if "(line" in w]
    assert lines and all(res["line_start"] <= n <= res["line_end"] for n in lines), top["why"]
    assert "__shfl_xor_sync" in top["after"] and "__global__" in top["before"]
    text = CliRunner().invoke(cli, ["suggest", path, "--kernel", "row_sum_squares"])
    assert text.exit_code == 0 and "warp-shuffle-reduction" in text.output and "(line " in text.output


def test_a_cudaLaunchKernelEx_launch_reads_its_shape_from_the_config():
    src = ("__global__ void k(float* y) { y[threadIdx.x] = 0; }\n"
           "void run(float* y, cudaStream_t s) {\n  cudaLaunchConfig_t cfg = {};\n  cfg.gridDim = dim3(132);\n"
           "  cfg.blockDim = dim3(256);\n  cfg.stream = s;\n  cudaLaunchKernelEx(&cfg, k, y);\n}\n")
    (ln,) = _one(src)["k"].launches
    assert (ln.grid, ln.kwargs, ln.host_function) == ("dim3(132)", {"via": "cudaLaunchKernelEx", "block": "dim3(256)"},
                                                      "run")
