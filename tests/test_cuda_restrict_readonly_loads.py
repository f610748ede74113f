"""cuda-restrict-readonly-loads: which pointer parameters it reads as read-only and unqualified,
and when qualifying them pays (a compile-time-trip loop interleaving their reads with stores),
stays open (a runtime loop, a read after a store) or is not suggested (reads before the store)."""

from __future__ import annotations

import textwrap

from skel.kernels.extract import extract
from skel.kernels.workload import Workload
from skel.skeletons import registry
from skel.skeletons.base import PAYS, UNKNOWN

ID = "cuda-restrict-readonly-loads"

UNROLLED = """
__global__ void scale_rows(float* y, const float* x, const float* s, int n) {
  const int base = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  #pragma unroll
  for (int j = 0; j < 4; ++j) y[base + j] = x[base + j] * s[blockIdx.x];
}
"""

LITERAL_TRIP = """
__global__ void scale_rows(float* y, const float* x, const float* s, int n) {
  const int base = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  for (int j = 0; j < 4; ++j) y[base + j] = x[base + j] * s[blockIdx.x];
}
"""

GRID_STRIDE = """
__global__ void scale(float* y, const float* x, const float* s, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = x[i] * s[0];
}
"""

READ_AFTER_STORE = """
__global__ void split(float* a, float* b, const float* ab, int d) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  a[i] = ab[2 * i];
  b[i] = ab[2 * i + 1];
}
"""

READS_FIRST = """
__global__ void add(float* y, const float* x, const float* z, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + z[i];
}
"""

VIA_POINTER = """
__global__ void rows(float* out, const float* in, int d) {
  const float* x = in + blockIdx.x * d;
  float* o = out + blockIdx.x * d;
  #pragma unroll
  for (int j = 0; j < 4; ++j) *(o + threadIdx.x + j * 32) = x[threadIdx.x + j * 32] * 2.f;
}
"""


def _assess(src: str):
    k = extract(textwrap.dedent(src), "k.cu")[0]
    sk = registry.get(ID)
    return sk, k, sk.assess(k)


def _payoff(src: str):
    sk, k, a = _assess(src)
    assert a.present is None and not a.failed, (a.present, a.failed)
    assert sk.payoff is not None
    return sk.payoff(k, Workload())


def test_a_compile_time_trip_loop_pays():
    for src in (UNROLLED, LITERAL_TRIP, VIA_POINTER):
        p = _payoff(src)
        assert p.state == PAYS and "compile-time trip" in p.reason, p


def test_a_runtime_loop_or_a_read_after_a_store_stays_open():
    p = _payoff(GRID_STRIDE)
    assert p.state == UNKNOWN and "runtime-trip loop" in p.reason, p
    p = _payoff(READ_AFTER_STORE)
    assert p.state == UNKNOWN and "follows a store" in p.reason, p


def test_reads_before_the_only_store_are_not_the_subject():
    _, _, a = _assess(READS_FIRST)
    assert a.failed


def test_qualified_inputs_or_output_are_not_the_subject():
    qualified_inputs = ("const float* x, const float* s", "const float* __restrict__ x, const float* __restrict__ s")
    for before, after in (qualified_inputs, ("float* y,", "float* __restrict__ y,")):
        _, _, a = _assess(UNROLLED.replace(before, after))
        assert a.failed, before
    _, _, a = _assess(UNROLLED.replace("x[base + j] * s[blockIdx.x]", "__ldg(&x[base + j]) * __ldg(&s[blockIdx.x])"))
    assert a.present is not None
