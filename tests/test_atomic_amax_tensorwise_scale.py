"""atomic-amax-tensorwise-scale: the payoff over the number of partials the one-program loop walks,
and where it reads that number from."""

from __future__ import annotations

import textwrap

from skel.kernels.extract import extract
from skel.kernels.workload import Workload
from skel.skeletons import registry
from skel.skeletons.base import PAYS, UNKNOWN

ID = "atomic-amax-tensorwise-scale"

SERIAL = '''
import triton
import triton.language as tl


@triton.jit
def scale_kernel(partials_ptr, scale_ptr, num_blocks, fp8_max: tl.constexpr):
    amax = 0.0
    for i in range(num_blocks):
        amax = tl.maximum(amax, tl.load(partials_ptr + i))
    tl.store(scale_ptr, amax / fp8_max)
'''


def _payoff(*shapes: str):
    k = extract(textwrap.dedent(SERIAL), "k.py")[0]
    sk = registry.get(ID)
    a = sk.assess(k)
    assert a.applies, a.failed
    assert sk.payoff is not None
    return sk.payoff(k, Workload.parse(list(shapes)))


def test_many_partials_pay():
    p = _payoff("num_blocks=16384")
    assert p.state == PAYS
    assert "16,384 partials" in p.reason


def test_the_threshold_pays():
    assert _payoff("num_blocks=64").state == PAYS


def test_few_partials_are_conditional_on_a_measurement():
    p = _payoff("num_blocks=16")
    assert p.state == UNKNOWN
    assert "about one launch" in p.reason and not p.needs


def test_partials_from_elements_and_block():
    p = _payoff("num_elements=67108864", "BLOCK_SIZE=4096")
    assert p.state == PAYS
    assert "16,384" in p.reason


def test_unknown_count_asks_for_it():
    p = _payoff()
    assert p.state == UNKNOWN
    assert p.needs.startswith("--shape num_blocks=")
