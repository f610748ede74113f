"""cuda-smem-padding-bank-conflicts: the bank-conflict degree of a column access from the row
length, the element width and the row count, and when padding pays (8-way or worse), stays
open (a size not given, a 2- to 4-way conflict) or does not pay (conflict-free)."""

from __future__ import annotations

import textwrap

import pytest

from skel.kernels.extract import extract
from skel.kernels.workload import Workload
from skel.skeletons import registry
from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN
from skel.skeletons.catalog.cuda_smem_padding_bank_conflicts.skeleton import _degree

ID = "cuda-smem-padding-bank-conflicts"

TEMPLATE_TILE = """
template <int kTile>
__global__ void transpose(__nv_bfloat16* out, const __nv_bfloat16* in, int n) {
  __shared__ __nv_bfloat16 tile[kTile][kTile];
  const int lane = threadIdx.x % 32;
  for (int r = threadIdx.y; r < kTile; r += blockDim.y) tile[r][lane] = in[r * n + lane];
  __syncthreads();
  for (int c = threadIdx.y; c < kTile; c += blockDim.y) out[c * n + lane] = tile[lane][c];
}
"""

LITERAL_TILE = """
__global__ void transpose(float* out, const float* in, int n) {
  __shared__ float tile[32][32];
  tile[threadIdx.y][threadIdx.x] = in[threadIdx.y * n + threadIdx.x];
  __syncthreads();
  out[threadIdx.y * n + threadIdx.x] = tile[threadIdx.x][threadIdx.y];
}
"""


def _payoff(src: str, *shapes: str):
    k = extract(textwrap.dedent(src), "k.cu")[0]
    sk = registry.get(ID)
    a = sk.assess(k)
    assert a.present is None and not a.failed, (a.present, a.failed)
    assert sk.payoff is not None
    return sk.payoff(k, Workload.parse(list(shapes)))


@pytest.mark.parametrize("row, width, rows, degree", [
    (32, 4, 32, 32), (33, 4, 32, 1), (16, 4, 32, 16), (17, 4, 32, 1),   # float
    (64, 2, 32, 32), (65, 2, 32, 2), (66, 2, 32, 1), (32, 2, 32, 16),   # bf16: pad by two elements
    (32, 8, 32, 16), (33, 8, 32, 1),                                     # double: a half-warp per pass
    (32, 1, 32, 8), (36, 1, 32, 1),                                      # int8: four to a word
    (32, 4, 4, 4),                                                       # 4 rows: 4 lanes on a column
])
def test_degree(row, width, rows, degree):
    assert _degree(row, width, rows) == degree


def test_a_literal_32_float_tile_pays():
    p = _payoff(LITERAL_TILE)
    assert p.state == PAYS and "32-way" in p.reason, p


def test_a_template_tile_waits_for_its_size_then_pays_stays_open_or_not():
    p = _payoff(TEMPLATE_TILE)
    assert p.state == UNKNOWN and p.needs == "--shape kTile=N", p
    assert _payoff(TEMPLATE_TILE, "kTile=64").state == PAYS            # 128-byte rows: 32-way
    mild = _payoff(TEMPLATE_TILE, "kTile=36")                          # 72-byte rows: 2-way
    assert mild.state == UNKNOWN and "2-way" in mild.reason, mild
    assert _payoff(TEMPLATE_TILE, "kTile=33").state == DOES_NOT_PAY   # 66-byte rows: conflict-free
