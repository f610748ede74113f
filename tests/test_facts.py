"""The extractor: every spelling of a Triton kernel, correct lines, launches, errors."""

from __future__ import annotations

import pytest

from skel.miner.facts import ParseError, extract_file

SPELLINGS = '''
import triton
import triton.language as tl
from triton import jit, autotune
from triton import language as language


@triton.jit
def plain(x_ptr):
    tl.store(x_ptr, 1.0)


@triton.jit(do_not_specialize=["T"])
def with_args(x_ptr, T):
    tl.store(x_ptr, T)


@jit
def imported_jit(x_ptr):
    language.store(x_ptr, 1.0)


@autotune(configs=[triton.Config({"B": 32}, num_warps=4), triton.Config({"B": 64}, num_warps=8)], key=["N"])
@triton.heuristics({"EVEN": lambda args: args["N"] % args["B"] == 0})
@triton.jit
def stacked(x_ptr, N, B: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.arange(0, B)
    for i in tl.range(0, N, B, num_stages=3):
        x = tl.load(x_ptr + i + offs)
        acc = tl.dot(x, x)


def host_helper(x):
    return x + 1


class Holder:
    @triton.jit
    def in_class(x_ptr):
        tl.store(x_ptr, 0.0)


if True:
    @triton.jit
    def under_if(x_ptr):
        tl.store(x_ptr, 0.0)


def launch(x, N):
    grid = lambda meta: (triton.cdiv(N, meta["B"]),)
    stacked[grid](x, N)
    plain[(1,)](x, num_warps=2)
'''


@pytest.fixture(scope="module")
def kernels():
    return {k.name: k for k in extract_file(SPELLINGS, "spellings.py")}


def test_every_spelling_is_a_kernel(kernels):
    assert set(kernels) == {"plain", "with_args", "imported_jit", "stacked", "in_class", "under_if"}


def test_line_spans_cover_decorators(kernels):
    lines = SPELLINGS.lstrip("\n").splitlines()
    # extract_file numbers lines of the text as given: SPELLINGS starts with a newline
    src = SPELLINGS.splitlines()
    k = kernels["stacked"]
    assert src[k.line_start - 1].startswith("@autotune")
    assert src[k.line_end - 1].strip() == "acc = tl.dot(x, x)"
    assert lines  # sanity


def test_calls_are_canonical_with_lines_and_loops(kernels):
    k = kernels["stacked"]
    src = SPELLINGS.splitlines()
    dot = k.calls_named("tl.dot")[0]
    assert "tl.dot(x, x)" in src[dot.line - 1]
    assert dot.loop_depth == 1 and dot.target == "acc"
    loop = k.loops[0]
    assert loop.kind == "tl.range" and loop.kwargs == {"num_stages": "3"}
    assert kernels["imported_jit"].calls_named("tl.store"), "`language` alias of triton.language"


def test_decorators(kernels):
    k = kernels["stacked"]
    auto = k.decorator("triton.autotune")
    assert auto.config_count == 2 and set(auto.config_keys) == {"B", "num_warps"}
    assert k.decorator("triton.heuristics").list_items == ['"EVEN"']
    assert kernels["with_args"].decorator("triton.jit").kwargs == {"do_not_specialize": '["T"]'}
    assert [p.name for p in k.params if p.constexpr] == ["B", "EVEN"]


def test_launch_sites(kernels):
    (ln,) = kernels["stacked"].launches
    assert ln.grid == "grid" and ln.host_function == "launch"
    (pl,) = kernels["plain"].launches
    assert pl.kwargs == {"num_warps": "2"}
    assert "plain[(1,)]" in SPELLINGS.splitlines()[pl.line - 1]


def test_no_kernel_and_syntax_error():
    assert extract_file("def f():\n    return 1\n") == []
    with pytest.raises(ParseError):
        extract_file("import triton\n@triton.jit\ndef broken(:\n")


def test_round_trip_through_dict(kernels):
    from skel.miner.facts import KernelFacts

    k = kernels["stacked"]
    assert KernelFacts.from_dict(k.to_dict()) == k
