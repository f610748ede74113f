"""merged-sibling-launch: when one launch over both sibling tensors pays (small launches),
does not (many waves each), or waits on sizes; and which launch pairs are siblings."""

from __future__ import annotations

from skel.kernels.triton import extract_file
from skel.kernels.workload import Workload
from skel.skeletons import registry
from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN

ID = "merged-sibling-launch"

SRC = '''
import torch
import triton
import triton.language as tl


@triton.jit
def act_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(y_ptr + offs, x * tl.sigmoid(x), mask=m)


def launch(a, b, a_out, b_out):
    {first}
    {between}
    {second}
'''

FIRST = "act_kernel[(triton.cdiv(a.numel(), 1024),)](a, a_out, a.numel(), BLOCK=1024)"
SECOND = "act_kernel[(triton.cdiv(b.numel(), 1024),)](b, b_out, b.numel(), BLOCK=1024)"


def _kernel(first: str = FIRST, second: str = SECOND, between: str = "pass"):
    (k,) = extract_file(SRC.format(first=first, second=second, between=between), "k.py")
    return k


def _payoff(*shape: str):
    sk = registry.get(ID)
    assert sk.payoff is not None
    return sk.payoff(_kernel(), Workload.parse(list(shape)))


def test_few_programs_a_launch_pay():
    p = _payoff("programs=64")
    assert p.state == PAYS and "64 programs" in p.reason


def test_many_waves_a_launch_do_not_pay():
    assert _payoff("programs=100000").state == DOES_NOT_PAY  # 100,000 / 132 SMs: 758 waves


def test_between_the_thresholds_is_unknown():
    assert _payoff("programs=1000").state == UNKNOWN  # 7.6 waves


def test_tensor_sizes_decide_when_the_grid_is_not_given():
    assert _payoff("x_ptr=4096x128").state == PAYS  # 524,288 elements
    assert _payoff("x_ptr=16384x8192").state == DOES_NOT_PAY  # 134M elements
    p = _payoff()
    assert p.state == UNKNOWN and "--shape programs=N" in p.needs


def test_siblings_and_not():
    sk = registry.get(ID)
    assert sk.assess(_kernel()).applies
    # the second launch reads what the first wrote
    assert not sk.assess(_kernel(second="act_kernel[(4,)](a_out, b_out, 4, BLOCK=1024)")).applies
    # the same tensor twice
    assert not sk.assess(_kernel(second=FIRST.replace("a_out", "b_out"))).applies
    # the host works on the first result in between
    assert not sk.assess(_kernel(between="a_out.mul_(2)")).applies
    # sizes only between: fine
    assert sk.assess(_kernel(between="n = b.numel()")).applies
