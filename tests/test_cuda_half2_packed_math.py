"""cuda-half2-packed-math: which scalar 16-bit operations it counts as pairable, and when packing
them pays (math on reused operands, or many operations per access), does not pay (a few operations
per element on tensors past L2: memory-bound) or stays open (no sizes)."""

from __future__ import annotations

from skel.kernels.extract import extract
from skel.kernels.workload import Workload
from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN
from skel.skeletons.catalog.cuda_half2_packed_math.skeleton import SKELETON, half2_pays, scalar_half_calls

REUSED = """
#include <cuda_fp16.h>
__global__ void gemv(const half* a, const half* w, float* c, int K, int N) {
  __shared__ half a_s[8][256];
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  half acc[8];
  for (int k = 0; k < 256; ++k) {
    const half wv = w[k * N + n];
    for (int b = 0; b < 8; ++b) acc[b] = __hfma(a_s[b][k], wv, acc[b]);
  }
  c[n] = __half2float(acc[0]);
}
"""

ELEMENTWISE = """
#include <cuda_fp16.h>
__global__ void scale(half* y, const half* x, half s, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __hmul(x[i], s);
}
"""

CHAIN = """
#include <cuda_fp16.h>
__global__ void poly(half* y, const half* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const half v = x[i];
  const half one = __float2half(1.f);
  half p = __hfma(v, __float2half(0.5f), one);
  half q = __hmul(v, v);
  half r = __hfma(q, __float2half(0.1f), p);
  half e = hexp(__hneg(v));
  y[i] = __hmul(__hadd(r, e), hrcp(__hadd(one, q)));
}
"""

GATHER = """
#include <cuda_fp16.h>
__global__ void gather(half* y, const half* t, const int* ids, half s, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __hmul(t[ids[i]], s);
}
"""


def _k(src: str):
    return extract(src, "k.cu")[0]


def test_reused_operands_pay_whatever_the_sizes():
    k = _k(REUSED)
    assert [c.name for c in scalar_half_calls(k)] == ["__hfma"]
    p = half2_pays(k, Workload())
    assert p.state == PAYS and "reads no global memory" in p.reason


def test_many_operations_per_access_pay():
    k = _k(CHAIN)
    assert len(scalar_half_calls(k)) >= 8
    assert half2_pays(k, Workload()).state == PAYS


def test_one_operation_per_element_is_memory_bound_past_l2_and_open_below():
    k = _k(ELEMENTWISE)
    big = half2_pays(k, Workload.parse(["x=8192x8192"]))  # 128 MiB of fp16
    assert big.state == DOES_NOT_PAY and "8192" not in big.needs and "past L2" in big.reason
    small = half2_pays(k, Workload.parse(["x=1024x1024"]))  # 2 MiB: may stay in L2
    assert small.state == UNKNOWN and small.needs.startswith("--shape elements=")
    assert half2_pays(k, Workload()).state == UNKNOWN


def test_gathered_operands_are_not_pairable():
    k = _k(GATHER)
    assert scalar_half_calls(k) == []
    assert SKELETON.assess(k).failed


STAGED = """
#include <cuda_fp16.h>
__global__ void stage_sum(const half* a, half* out, int n) {
  extern __shared__ half smem[];
  for (int i = threadIdx.x; i < 256; i += 32) smem[i] = __hmul(a[blockIdx.x * 256 + i], __float2half(0.5f));
  __syncthreads();
  half acc = __float2half(0.f);
  for (int j = 0; j < 16; ++j) acc = __hadd(acc, smem[threadIdx.x * 16 + j]);
  out[blockIdx.x * 32 + threadIdx.x] = acc;
}
"""


def test_a_shared_operand_read_every_trip_is_no_reuse():
    """A loop without global reads whose operand changes every trip (`smem[... + j]`) is not the
    reuse case: one shared load per operation, nothing makes the math dominate."""
    k = _k(STAGED)
    assert half2_pays(k, Workload()).state == UNKNOWN


def test_the_example_before_pays_on_reuse():
    from skel.skeletons.pairs import example_path

    src = example_path("cuda-half2-packed-math").read_text(encoding="utf-8")
    k = _k(src.split('before_cuda = r"""')[1].split('"""')[0])
    p = half2_pays(k, Workload())
    assert p.state == PAYS and "`wv`" in p.reason
