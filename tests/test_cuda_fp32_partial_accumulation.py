"""cuda-fp32-partial-accumulation: which 16-bit running sums it finds (carried across a run-time loop,
not an elementwise update or a max), and when the fp32 flush pays (a long reduction), does not pay
(a short one) or waits on the reduction length."""

from __future__ import annotations

from skel.kernels.extract import extract
from skel.kernels.workload import Workload
from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN
from skel.skeletons.catalog.cuda_fp32_partial_accumulation.skeleton import (
    SKELETON,
    carried_sums,
    partial_accumulation_pays,
)

HALF2_DOT = """
#include <cuda_fp16.h>
__global__ void dot(const half2* a, const half2* b, float* out, int n2) {
  half2 acc = __float2half2_rn(0.f);
  for (int i = threadIdx.x; i < n2; i += blockDim.x) acc = __hfma2(a[i], b[i], acc);
  out[threadIdx.x] = __low2float(acc) + __high2float(acc);
}
"""

BF16_SUM = """
#include <cuda_bf16.h>
__global__ void rowsum(const __nv_bfloat16* x, float* out, int dim) {
  __nv_bfloat16 s = __float2bfloat16(0.f);
  for (int i = threadIdx.x; i < dim; i += blockDim.x) s = __hadd(s, x[blockIdx.x * dim + i]);
  out[blockIdx.x] = __bfloat162float(s);
}
"""

ELEMENTWISE = """
#include <cuda_fp16.h>
__global__ void axpy(half2* y, const half2* x, half2 a, int n) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) y[i] = __hfma2(a, x[i], y[i]);
}
"""

FLUSHED = """
#include <cuda_fp16.h>
__global__ void dot(const half2* a, const half2* b, float* out, int n2) {
  float acc = 0.f;
  for (int i = threadIdx.x * 4; i < n2; i += blockDim.x * 4) {
    half2 part = __hmul2(a[i], b[i]);
    for (int j = 1; j < 4; ++j) part = __hfma2(a[i + j], b[i + j], part);
    acc += __low2float(part) + __high2float(part);
  }
  out[threadIdx.x] = acc;
}
"""


def _k(src: str):
    return extract(src, "k.cu")[0]


def test_a_long_fp16_reduction_pays_and_a_short_one_does_not():
    k = _k(HALF2_DOT)
    [(a, lp, kind)] = carried_sums(k)
    assert kind == "fp16" and "n2" in lp.args[1]
    # a thread-strided loop: taken as 256 threads sharing the n2 terms
    long = partial_accumulation_pays(k, Workload.parse(["n2=131072"]))
    assert long.state == PAYS and "512 updates" in long.reason
    assert partial_accumulation_pays(k, Workload.parse(["n2=2048"])).state == DOES_NOT_PAY
    assert partial_accumulation_pays(k, Workload.parse(["n2=16384"])).state == UNKNOWN
    open_ = partial_accumulation_pays(k, Workload())
    assert open_.state == UNKNOWN and open_.needs == "--shape n2=N"


def test_bf16_pays_at_shorter_lengths():
    k = _k(BF16_SUM)
    assert carried_sums(k)[0][2] == "bf16"
    assert partial_accumulation_pays(k, Workload.parse(["dim=16384"])).state == PAYS  # 64 updates per thread


def test_a_literal_stride_and_an_unrolled_inner_loop_count_updates():
    """The example's GEMV: K / 8 vectors, 32 lanes, 4 half2 FMAs per vector: 448 updates at K = 28,672."""
    from skel.skeletons.pairs import example_path

    src = example_path("cuda-fp32-partial-accumulation").read_text(encoding="utf-8")
    before = src.split('before_cuda = r"""')[1].split('"""')[0]
    k = _k(before)
    p = partial_accumulation_pays(k, Workload.parse(["K=28672"]))
    assert p.state == PAYS and "448 updates" in p.reason
    assert partial_accumulation_pays(k, Workload.parse(["K=256"])).state == DOES_NOT_PAY


def test_an_elementwise_update_is_no_running_sum():
    k = _k(ELEMENTWISE)
    assert carried_sums(k) == []
    assert SKELETON.assess(k).failed


def test_a_flushed_block_is_the_technique():
    k = _k(FLUSHED)
    assert carried_sums(k) == []
    assert SKELETON.assess(k).present is not None
