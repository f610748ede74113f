"""bitpacked-attention-mask: when packing a (query, key) mask tile into bits pays, from the
byte mask's share of a key step's K/V bytes, BLOCK_M / (4 x head_dim)."""

from __future__ import annotations

from skel.kernels.extract import extract
from skel.kernels.workload import Workload
from skel.skeletons import registry
from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN

ID = "bitpacked-attention-mask"

SRC = '''import triton
import triton.language as tl


@triton.jit
def attn(Q, K, V, Mask, O, L, scale, D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + offs_m[:, None] * D + offs_d[None, :])
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    for start_n in range(0, L, BLOCK_N):
        cols = start_n + offs_n
        qk = tl.dot(q, tl.load(K + cols[None, :] * D + offs_d[:, None])) * scale
        keep = tl.load(Mask + offs_m[:, None] * L + cols[None, :])
        qk = tl.where(keep, qk, float("-inf"))
        p = tl.exp(qk - tl.max(qk, 1)[:, None])
        acc += tl.dot(p.to(tl.float16), tl.load(V + cols[:, None] * D + offs_d[None, :]))
    tl.store(O + offs_m[:, None] * D + offs_d[None, :], acc)
'''


def _payoff(*shapes: str):
    k = extract(SRC, "k.py")[0]
    sk = registry.get(ID)
    assert sk.assess(k).applies
    assert sk.payoff is not None
    return sk.payoff(k, Workload.parse(list(shapes)))


def test_a_large_query_tile_against_the_head_dim_pays():
    p = _payoff("BLOCK_M=128", "D=64")  # 128 / 256: the mask is half the K/V bytes
    assert p.state == PAYS
    assert "0.5 of a step's K/V bytes" in p.reason


def test_the_threshold_pays_at_an_eighth():
    assert _payoff("BLOCK_M=64", "head_dim=128").state == PAYS  # 64 / 512 = 1/8


def test_a_decode_tile_does_not_pay():
    p = _payoff("BLOCK_M=16", "HEAD_DIM=256")  # 16 / 1024 = 1/64
    assert p.state == DOES_NOT_PAY
    assert "0.0156" in p.reason


def test_between_is_conditional_and_unknown_sizes_name_the_flag():
    assert _payoff("BLOCK_M=32", "D=128").state == UNKNOWN  # 1/16
    p = _payoff("BLOCK_M=64")
    assert p.state == UNKNOWN
    assert "--shape BLOCK_M=64 --shape head_dim=128" == p.needs
