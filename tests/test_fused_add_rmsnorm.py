"""fused-add-rmsnorm: when fusing the residual add into the norm pays (the row fits one
block), does not (the row spills, so a second pass re-reads the sum), or waits on the
hidden size; and which host code counts as adding the residual first."""

from __future__ import annotations

from skel.kernels.triton import extract_file
from skel.kernels.workload import Workload
from skel.skeletons import registry
from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN

ID = "fused-add-rmsnorm"

KERNEL = '''
import torch
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(X, W, Y, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(Y + row * stride + cols, x * rstd * tl.load(W + cols, mask=mask), mask=mask)


def launch(x, residual, w, eps):
    {host}
    y = torch.empty_like(x)
    rmsnorm_kernel[(x.shape[0],)](x, w, y, x.stride(0), x.shape[1], eps, BLOCK=triton.next_power_of_2(x.shape[1]))
    return {ret}
'''


def _kernel(host: str = "x = x + residual", ret: str = "y, x"):
    (k,) = extract_file(KERNEL.format(host=host, ret=ret), "k.py")
    return k


def _payoff(*shape: str):
    sk = registry.get(ID)
    assert sk.payoff is not None
    return sk.payoff(_kernel(), Workload.parse(list(shape)))


def test_a_hidden_size_that_fits_one_block_pays_with_the_bytes_saved():
    p = _payoff("rows=16384", "cols=4096")
    assert p.state == PAYS
    assert "128.0 MiB" in p.reason  # 16,384 x 4,096 bf16 values: one read of the sum


def test_a_row_past_the_register_budget_does_not_pay():
    assert _payoff("rows=2048", "cols=32768").state == DOES_NOT_PAY


def test_between_fits_and_spills_is_measured_not_guessed():
    assert _payoff("cols=12288").state == UNKNOWN


def test_no_hidden_size_asks_for_it():
    p = _payoff()
    assert p.state == UNKNOWN and p.needs == "--shape cols=N"


def test_host_add_forms():
    sk = registry.get(ID)
    assert sk.assess(_kernel()).applies  # `x + residual` on the host
    assert sk.assess(_kernel(host="x = torch.add(x, residual)")).applies
    # the residual added to the norm's output afterwards: an epilogue, not this fusion
    assert not sk.assess(_kernel(host="pass", ret="y.add_(residual)")).applies
    # a launcher that never names a residual
    plain = KERNEL.replace("def launch(x, residual, w, eps)", "def launch(x, w, eps)")
    (k,) = extract_file(plain.format(host="pass", ret="y"), "k.py")
    assert not sk.assess(k).applies
