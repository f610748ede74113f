"""The CUDA C++ example pairs: built as one extension per pair, importable without a GPU, and
their kernels compile for sm_90 (where nvcc is installed; the GPU run is the lead's H200 job)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from skel.skeletons.pairs import cuda as _cuda
from skel.skeletons.pairs import example_path, module_name

CUDA_PAIRS = ("vectorized-128bit-access", "warp-shuffle-reduction", "cp-async-multistage", "launch-bounds-occupancy",
              "cuda-programmatic-dependent-launch", "persistent-tile-scheduler", "tma-store-epilogue",
              "cuda-pragma-unroll-fixed-trip", "cuda-half2-packed-math", "cuda-fast-math-intrinsics",
              "cuda-fp32-partial-accumulation", "cuda-restrict-readonly-loads", "cuda-smem-padding-bank-conflicts",
              "cuda-int64-offsets", "cuda-syncwarp-warp-private", "cuda-smem-reuse-barrier",
              "cuda-int4-dequant-magic", "cuda-ldmatrix-fragment-loads")

#: just enough of torch's C++ API for the examples' host wrappers to compile without torch's
#: CUDA headers (the CPU wheel has none): the kernels and launch code are the real ones
STUB = """#pragma once
#include <cstdint>
#include <algorithm>
#include <cuda_runtime.h>
namespace at { enum ScalarType { kFloat, kBFloat16 }; }
namespace c10 { namespace cuda { inline cudaStream_t getCurrentCUDAStream() { return 0; } } }
namespace torch { struct Tensor { int64_t size(int) const; int64_t numel() const; int64_t element_size() const;
  at::ScalarType scalar_type() const; bool is_contiguous() const; void* data_ptr() const;
  template <typename T> T* data_ptr() const; }; }
#define TORCH_CHECK(c, ...) ((void)(c))
"""


def test_every_runnable_cuda_example_is_listed_here_and_in_the_gpu_script():
    """A CUDA example with a harness (``SHAPES`` beside ``before_cuda``) is a pair: it is built and
    compiled here, and the GPU script and ``benchmarks.evidence.cuda_pairs`` run it."""
    from benchmarks.evidence.cuda_pairs import CUDA_PAIRS as BENCH_PAIRS
    from skel.skeletons import registry

    runnable = set()
    for sk in registry.all_skeletons():
        path = example_path(sk.id)
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
        if "before_cuda = " in text and "\nSHAPES" in text:
            runnable.add(sk.id)
    assert runnable == set(CUDA_PAIRS) == set(BENCH_PAIRS)
    script = (Path(__file__).parent.parent / "benchmarks" / "gpu" / "cuda_pairs_gpu.sh").read_text(encoding="utf-8")
    ids = re.search(r"IDS=\$\{IDS:-([\w,-]+)\}", script)
    assert ids and set(ids.group(1).split(",")) == set(CUDA_PAIRS)


def _module(sk_id: str):
    pytest.importorskip("torch")
    from skel.verifier.harness import Harness, import_file

    return Harness.from_module(import_file(example_path(sk_id), module_name(sk_id))).module


def test_sides_share_one_translation_unit_in_two_namespaces():
    before = "#include <a.h>\n__global__ void k() {}\nvoid f(int x) { k<<<1, 1>>>(); }\n"
    after = "#include <a.h>\n#include <b.h>\n__global__ void k() { }\nvoid f(int x) { k<<<2, 1>>>(); }\n"
    src = _cuda.combined_source(before, after)
    assert src.count("#include <a.h>") == 1 and "#include <b.h>" in src
    assert src.index("#include <b.h>") < src.index("namespace before {") < src.index("namespace after {")
    binding = _cuda.bindings("void f(int x)")
    assert 'm.def("before", &before::f);' in binding and "namespace after { void f(int x); }" in binding
    with pytest.raises(ValueError):
        _cuda.bindings("not a signature")


@pytest.mark.parametrize("sk_id", CUDA_PAIRS)
def test_importing_compiles_nothing_and_the_cpu_is_told_why(sk_id, monkeypatch):
    def no_build(*a, **k):
        raise AssertionError("importing an example must not compile it")

    monkeypatch.setattr("torch.utils.cpp_extension.load_inline", no_build, raising=False)
    mod = _module(sk_id)
    assert "needs a CUDA GPU and nvcc" in mod.CPU_SKIP
    import torch

    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="needs a CUDA GPU and nvcc"):
            mod._ext()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("sk_id", CUDA_PAIRS)
def test_both_sides_compile_for_sm90(sk_id, tmp_path: Path):
    mod = _module(sk_id)
    (tmp_path / "c10" / "cuda").mkdir(parents=True)
    (tmp_path / "c10" / "cuda" / "CUDAStream.h").write_text(STUB)
    src = tmp_path / "pair.cu"
    src.write_text(_cuda.combined_source(mod.before_cuda, mod.after_cuda))
    out = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-O3", f"-I{tmp_path}", "-c", str(src),
                          "-o", str(tmp_path / "pair.o")], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
