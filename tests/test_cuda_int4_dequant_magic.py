"""cuda-int4-dequant-magic: which conversions it sees, and its payoff (fused GEMV pays, stand-alone
dequantiser does not, a value staged elsewhere is conditional)."""

from __future__ import annotations

from skel.kernels.cuda import extract_file
from skel.kernels.workload import Workload
from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN
from skel.skeletons.catalog.cuda_int4_dequant_magic.skeleton import SKELETON, _conversion_lines, magic_dequant_pays


def _kernel(src: str):
    (k,) = extract_file(src, "k.cu")
    return k


GEMV = """
__global__ void gemv(const float* x, const unsigned* qw, const float* s, float* y, int K, int N) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0.f;
  for (int kp = 0; kp < K / 8; ++kp) {
    unsigned q = qw[kp * N + col];
    const float zero = (float)((qw[col] >> 28) & 0xF);
    for (int j = 0; j < 8; ++j) {
      const float w = (float)(q & 0xF) - zero;
      acc += x[kp * 8 + j] * w * s[col];
      q = q >> 4;
    }
  }
  y[col] = acc;
}
"""

DEQUANT = """
__global__ void dq(const unsigned* qw, half* out, long n) {
  const long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  const unsigned q = qw[i];
  for (int j = 0; j < 8; ++j) out[i * 8 + j] = __int2half_rn((q >> (4 * j)) & 0xF);
}
"""

STAGED = """
__global__ void stage(const unsigned* qw, float* y, long n) {
  __shared__ half tile[256];
  const unsigned q = qw[blockIdx.x * 32 + threadIdx.x / 8];
  tile[threadIdx.x] = __int2half_rn((q >> (4 * (threadIdx.x % 8))) & 0xF);
  __syncthreads();
  y[blockIdx.x * 256 + threadIdx.x] = __half2float(tile[255 - threadIdx.x]);
}
"""


def test_fused_gemv_pays_and_names_the_per_weight_conversion():
    k = _kernel(GEMV)
    assert _conversion_lines(k) == [7, 9]  # the group's zero and the per-weight C cast after `q = q >> 4`
    p = magic_dequant_pays(k, Workload())
    assert p.state == PAYS
    assert "unpacked at line 9" in p.reason and "accumulated at line 10" in p.reason
    assert SKELETON.assess(k).kind == "match"


def test_standalone_dequantiser_does_not_pay():
    p = magic_dequant_pays(_kernel(DEQUANT), Workload())
    assert p.state == DOES_NOT_PAY and "only stored (line 5)" in p.reason


def test_value_staged_in_shared_memory_is_conditional():
    p = magic_dequant_pays(_kernel(STAGED), Workload())
    assert p.state == UNKNOWN and "line 5" in p.reason


def test_lookup_tables_and_plain_int8_casts_are_no_conversion_of_a_field():
    lut = _kernel("""
__global__ void nf4(const unsigned char* q, const float* code, half* out, long n) {
  const long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  out[i] = __float2half(code[(q[i] >> 4) & 0xF]);
}
""")
    int8 = _kernel("""
__global__ void i8(const signed char* w, float* out, long n) {
  const long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  out[i] = static_cast<float>(w[i]) * 0.5f;
}
""")
    assert _conversion_lines(lut) == [] and _conversion_lines(int8) == []
    assert magic_dequant_pays(lut, Workload()).state == UNKNOWN
