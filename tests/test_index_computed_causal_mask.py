"""index-computed-causal-mask: whether the launcher's mask is built from positions (the
condition that separates a causal / window mask from a custom one), and when dropping it
pays, from a byte mask's share of a key step's K/V bytes, BLOCK_M / (4 x head_dim)."""

from __future__ import annotations

from skel.kernels.extract import extract
from skel.kernels.workload import Workload
from skel.skeletons import registry
from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN

ID = "index-computed-causal-mask"

KERNEL = '''import functools

import torch
import triton
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


def _kernel(launcher: str = ""):
    src = KERNEL + launcher
    return next(k for k in extract(src, "k.py") if k.name == "attn")


def _applies(launcher: str) -> bool:
    return registry.get(ID).assess(_kernel(launcher)).applies


TRIL_LOCAL = '''

def run(q, k, v, o):
    L, D = q.shape
    mask = torch.tril(torch.ones(L, L, dtype=torch.bool, device=q.device))
    attn[(triton.cdiv(L, 64),)](q, k, v, mask, o, L, 0.1, D=D, BLOCK_M=64, BLOCK_N=64)
'''


def test_a_local_built_with_tril_applies():
    assert _applies(TRIL_LOCAL)


def test_an_index_comparison_written_at_the_launch_applies():
    assert _applies('''

def run(q, k, v, o):
    L, D = q.shape
    pos = torch.arange(L, device=q.device)
    attn[(1,)](q, k, v, torch.arange(L)[:, None] >= torch.arange(L)[None, :], o, L, 0.1, D=D, BLOCK_M=64,
               BLOCK_N=64)
''')


def test_a_converted_local_and_a_same_file_builder_apply():
    assert _applies('''

@functools.lru_cache
def _causal(L, device):
    return torch.ones(L, L, device=device).tril()


def run(q, k, v, o):
    L, D = q.shape
    mask = _causal(L, q.device)
    attn[(1,)](q, k, v, mask.to(q.dtype), o, L, 0.1, D=D, BLOCK_M=64, BLOCK_N=64)
''')


def test_a_callers_mask_does_not_apply():
    assert not _applies('''

def run(q, k, v, o, mask):
    L, D = q.shape
    attn[(1,)](q, k, v, mask, o, L, 0.1, D=D, BLOCK_M=64, BLOCK_N=64)
''')


def test_a_callers_mask_cut_to_a_triangle_does_not_apply():
    # `attention_mask` is read beside the triangle: a padding / document mask rides along
    assert not _applies('''

def run(q, k, v, o, attention_mask):
    L, D = q.shape
    mask = attention_mask.bool() & torch.tril(torch.ones(L, L, dtype=torch.bool, device=q.device))
    attn[(1,)](q, k, v, mask, o, L, 0.1, D=D, BLOCK_M=64, BLOCK_N=64)
''')


def test_an_attribute_and_a_random_mask_do_not_apply():
    assert not _applies('''

class Attn:
    def forward(self, q, k, v, o):
        L, D = q.shape
        torch.tril(q)
        attn[(1,)](q, k, v, self.mask, o, L, 0.1, D=D, BLOCK_M=64, BLOCK_N=64)
''')
    assert not _applies('''

def run(q, k, v, o):
    L, D = q.shape
    mask = (torch.rand(L, L, device=q.device) < 0.5).tril()
    attn[(1,)](q, k, v, mask, o, L, 0.1, D=D, BLOCK_M=64, BLOCK_N=64)
''')


def test_every_launch_must_pass_a_mask_built_from_positions():
    assert not _applies(TRIL_LOCAL + '''

def run_custom(q, k, v, o, doc_mask):
    L, D = q.shape
    attn[(1,)](q, k, v, doc_mask, o, L, 0.1, D=D, BLOCK_M=64, BLOCK_N=64)
''')


def test_no_launch_in_the_file_does_not_apply():
    assert not _applies("")


def _payoff(*shapes: str):
    k = _kernel(TRIL_LOCAL)
    sk = registry.get(ID)
    assert sk.assess(k).applies
    assert sk.payoff is not None
    return sk.payoff(k, Workload.parse(list(shapes)))


def test_a_large_query_tile_against_the_head_dim_pays():
    p = _payoff("BLOCK_M=128", "D=128")  # 128 / 512: a quarter of the K/V bytes
    assert p.state == PAYS
    assert "0.25 of a step's K/V bytes" in p.reason


def test_the_threshold_pays_at_a_sixteenth():
    assert _payoff("BLOCK_M=32", "head_dim=128").state == PAYS  # 32 / 512 = 1/16


def test_a_small_query_tile_does_not_pay():
    p = _payoff("BLOCK_M=16", "HEAD_DIM=256")  # 16 / 1024 = 1/64
    assert p.state == DOES_NOT_PAY
    assert "0.0156" in p.reason


def test_between_is_conditional_and_unknown_sizes_name_the_flag():
    assert _payoff("BLOCK_M=16", "D=128").state == UNKNOWN  # 1/32
    p = _payoff()
    assert p.state == UNKNOWN
    assert "--shape BLOCK_M=64" in p.needs
