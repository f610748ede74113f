"""cuda-pragma-unroll-fixed-trip: which rolled loops over per-thread arrays it reads, and when
unrolling them pays (a runtime bound inside a hot loop), stays open (a constant trip nvcc may
already unroll) or does not pay (a trip the sizes put past 32)."""

from __future__ import annotations

import textwrap

import pytest

from skel.kernels.extract import extract
from skel.kernels.workload import Workload
from skel.skeletons import registry
from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN
from skel.skeletons.predicates.cuda_loops import rolled_array_loops

ID = "cuda-pragma-unroll-fixed-trip"

RUNTIME_IN_LOOP = """
__global__ void cols(const float* x, const float* w, float* y, int K, int N, int per_thread) {
  float acc[8] = {};
  for (int k = 0; k < K; ++k) {
    for (int j = 0; j < per_thread; ++j) acc[j] += x[k] * w[k * N + j];
  }
  for (int j = 0; j < per_thread; ++j) y[j] = acc[j];
}
"""

RUNTIME_NAMED_SIZE = """
template <int kMax>
__global__ void cols(const float* x, float* y, int K, int n) {
  float acc[kMax] = {};
  for (int k = 0; k < K; ++k) {
    for (int j = 0; j < n; ++j) acc[j] += x[k * n + j];
  }
  y[threadIdx.x] = acc[0];
}
"""

CONSTANT_TRIP = """
template <int kVec>
__global__ void scale(const float* x, float* y) {
  float v[kVec];
  for (int i = 0; i < kVec; ++i) v[i] = x[threadIdx.x * kVec + i];
  for (int i = 0; i < kVec; ++i) y[threadIdx.x * kVec + i] = 2.f * v[i];
}
"""

LOCAL_CONSTEXPR = """
__global__ void scale(const float* x, float* y) {
  constexpr int kVec = 4;
  constexpr int kHalf = kVec / 2;
  float v[kVec];
  for (int i = 0; i < kHalf; ++i) v[i] = x[threadIdx.x * kVec + i];
  y[threadIdx.x] = v[0];
}
"""


def _kernel(src: str):
    return extract(textwrap.dedent(src), "k.cu")[0]


def _payoff(src: str, *shapes: str):
    k = _kernel(src)
    sk = registry.get(ID)
    a = sk.assess(k)
    assert a.present is None and not a.failed, (a.present, a.failed)
    assert sk.payoff is not None
    return sk.payoff(k, Workload.parse(list(shapes)))


def test_a_runtime_bound_inside_a_loop_pays_with_the_array_size():
    p = _payoff(RUNTIME_IN_LOOP)
    assert p.state == PAYS, p
    assert "local memory" in p.reason and "8" in p.reason


def test_a_named_array_size_waits_for_its_value_then_pays_or_not():
    p = _payoff(RUNTIME_NAMED_SIZE)
    assert p.state == UNKNOWN and p.needs == "--shape kMax=N", p
    assert _payoff(RUNTIME_NAMED_SIZE, "kMax=8").state == PAYS
    assert _payoff(RUNTIME_NAMED_SIZE, "kMax=128").state == DOES_NOT_PAY


def test_a_constant_trip_stays_conditional_and_a_long_one_does_not_pay():
    p = _payoff(CONSTANT_TRIP)
    assert p.state == UNKNOWN and "nvcc" in p.reason and not p.needs, p
    assert _payoff(CONSTANT_TRIP, "kVec=8").state == UNKNOWN
    assert _payoff(CONSTANT_TRIP, "kVec=64").state == DOES_NOT_PAY


def test_local_constexprs_give_the_trip_count():
    (al,) = rolled_array_loops(_kernel(LOCAL_CONSTEXPR))
    assert al.constant and al.trip == 2 and al.size == 4


@pytest.mark.parametrize("loop", [
    "#pragma unroll\n  for (int i = 0; i < 4; ++i) v[i] = x[i];",          # already unrolled
    "#pragma unroll 1\n  for (int i = 0; i < 4; ++i) v[i] = x[i];",        # kept rolled on purpose
    "for (int i = threadIdx.x; i < 4; i += blockDim.x) v[i] = x[i];",     # a thread-dependent start
    "for (int i = 0; i < 4; ++i) v[(threadIdx.x + i) % 4] = x[i];",       # the index stays dynamic
    "for (int i = 0; i < 4; ++i) y[i] = x[i];",                           # no per-thread array indexed
])
def test_not_the_subject(loop):
    src = f"__global__ void f(const float* x, float* y) {{\n  float v[4];\n  {loop}\n  y[0] = v[0];\n}}\n"
    a = registry.get(ID).assess(_kernel(src))
    assert a.failed, loop


def test_a_host_function_is_not_a_kernel():
    src = """
    #include <torch/extension.h>
    void sizes(torch::Tensor t, int n) {
      int64_t s[8];
      for (int i = 0; i < n; ++i) s[i] = t.size(i);
    }
    PYBIND11_MODULE(m, m) { m.def("sizes", &sizes); }
    """
    units = extract(textwrap.dedent(src), "b.cu")
    assert units and all(registry.get(ID).assess(u).failed for u in units)
