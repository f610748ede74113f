"""cuda-fast-math-intrinsics: which precise transcendentals it counts as hot (in a loop, or in a
helper called from one), and when the SFU intrinsics pay (the loop reads no memory, or the math
outweighs the accesses), do not pay (one exp per element past L2) or stay open."""

from __future__ import annotations

from skel.kernels.extract import extract
from skel.kernels.workload import Workload
from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN
from skel.skeletons.catalog.cuda_fast_math_intrinsics.skeleton import SKELETON, fast_math_pays, precise_loop_calls

REGISTER_LOOP = """
__global__ void scan(const float* u, const float* dt, const float* A, float* y, int L, int D) {
  const int d = blockIdx.x * blockDim.x + threadIdx.x;
  float a[16], h[16] = {};
  for (int n = 0; n < 16; ++n) a[n] = A[d * 16 + n];
  for (int t = 0; t < L; ++t) {
    const float x = dt[t * D + d], v = u[t * D + d];
    float out = 0.f;
    for (int n = 0; n < 16; ++n) {
      h[n] = expf(x * a[n]) * h[n] + v;
      out += h[n];
    }
    y[t * D + d] = out;
  }
}
"""

ELEMENTWISE_EXP = """
__global__ void sigmoid(const float* x, float* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = 1.f / (1.f + expf(-x[i]));
}
"""

ELEMENTWISE_POW = """
__global__ void power(const float* x, float* y, float p, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = powf(x[i], p);
}
"""

HELPER_IN_LOOP = """
__device__ float rescale(float m_prev, float m) { return exp(m_prev - m); }
__global__ void decode(const float* s, float* out, int n) {
  float m = -1e30f, d = 0.f;
  for (int j = 0; j < n; ++j) {
    const float x = s[j];
    const float m_new = fmaxf(m, x);
    d = d * rescale(m, m_new) + rescale(x, m_new);
    m = m_new;
  }
  out[threadIdx.x] = d;
}
"""

ALREADY_FAST = """
__global__ void sigmoid_fast(const float* x, float* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = __fdividef(1.f, 1.f + __expf(-x[i]));
}
"""


def _k(src: str):
    return extract(src, "k.cu")[0]


def test_a_loop_reading_no_memory_pays():
    k = _k(REGISTER_LOOP)
    assert [c.name for c in precise_loop_calls(k)] == ["expf"]
    p = fast_math_pays(k, Workload())
    assert p.state == PAYS and "reads no global memory" in p.reason


def test_one_exp_per_element_is_memory_bound_past_l2_and_open_below():
    k = _k(ELEMENTWISE_EXP)
    assert fast_math_pays(k, Workload.parse(["x=8192x8192"])).state == DOES_NOT_PAY  # 256 MiB of fp32
    small = fast_math_pays(k, Workload.parse(["x=1024x1024"]))
    assert small.state == UNKNOWN and small.needs.startswith("--shape elements=")


def test_a_heavy_call_per_element_stays_open_even_past_l2():
    p = fast_math_pays(_k(ELEMENTWISE_POW), Workload.parse(["x=8192x8192"]))
    assert p.state == UNKNOWN and "powf" in p.reason


def test_a_helper_called_in_a_loop_is_hot():
    k = _k(HELPER_IN_LOOP)
    assert [c.name for c in precise_loop_calls(k)] == ["exp"]
    assert SKELETON.assess(k).present is None and not SKELETON.assess(k).failed


def test_intrinsics_already_used_are_present():
    k = _k(ALREADY_FAST)
    assert precise_loop_calls(k) == []
    assert SKELETON.assess(k).present is not None
