"""exponential-race-sampling: which kernels are inverse-CDF samplers, and when a one-pass race
pays over the sorted scan (the scanned row's width: a vocabulary, or a top-k candidate list)."""

from __future__ import annotations

import textwrap

from skel.kernels.extract import extract
from skel.kernels.workload import Workload
from skel.skeletons import registry
from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN

ID = "exponential-race-sampling"

HEADER = "import triton\nimport triton.language as tl\n\n"

SAMPLER = '''
@triton.jit
def sampler(Probs, Idx, Out, stride, num_tokens, seed, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    u = tl.rand(seed, row)
    acc = 0.0
    out = tl.load(Idx + row * stride)
    for off in range(0, num_tokens, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        p = tl.load(Probs + row * stride + cols, mask=cols < num_tokens, other=0.0)
        cum = acc + tl.cumsum(p, 0)
        hit = (u >= cum - p) & (u < cum)
        out = tl.where(tl.sum(hit, 0) > 0, tl.load(Idx + row * stride + tl.argmax(hit, 0)), out)
        acc += tl.sum(p, 0)
    tl.store(Out + row, out)
'''

# the draw scaled by a running sum is still a draw against the sum
SCALED = SAMPLER.replace("hit = (u >= cum - p) & (u < cum)", "hit = cum > u * acc")
# the running sum of values the draw already changed, compared with a constant: dropout, not sampling
DROPOUT = '''
@triton.jit
def dropout_scan(X, Y, T, p_drop, seed, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(X + row * T + cols, mask=cols < T, other=0.0)
    x = tl.where(tl.rand(seed, row * T + cols) > p_drop, x, 0.0)
    y = tl.cumsum(x, 0)
    tl.store(Y + row * T + cols, tl.where(y > 1.0, 1.0, y), mask=cols < T)
'''


def _kernel(src: str):
    return extract(HEADER + textwrap.dedent(src), "k.py")[0]


def _payoff(*shapes: str):
    k = _kernel(SAMPLER)
    sk = registry.get(ID)
    assert sk.assess(k).applies
    assert sk.payoff is not None
    return sk.payoff(k, Workload.parse(list(shapes)))


def test_a_draw_compared_with_a_running_sum_is_the_subject_and_dropout_is_not():
    sk = registry.get(ID)
    assert sk.assess(_kernel(SAMPLER)).applies
    assert sk.assess(_kernel(SCALED)).applies
    a = sk.assess(_kernel(DROPOUT))
    assert not a.applies and not a.subject_holds


def test_a_vocabulary_pays():
    p = _payoff("num_tokens=128256")
    assert p.state == PAYS
    assert "num_tokens=128,256" in p.reason
    assert _payoff("cols=16384").state == PAYS


def test_a_top_k_candidate_list_does_not_pay():
    p = _payoff("num_tokens=256")
    assert p.state == DOES_NOT_PAY
    assert "candidate list" in p.reason


def test_between_and_unknown_are_conditional():
    assert _payoff("num_tokens=4096").state == UNKNOWN
    p = _payoff()
    assert p.state == UNKNOWN
    assert p.needs == "--shape cols=V"
