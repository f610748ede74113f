"""fused-dequant-gemm: the payoff over the activation rows (memory-bound on weights at small M,
compute-bound at large M) and where it reads M from."""

from __future__ import annotations

import textwrap

from skel.kernels.extract import extract
from skel.kernels.workload import Workload
from skel.skeletons import registry
from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN

ID = "fused-dequant-gemm"

GEMM_AFTER_DEQUANT = '''
import torch
import triton
import triton.language as tl


@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=rm[:, None] < M, other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=rn[None, :] < N, other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def linear(x, qweight, scales):
    w = dequantize_gptq(qweight, scales)
    M, K = x.shape
    c = torch.empty(M, w.shape[1], device=x.device)
    mm_kernel[(triton.cdiv(M, 64), triton.cdiv(w.shape[1], 64))](x, w, c, M, w.shape[1], K, BLOCK_M=64,
                                                                 BLOCK_N=64, BLOCK_K=32)
    return c
'''


def _payoff(*shapes: str):
    k = extract(textwrap.dedent(GEMM_AFTER_DEQUANT), "k.py")[0]
    sk = registry.get(ID)
    a = sk.assess(k)
    assert a.applies, a.failed
    assert sk.payoff is not None
    return sk.payoff(k, Workload.parse(list(shapes)))


def test_decode_rows_pay():
    p = _payoff("M=16")
    assert p.state == PAYS
    assert "M = 16 rows" in p.reason


def test_the_memory_bound_edge_pays():
    assert _payoff("M=64").state == PAYS


def test_prefill_rows_do_not_pay():
    p = _payoff("M=4096")
    assert p.state == DOES_NOT_PAY
    assert "compute-bound" in p.reason


def test_between_the_bounds_is_conditional():
    p = _payoff("M=256")
    assert p.state == UNKNOWN
    assert "M = 256" in p.reason and not p.needs


def test_rows_unknown_asks_for_m():
    p = _payoff()
    assert p.state == UNKNOWN
    assert p.needs.startswith("--shape M=")


def test_rows_read_from_the_activation_shape():
    # x_ptr's leading dimensions are the rows: 2 x 8 tokens of a batch
    p = _payoff("x_ptr=2x8x4096")
    assert p.state == PAYS
    assert "x_ptr's rows" in p.reason
