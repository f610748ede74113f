"""constexpr-model-dimension: which runtime integers it reads as model dimensions bounding the
hot path, and when making them constexpr pays."""

from __future__ import annotations

import textwrap

import pytest

from skel.kernels.extract import extract
from skel.kernels.workload import Workload
from skel.skeletons import registry
from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN

ID = "constexpr-model-dimension"

HEADER = "import triton\nimport triton.language as tl\n\n"

NORM = '''
@triton.jit
def norm_kernel(x_ptr, y_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, n_cols, BLOCK):
        c = off + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + r * stride + c, mask=c < n_cols, other=0.0)
        acc += v * v
    inv = tl.rsqrt(tl.sum(acc, 0) / n_cols + eps)
    for off in range(0, n_cols, BLOCK):
        c = off + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + r * stride + c, mask=c < n_cols, other=0.0)
        tl.store(y_ptr + r * stride + c, v * inv, mask=c < n_cols)
'''

ROPE = '''
@triton.jit
def rope_kernel(q_ptr, cos_ptr, n_heads, head_dim, stride_tok, BLOCK_D: tl.constexpr):
    tok = tl.program_id(0)
    half = head_dim // 2
    o = tl.arange(0, BLOCK_D)
    m = o < half
    c = tl.load(cos_ptr + tok * half + o, mask=m, other=1.0)
    for h in range(n_heads):
        x = tl.load(q_ptr + tok * stride_tok + h * head_dim + o, mask=m, other=0.0)
        tl.store(q_ptr + tok * stride_tok + h * head_dim + o, x * c, mask=m)
'''


def _kernel(src: str):
    return extract(HEADER + textwrap.dedent(src), "k.py")[0]


def _payoff(src: str, *shapes: str):
    k = _kernel(src)
    sk = registry.get(ID)
    a = sk.assess(k)
    assert a.applies, a.failed
    assert sk.payoff is not None
    return sk.payoff(k, Workload.parse(list(shapes)))


def test_a_norm_width_nobody_gave_is_conditional_and_names_the_flag():
    pay = _payoff(NORM)
    assert pay.state == UNKNOWN and "n_cols" in pay.reason
    assert pay.needs == "--shape n_cols=N"


@pytest.mark.parametrize("shapes, state", [
    (("n_cols=4096",), PAYS),            # a hidden size that fits one block
    (("cols=128",), PAYS),               # a per-head norm, given as the row width
    (("x_ptr=16384x2048",), PAYS),       # the width read off the input's shape
    (("n_cols=16384",), UNKNOWN),        # between the widths that unroll and those that do not
    (("n_cols=151936",), DOES_NOT_PAY),  # a vocabulary-wide row: a long loop either way
])
def test_the_width_given_decides(shapes, state):
    assert _payoff(NORM, *shapes).state == state


def test_a_head_dim_is_found_through_a_derived_bound_and_stays_conditional_by_its_name():
    # `m = o < half` with `half = head_dim // 2`: the mask of the per-head loop is the head dim's;
    # a name is not a size, so it is conditional until one is given
    pay = _payoff(ROPE)
    assert pay.state == UNKNOWN and "head_dim is small, as a head dim" in pay.reason
    assert pay.needs == "--shape head_dim=N"
    assert _payoff(ROPE, "head_dim=128").state == PAYS
    assert _payoff(ROPE, "head_dim=65536").state == DOES_NOT_PAY  # a size given wins over the name


@pytest.mark.parametrize("src", [
    # a per-call length, however it is used
    NORM.replace("n_cols", "seq_len").replace("tl.rsqrt", "tl.exp"),
    # `n_cols` outside a norm: an attention row or a vocabulary
    NORM.replace("tl.rsqrt", "tl.exp"),
    # already constexpr
    NORM.replace("n_cols, eps", "eps, n_cols: tl.constexpr"),
    # kept runtime on purpose
    NORM.replace("@triton.jit", "@triton.jit(do_not_specialize=['n_cols'])"),
    # a sampling top-k: per request (no expert argument beside it)
    '''
    @triton.jit
    def pick_kernel(p_ptr, ids_ptr, out_ptr, top_k, stride):
        r = tl.program_id(0)
        best = 0.0
        for j in range(top_k):
            best = tl.maximum(best, tl.load(p_ptr + r * stride + tl.load(ids_ptr + r * stride + j)))
        tl.store(out_ptr + r, best)
    ''',
])
def test_what_is_not_a_model_dimension_bounding_the_hot_path(src):
    k = _kernel(src)
    a = registry.get(ID).assess(k)
    assert not a.applies


def test_the_experts_per_token_of_a_moe_kernel_pay_by_name():
    src = '''
    @triton.jit
    def combine_kernel(x_ptr, out_ptr, topk_weights_ptr, topk, hidden_size, BLOCK: tl.constexpr):
        t = tl.program_id(0)
        o = tl.arange(0, BLOCK)
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for j in range(topk):
            w = tl.load(topk_weights_ptr + t * topk + j)
            acc += w * tl.load(x_ptr + (t * topk + j) * hidden_size + o, mask=o < hidden_size, other=0.0)
        tl.store(out_ptr + t * hidden_size + o, acc, mask=o < hidden_size)
    '''
    pay = _payoff(src)
    assert pay.state == UNKNOWN and "experts per token" in pay.reason
