"""rope-sincos-in-kernel: when computing cos/sin in the kernel pays over gathering a table row
per token: the row's share of the token's bytes, 1 / (2 H) for H heads rotated per token."""

from __future__ import annotations

from skel.kernels.extract import extract
from skel.kernels.workload import Workload
from skel.skeletons import registry
from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN

ID = "rope-sincos-in-kernel"

SRC = '''import triton
import triton.language as tl


@triton.jit
def rope(pos_ptr, q_ptr, k_ptr, cos_sin_cache, T, n_qh, n_kh, stride_q, stride_k, D: tl.constexpr,
         BLOCK_T: tl.constexpr):
    HALF: tl.constexpr = D // 2
    t = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    d = tl.arange(0, HALF)
    m = t[:, None] < T
    pos = tl.load(pos_ptr + t, mask=t < T, other=0)
    c = tl.load(cos_sin_cache + pos[:, None] * D + d[None, :], mask=m, other=0.0)
    s = tl.load(cos_sin_cache + pos[:, None] * D + HALF + d[None, :], mask=m, other=0.0)
    for h in range(n_qh):
        p = q_ptr + t[:, None] * stride_q + h * D + d[None, :]
        a = tl.load(p, mask=m, other=0.0)
        b = tl.load(p + HALF, mask=m, other=0.0)
        tl.store(p, a * c - b * s, mask=m)
        tl.store(p + HALF, b * c + a * s, mask=m)
    for h in range(n_kh):
        p = k_ptr + t[:, None] * stride_k + h * D + d[None, :]
        a = tl.load(p, mask=m, other=0.0)
        b = tl.load(p + HALF, mask=m, other=0.0)
        tl.store(p, a * c - b * s, mask=m)
        tl.store(p + HALF, b * c + a * s, mask=m)
'''


def _payoff(*shapes: str):
    k = extract(SRC, "k.py")[0]
    sk = registry.get(ID)
    assert sk.assess(k).applies
    assert sk.payoff is not None
    return sk.payoff(k, Workload.parse(list(shapes)))


def test_one_head_pays():
    p = _payoff("heads=1")  # MLA's k_pe: the table row is half the token's bytes
    assert p.state == PAYS
    assert "0.5 of the token's x bytes" in p.reason


def test_the_heads_of_q_and_k_add_up():
    assert _payoff("n_qh=2", "n_kh=2").state == PAYS  # 1 / 8
    p = _payoff("n_qh=32", "n_kh=8")  # a fused Q/K rope of an 8B model: 1 / 80
    assert p.state == DOES_NOT_PAY
    assert "n_qh=32 + n_kh=8" in p.reason


def test_between_and_unknown_are_conditional():
    assert _payoff("heads=8").state == UNKNOWN  # 1 / 16
    p = _payoff("n_qh=32")  # n_kh not given: the total is unknown
    assert p.state == UNKNOWN
    assert p.needs == "--shape heads=H"
