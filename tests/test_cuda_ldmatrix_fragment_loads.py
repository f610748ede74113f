"""cuda-ldmatrix-fragment-loads: which loads it sees, and its payoff (reloaded in the MMA's loop pays,
loaded once before it does not, no loop around the MMA is conditional)."""

from __future__ import annotations

from skel.kernels.cuda import extract_file
from skel.kernels.workload import Workload
from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN
from skel.skeletons.catalog.cuda_ldmatrix_fragment_loads.skeleton import (
    SKELETON,
    _scalar_fragment_loads,
    ldmatrix_pays,
)

MMA = """
__device__ __forceinline__ void mma(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
"""

BODY = """
__global__ void k(const half* Q, float* out, int n) {{
  __shared__ half sQ[16][24];
  __shared__ half sK[8][24];
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  float c[4] = {{}};
  unsigned a[4], b[2];
{before}
  for (int j = 0; j < n; ++j) {{
{inside}
    mma(c, a, b);
  }}
  out[lane] = c[0];
}}
"""

LOAD_A = ("    a[0] = *reinterpret_cast<const unsigned*>(&sQ[g][2 * t]);\n"
          "    a[1] = *reinterpret_cast<const unsigned*>(&sQ[g + 8][2 * t]);\n")
LOAD_B = "    b[0] = *(const unsigned*)&sK[g][2 * t];\n"


def _kernel(src: str):
    return next(u for u in extract_file(MMA + src, "k.cu") if u.name == "k")


def test_fragments_reloaded_in_the_mma_loop_pay():
    k = _kernel(BODY.format(before="", inside=LOAD_A + LOAD_B))
    assert _scalar_fragment_loads(k) == [16, 17, 18]  # the loop starts at line 15
    p = ldmatrix_pays(k, Workload())
    assert p.state == PAYS and "(line 16)" in p.reason and "(line 15)" in p.reason
    assert SKELETON.assess(k).kind == "match"


def test_fragments_loaded_once_before_the_loop_do_not_pay():
    p = ldmatrix_pays(_kernel(BODY.format(before=LOAD_A + LOAD_B, inside="")), Workload())
    assert p.state == DOES_NOT_PAY and "loads (line 14)" in p.reason and "`mma.sync` (line 18)" in p.reason


def test_an_mma_in_no_loop_is_conditional():
    src = BODY.format(before=LOAD_A + LOAD_B, inside="").replace("for (int j = 0; j < n; ++j)", "if (n > 0)")
    assert ldmatrix_pays(_kernel(src), Workload()).state == UNKNOWN


def test_global_loads_are_no_shared_fragment_loads():
    k = _kernel(BODY.format(before="", inside="    a[0] = *reinterpret_cast<const unsigned*>(&Q[g * 16 + 2 * t]);"))
    assert _scalar_fragment_loads(k) == []
    assert SKELETON.assess(k).kind is None
