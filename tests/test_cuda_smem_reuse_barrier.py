"""cuda-smem-reuse-barrier: which calls count as block barriers (a same-file helper holding one, a CUB
collective whose storage is not seen, warp-level `*_sync` calls not), and what the payoff names: the
read, the write and the loop whose next trip writes."""

from __future__ import annotations

from skel.kernels.extract import extract
from skel.kernels.workload import Workload
from skel.skeletons.base import PAYS
from skel.skeletons.catalog.cuda_smem_reuse_barrier.skeleton import SKELETON

LOOP = """
__device__ void {helper}() {{ {body} }}
__global__ void rows(const float* x, float* y, int rows) {{
  __shared__ float partial[32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int row = blockIdx.x; row < rows; row += gridDim.x) {{
    float s = x[row * blockDim.x + threadIdx.x];
    if (lane == 0) partial[warp] = s;
    __syncthreads();
    float total = 0.f;
    for (int w = 0; w < 8; ++w) total += partial[w];
    y[row * blockDim.x + threadIdx.x] = total;
    {call}
  }}
}}
"""


def _kernel(src: str):
    return next(k for k in extract(src, "k.cu") if k.name == "rows" or k.name == "scan_twice")


def _matches(src: str) -> bool:
    a = SKELETON.assess(_kernel(src))
    return a.present is None and not a.failed


def test_loop_reuse_races_and_the_payoff_names_lines():
    src = LOOP.format(helper="noop", body="", call="")
    assert _matches(src)
    p = SKELETON.payoff(_kernel(src), Workload())
    assert p.state == PAYS
    assert "`partial` is read at line 11" in p.reason and "written at line 8" in p.reason
    assert "next trip of the loop at line 6" in p.reason


def test_a_helper_holding_a_barrier_is_a_barrier():
    assert not _matches(LOOP.format(helper="block_sync_all", body="__syncthreads();", call="block_sync_all();"))


def test_a_helper_named_for_a_barrier_is_one_but_a_warp_sync_is_not():
    assert not _matches(LOOP.format(helper="noop", body="", call="cta_sync();"))
    assert _matches(LOOP.format(helper="noop", body="", call="__syncwarp();"))
    assert _matches(LOOP.format(helper="noop", body="", call="y[0] = __shfl_xor_sync(0xffffffffu, y[0], 1);"))


CUB = """
template <int B>
__global__ void scan_twice(int* out, const int* in) {{
  using BlockScan = cub::BlockScan<int, B>;
  __shared__ typename BlockScan::TempStorage temp;
  int v = in[threadIdx.x], a, b;
  BlockScan{{temp}}.ExclusiveSum(v, a);
  {between}
  BlockScan{{temp}}.InclusiveSum(v, b);
  out[threadIdx.x] = a + b;
}}
"""


def test_brace_initialised_collectives_on_one_storage():
    assert _matches(CUB.format(between=""))
    assert not _matches(CUB.format(between="__syncthreads();"))
