"""cuda-syncwarp-warp-private: how many warps a block has (launch bounds, the warp-indexed dimension of
the slice, a flat slice's size over its stride), and what that makes of the payoff: several warps pay,
one warp does not, a count the source does not give waits on `--shape`."""

from __future__ import annotations

from skel.kernels.extract import extract
from skel.kernels.workload import Workload
from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN
from skel.skeletons.catalog.cuda_syncwarp_warp_private.skeleton import SKELETON

TILE = """
__global__ void {bounds} tiles(const float* x, float* y, int n) {{
  __shared__ float tile[{warps}][32][33];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int base = blockIdx.x * 8; base < n; base += gridDim.x * 8) {{
    for (int r = 0; r < 32; ++r) tile[warp][r][lane] = x[(base + warp) * 1024 + r * 32 + lane];
    __syncthreads();
    for (int r = 0; r < 32; ++r) y[(base + warp) * 1024 + r * 32 + lane] = tile[warp][lane][r];
    __syncthreads();
  }}
}}
"""

FLAT = """
template <int kWarps>
__global__ void rows(const float* x, float* y, int rows) {
  __shared__ float red[kWarps * 32];
  const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
  for (int r0 = blockIdx.x * kWarps; r0 < rows; r0 += gridDim.x * kWarps) {
    red[w * 32 + lane] = x[(r0 + w) * 32 + lane];
    __syncthreads();
    if (lane == 0) y[r0 + w] = red[w * 32 + 31];
    __syncthreads();
  }
}
"""


def _payoff(src: str, *shape: str):
    (k,) = extract(src, "k.cu")
    a = SKELETON.assess(k)
    assert a.present is None and not a.failed, a.failed
    return SKELETON.payoff(k, Workload.parse(list(shape)))


def test_launch_bounds_give_the_warps():
    p = _payoff(TILE.format(bounds="__launch_bounds__(256)", warps="WARPS"))
    assert p.state == PAYS and "8 warps per block" in p.reason


def test_warp_indexed_dimension_gives_the_warps():
    p = _payoff(TILE.format(bounds="", warps="4"))
    assert p.state == PAYS and "4 warps per block" in p.reason and "`tile[4]`" in p.reason


def test_one_warp_block_does_not_pay():
    p = _payoff(TILE.format(bounds="__launch_bounds__(32)", warps="1"))
    assert p.state == DOES_NOT_PAY and "one warp" in p.reason


def test_named_warp_count_waits_on_its_size():
    p = _payoff(TILE.format(bounds="", warps="WARPS"))
    assert p.state == UNKNOWN and p.needs == "--shape WARPS=N"
    assert _payoff(TILE.format(bounds="", warps="WARPS"), "WARPS=2").state == PAYS


def test_flat_slice_counts_size_over_stride():
    p = _payoff(FLAT)
    assert p.state == UNKNOWN and p.needs == "--shape kWarps=N"
    p = _payoff(FLAT, "kWarps=16")
    assert p.state == PAYS and "16 warps per block" in p.reason
    assert _payoff(FLAT, "kWarps=1").state == DOES_NOT_PAY
