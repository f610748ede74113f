"""cuda-int64-offsets: which 32-bit block-index x size products it finds in global addresses, and
when promoting them fixes the kernel (a tensor past 2**31 elements), does not (every tensor
known and smaller) or stays open (sizes not given)."""

from __future__ import annotations

import textwrap

import pytest

from skel.kernels.extract import extract
from skel.kernels.workload import Workload
from skel.skeletons import registry
from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN
from skel.skeletons.catalog.cuda_int64_offsets.skeleton import _hits

ID = "cuda-int64-offsets"

GATHER = """
__global__ void gather(uint8_t* out, const uint8_t* cache, const int* slot_table, int row_bytes) {
  const int t = blockIdx.x;
  const int slot = slot_table[t];
  for (int c = threadIdx.x; c < row_bytes; c += blockDim.x) out[t * row_bytes + c] = cache[slot * row_bytes + c];
}
"""

FLAT_WIDE_COUNT = """
__global__ void scale(float* y, const float* x, float a, int64_t n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}
"""


def _kernel(src: str, path: str = "k.cu"):
    return extract(textwrap.dedent(src), path)[0]


def _payoff(src: str, *shapes: str):
    k = _kernel(src)
    sk = registry.get(ID)
    a = sk.assess(k)
    assert a.present is None and not a.failed, (a.present, a.failed)
    assert sk.payoff is not None
    return sk.payoff(k, Workload.parse(list(shapes)))


def test_the_products_found():
    hits = {(h.text, h.loaded) for h in _hits(_kernel(GATHER))}
    assert hits == {("t * row_bytes", False), ("slot * row_bytes", True)}
    flat = _hits(_kernel(FLAT_WIDE_COUNT))
    assert [(h.text, h.flat) for h in flat] == [("blockIdx.x * blockDim.x", True)]


@pytest.mark.parametrize("src", [
    GATHER.replace("const int slot", "const int64_t slot").replace("const int t", "const int64_t t"),
    GATHER.replace("slot * row_bytes", "(int64_t)slot * row_bytes").replace("t * row_bytes", "(size_t)t * row_bytes"),
    FLAT_WIDE_COUNT.replace("int64_t n", "int n"),       # in bounds, an `int` count fits in `int`
])
def test_promoted_or_bounded_is_not_the_subject(src):
    assert not _hits(_kernel(src))


def test_payoff_follows_the_largest_tensor():
    p = _payoff(GATHER)
    assert p.state == UNKNOWN and "--shape" in p.needs, p
    p = _payoff(GATHER, "cache=2200000x1024")
    assert p.state == PAYS and "2,252,800,000" in p.reason, p
    p = _payoff(GATHER, "cache=1048576x1024", "out=65536x1024", "slot_table=65536")
    assert p.state == DOES_NOT_PAY, p
    assert _payoff(GATHER, "out=65536x1024").state == UNKNOWN  # the pool's size is not given


def test_in_a_serving_engine_only_products_that_grow_past_a_forward_pass():
    sk = registry.get(ID)
    row = """
    __global__ void row_scale(float* y, const float* x, int cols) {
      const int row = blockIdx.x;
      for (int c = threadIdx.x; c < cols; c += blockDim.x) y[row * cols + c] = 2.f * x[row * cols + c];
    }
    """
    assert not sk.assess(_kernel(row, "csrc/scale.cu")).failed
    # a row of one forward pass's activations in a serving engine: it never holds 2**31 elements
    assert sk.assess(_kernel(row, "sglang/csrc/elementwise/scale.cu")).failed
    assert not sk.assess(_kernel(GATHER, "sglang/csrc/kvcacheio/gather.cu")).failed  # a loaded slot: the pool grows
