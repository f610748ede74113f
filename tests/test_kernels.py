"""The analysis layer: every spelling of a Triton kernel, correct lines, launches, errors; positions
equal to libcst's own; one parse per kernel; the data-flow view built from that parse."""

from __future__ import annotations

import pytest

from skel.kernels.triton import ParseError, extract_file

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


PROJECT_JIT = {
    # serving code re-exports triton.jit from its own package (issue #8: found no kernel)
    "relative": "import triton\nimport triton.language as tl\nfrom .. import jit\n\n"
                "@jit\ndef k(x_ptr):\n    tl.store(x_ptr, 1.0)\n",
    "relative-alias": "import triton.language as tl\nfrom .utils import jit as tjit\n\n"
                      "@tjit(do_not_specialize=['n'])\ndef k(x_ptr, n):\n    tl.store(x_ptr, n)\n",
    "project-module": "import triton\nimport triton.language as tl\nfrom sglang_like.utils import jit\n\n"
                      "@jit\ndef k(x_ptr):\n    tl.store(x_ptr, 1.0)\n",
    "from-triton": "import triton.language as tl\nfrom triton import jit\n\n"
                   "@jit\ndef k(x_ptr):\n    tl.store(x_ptr, 1.0)\n",
    "triton-as-tt": "import triton as tt\nimport triton.language as tl\n\n"
                    "@tt.jit\ndef k(x_ptr):\n    tl.store(x_ptr, 1.0)\n",
    "jit-with-args": "import triton\nimport triton.language as tl\n\n"
                     "@triton.jit(do_not_specialize=['n'])\ndef k(x_ptr, n):\n    tl.store(x_ptr, n)\n",
    "stacked-wrapper": "import triton\nimport triton.language as tl\nfrom .utils import libentry\n\n"
                       "@libentry()\n@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, 1.0)\n",
}


@pytest.mark.parametrize("case", sorted(PROJECT_JIT))
def test_every_jit_spelling_finds_the_kernel(case):
    (k,) = extract_file(PROJECT_JIT[case], "m.py")
    assert k.name == "k" and k.decorator("triton.jit") is not None
    assert k.calls_named("tl.store")


@pytest.mark.parametrize("source", [
    "import triton\nfrom numba import jit\n\n@jit\ndef f(x):\n    return x\n",
    "from .utils import jit\n\n@jit\ndef f(x):\n    return x\n",  # no triton in the file
])
def test_a_jit_of_another_compiler_is_not_a_kernel(source):
    assert extract_file(source, "m.py") == []


def test_no_kernel_and_syntax_error():
    assert extract_file("def f():\n    return 1\n") == []
    with pytest.raises(ParseError):
        extract_file("import triton\n@triton.jit\ndef broken(:\n")


def test_round_trip_through_dict(kernels):
    from skel.kernels.model import KernelFacts

    k = kernels["stacked"]
    assert KernelFacts.from_dict(k.to_dict()) == k


def test_to_dict_is_dataclasses_asdict_without_the_tree():
    """``to_dict`` copies the facts' records one level deep (they hold flat lists and dicts
    only), which must give what ``dataclasses.asdict`` gives, on every fixture kernel."""
    import dataclasses

    from skel.skeletons.registry import fixture_files, fixture_name

    compared = 0
    for path in fixture_files(".py"):
        for k in extract_file(path.read_text(), fixture_name(path)):
            reference = {f.name: getattr(k, f.name) for f in dataclasses.fields(k) if f.name != "syntax"}
            reference = {key: [dataclasses.asdict(x) if dataclasses.is_dataclass(x) else x for x in v]
                         if isinstance(v, list) else v for key, v in reference.items()}
            assert k.to_dict() == reference, (path.name, k.name)
            compared += 1
    assert compared > 100


def test_wrapper_autotuner_counts_as_autotune():
    src = '''
import triton
import triton.language as tl
from mylib import cache_autotune


@cache_autotune(configs=[triton.Config({"B": 32}), triton.Config({"B": 64})], key=["N"])
@triton.jit
def k(x_ptr, N, B: tl.constexpr):
    tl.store(x_ptr, 1.0)
'''
    (kf,) = extract_file(src)
    d = kf.decorator("triton.autotune")
    assert d is not None and d.spelling == "cache_autotune" and d.config_count == 2


def test_an_autotuner_applied_by_a_call_counts_as_autotune_and_its_launches_are_the_kernels():
    """GPTQModel: `X = custom_autotune.autotune(configs=..., key=..., nearest_power_of_two=True)(_impl)`
    inside an `if`, the wrapped name launched: the kernel is autotuned (the unseen2 draw's judge
    found autotune-configs suggested on such kernels, "already autotuned")."""
    src = '''
import triton
import triton.language as tl
from .utils import custom_autotune

if triton is not None:
    @triton.jit
    def _impl(x_ptr, N, B: tl.constexpr):
        tl.store(x_ptr + tl.arange(0, B), 1.0)

    _SMALL = [triton.Config({"B": 32}, num_warps=4), triton.Config({"B": 64}, num_warps=8)]
    _small = custom_autotune.autotune(configs=_SMALL, key=["N"], nearest_power_of_two=True)(_impl)
    _plain = functools.partial(_impl)


def run(x):
    _small[(1,)](x, x.numel())
'''
    (kf,) = extract_file(src)
    autotuners = [d for d in kf.decorators if d.name == "triton.autotune"]
    assert len(autotuners) == 1  # functools.partial is no autotuner
    d = autotuners[0]
    assert d.spelling == "custom_autotune.autotune" and d.config_count == 2 and d.line == 12
    assert d.kwargs["nearest_power_of_two"] == "True" and d.list_items == ['"N"']
    assert [(ln.kernel, ln.launched_as) for ln in kf.launches] == [("_impl", "_small")]


@pytest.mark.parametrize("path,source,hint", [
    ("liger_kernel/backends/_ascend/ops/embedding.py", "", "npu"),
    ("flag_gems/runtime/backend/_cambricon/ops/dropout.py", "", "mlu"),
    ("flag_gems/runtime/backend/_nvidia/ops/mm.py", "", ""),
    ("fla/ops/gla/chunk.py", "", ""),
    ("mykernels/k.py", "import torch_npu\n", "npu"),
    ("mykernels/k.py", "import torch\ntry:\n    import torch_npu\nexcept ImportError:\n    pass\n", "npu"),
    # a vendor import inside `if _is_npu:` is CUDA code with a vendor branch (sglang's
    # layernorm.py, sampler.py): not a vendor file
    ("sglang/srt/layers/layernorm.py", "import triton\nif _is_npu:\n    import torch_npu\n", ""),
    # AMD-only code by its path: an `amd`/`rocm`/`hip` folder or file-name part, a gfx target
    ("vllm/models/kimi/amd/kda_metadata.py", "", "rocm"),
    ("vllm/model_executor/layers/quantization/mxfp8_amd_gfx95.py", "", "rocm"),
    ("vllm/attention/ops/rocm_aiter_mla_sparse.py", "", "rocm"),
    ("flag_gems/runtime/backend/_amd/ops/mm.py", "", "rocm"),
    # whole words only: `chip`, `shipping`, `amdahl` are not AMD
    ("mykernels/chip_utils/shipping_amdahl.py", "", ""),
    # where a checkout lives says nothing about its code: only the last folders count
    ("/home/me/rocm-work/src/mylib/ops/kernels/fused/norm.py", "", ""),
    # a module-level import of aiter (AMD's kernel library) is ROCm-only code; one under
    # `if _is_hip:` is CUDA-and-ROCm code choosing a path
    ("aiter/ops/triton/moe_op.py", "import triton\nfrom aiter.ops.triton.utils import pid_grid\n", "rocm"),
    ("mylib/ops/gemm.py", "import aiter\n", "rocm"),
    ("sglang/srt/layers/moe/fused.py", "import triton\nif _is_hip:\n    from aiter import fused_moe\n", ""),
    ("mylib/ops/gemm.py", "import aiterx\n", ""),
    ("aiter/ops/triton/mha.py", "import triton\n", "rocm"),  # AMD's package, by its folder
    ("sglang/multimodal_gen/runtime/layers/attention/backends/aiter.py", "", "rocm"),
    ("mylib/waiter/ops.py", "", ""),
    # a vendor named by a folder or file-name part, as a whole word
    ("vllm/models/deepseek_v4/xpu/xpu_qnorm_rope_kv_fp8_insert.py", "", "xpu"),
    ("fla/ops/gated_delta_rule/chunk_h_npu.py", "", "npu"),
    ("mylib/ops/ascend_rope.py", "", "npu"),
    ("mylib/ops/xpuinfo/menu.py", "", ""),  # `xpuinfo`, `menu`: not whole words
    # the module docstring's first paragraph names the vendor it is written for
    ("dsv4/fused_compress_triton.py", '"""HIP fused compressor kernels.\n\nDetails.\n"""\nimport triton\n', "rocm"),
    ("ops/rmsnorm.py", '# SPDX-License-Identifier: Apache-2.0\n"""Fused RMSNorm kernels on AMD ROCm."""\n', "rocm"),
    ("ops/gemm.py", '"""MXFP8 GEMM for gfx950 (tl.dot_scaled)."""\n', "rocm"),
    ("ops/hash_topk.py", '"""HIP fallback: the .cuh uses CUDA-only primitives, so on ROCm we use Triton."""\n', "rocm"),
    ("ops/k.py", "\'\'\'Kernels for Intel XPU.\'\'\'\n", "xpu"),
    # ... but not one that names both vendors' paths, or mentions AMD only past its first paragraph
    ("ops/k.py", '"""Triton kernels for CUDA and ROCm."""\n', ""),
    ("ops/k.py", '"""Fused RMSNorm, tuned on Hopper and MI300."""\n', ""),
    ("ops/k.py", '"""Fused norm.\n\nOn AMD the HIP path is used instead."""\n', ""),
    ("ops/k.py", 'import triton\n"""ROCm."""\n', ""),  # a string after code is no docstring
])
def test_backend_hint(path, source, hint):
    from skel.kernels.triton import backend_hint

    assert backend_hint(path, source) == hint


def test_vendor_backend_kernels_are_judged_on_their_backend(tmp_path):
    from conftest import write
    from skel.retriever.suggest import suggest

    from test_cli import FP32_DOT

    cuda = write(tmp_path / "ops" / "k.py", FP32_DOT)
    npu = write(tmp_path / "backends" / "_ascend" / "k.py", FP32_DOT)
    (on_cuda,) = suggest(cuda)
    (on_npu,) = suggest(npu)
    assert "dot-input-precision-tf32x3" in [s.id for s in on_cuda.suggestions]
    assert "dot-input-precision-tf32x3" not in [s.id for s in on_npu.suggestions]
    assert any("npu backend" in n for n in on_npu.notes)


def test_amd_only_files_get_no_cuda_only_suggestions(tmp_path):
    """A file under an `amd/` folder is ROCm code: a technique that needs CUDA (here
    tf32x3 `tl.dot` precision, sm_80+) is not suggested for it, and the note says why."""
    from conftest import write
    from skel.retriever.suggest import suggest

    from test_cli import FP32_DOT

    amd = write(tmp_path / "models" / "amd" / "k.py", FP32_DOT)
    (on_amd,) = suggest(amd)
    assert "dot-input-precision-tf32x3" not in [s.id for s in on_amd.suggestions]
    assert any("rocm backend" in n for n in on_amd.notes)


def test_kernels_defined_under_an_is_hip_branch_are_rocm_code():
    """`if _is_hip:` around a kernel's definition makes it ROCm-only code (sglang's
    compressor kernels); its else branch, a negated test or a compound one do not."""
    src = '''
import triton
import triton.language as tl
from x import current_platform

_is_hip = current_platform.is_hip()

if _is_hip:
    @triton.jit
    def on_hip(x_ptr):
        tl.store(x_ptr, 1.0)
else:
    @triton.jit
    def elsewhere(x_ptr):
        tl.store(x_ptr, 1.0)

if current_platform.is_rocm():
    @triton.jit
    def on_rocm(x_ptr):
        tl.store(x_ptr, 1.0)

if not _is_hip:
    @triton.jit
    def not_hip(x_ptr):
        tl.store(x_ptr, 1.0)

if _is_hip and _is_fp8:
    @triton.jit
    def hip_and_more(x_ptr):
        tl.store(x_ptr, 1.0)
'''
    hints = {k.name: k.backend_hint for k in extract_file(src, "ops/k.py")}
    assert hints == {"on_hip": "rocm", "elsewhere": "", "on_rocm": "rocm", "not_hip": "", "hip_and_more": ""}


def test_a_grid_written_without_parentheses_is_a_launch():
    """`kernel[NT, B * H](..., num_stages=4)` launches as `kernel[(NT, B * H)]` does
    (sglang's solve_tril): its settings are read, so `num_stages` counts as set."""
    src = '''
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, T, BT: tl.constexpr):
    i_t = tl.program_id(0)
    for i in range(0, T, BT):
        tl.store(x_ptr + i + tl.arange(0, BT), tl.load(x_ptr + i + tl.arange(0, BT)) * 2)


def run(x, T, B, H):
    NT = triton.cdiv(T, 16)
    k[NT, B * H](x, T, BT=16, num_warps=1, num_stages=4)
'''
    (kf,) = extract_file(src)
    (ln,) = kf.launches
    assert (ln.grid, ln.kwargs["num_stages"], ln.host_function, ln.line) == ("(NT, B * H)", "4", "run", 15)
    assert not ln.grid_is_callable
    from skel.skeletons.registry import get

    assert get("num-stages-pipelining").detect(kf)[0] is not None


def test_autotune_configs_from_a_module_constant():
    src = '''
import triton
import triton.language as tl

CONFIGS = [triton.Config({"BK": bk}, num_warps=4, num_stages=s) for bk in (32, 64) for s in (2, 3)]


@triton.autotune(configs=CONFIGS, key=["K"])
@triton.jit
def k(x_ptr, K, BK: tl.constexpr):
    tl.store(x_ptr, 1.0)
'''
    (kf,) = extract_file(src)
    d = kf.decorator("triton.autotune")
    assert d.config_count == -1 and set(d.config_keys) == {"BK", "num_warps", "num_stages"}


# --- positions, one parse, the data-flow view --------------------------------------------

def _fixture_files():
    from skel.skeletons.registry import fixture_files

    return fixture_files(".py")


@pytest.mark.parametrize("path", _fixture_files()[::3], ids=lambda p: p.name)
def test_positions_equal_libcst_position_provider(path):
    """Our one code-generation pass gives every kernel node the line libcst's own
    PositionProvider gives it (checked node by node), and the text its code_for_node gives."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    from skel.kernels.positions import Positions
    from skel.kernels.tree import descendants

    module = cst.parse_module(path.read_text())
    theirs = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    empty = cst.Module(body=[])
    checked = 0
    for func in (s for s in module.body if isinstance(s, cst.FunctionDef)):
        ours = Positions(func, module)
        ours.offset = theirs[func.name].start.line - ours.line(func.name)
        nodes = descendants(func, cst.CSTNode)
        for node in nodes:
            if node in theirs:
                assert (ours.line(node), ours.end_line(node)) == (theirs[node].start.line, theirs[node].end.line)
                checked += 1
        for node in [n for n in nodes if isinstance(n, cst.BaseExpression)][:400]:
            # equal but for indentation inside multi-line expressions (we generate a kernel
            # without its outer indentation); facts only ever use the text squeezed
            assert ours.source(node).split() == empty.code_for_node(node).split()
    assert checked > 50


def test_parse_without_validation_gives_libcst_tree_and_puts_the_checks_back():
    """skel's parse skips libcst's per-node checks: on every fixture the tree equals
    libcst's own and prints back to the file; afterwards, and after a syntax error too,
    nodes built by hand are checked again."""
    import libcst as cst

    from skel.kernels.tree import parse_module

    for path in _fixture_files():
        text = path.read_text()
        ours = parse_module(text)
        assert ours.deep_equals(cst.parse_module(text)) and ours.code == text, path.name
    with pytest.raises(cst.CSTValidationError):
        cst.SimpleWhitespace("not whitespace")
    with pytest.raises(cst.ParserSyntaxError):
        parse_module("def f(:\n")
    with pytest.raises(cst.CSTValidationError):
        cst.SimpleWhitespace("not whitespace")


def test_one_parse_per_file_on_the_suggest_path(monkeypatch):
    """`suggest` parses the user's file once: facts, every skeleton's conditions and the
    data-flow view they read all come from that one tree."""
    import skel.kernels.triton as triton
    from skel.retriever.suggest import suggest
    from skel.skeletons.registry import all_skeletons, fixture_path

    all_skeletons()
    before = triton.PARSES
    results = suggest(fixture_path("online-softmax"), None)
    assert len(results) >= 2  # several kernels, one file
    assert triton.PARSES - before == 1


def test_flow_lines_match_the_source():
    from skel.kernels.flow import flow_of

    src = '''
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr, FLAG: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(0, n, BLOCK):
        x = tl.load(
            x_ptr + i + offs,
            mask=i + offs < n,
        )
        if FLAG:
            acc += x
        elif n > 4:
            acc = acc * 2
        else:
            acc -= x
    tl.store(x_ptr + offs, acc)
'''
    (kernel,) = extract_file(src, "k.py")
    fl = flow_of(kernel)
    (loop,) = fl.loops
    assert (loop.line, loop.end, loop.kind, loop.targets) == (10, 20, "range", {"i"})
    load = fl.named("tl.load")[0]
    assert load.line == 11 and load.targets == ("x",) and load.loops == (loop,)
    assert fl.text(load.arg(1, "mask")) == "i + offs < n"
    assert [(d.line, d.op) for d in fl.defs["acc"]] == [(9, "="), (16, "+="), (18, "="), (20, "-=")]
    store = fl.named("tl.store")[0]
    assert store.line == 21 and not store.loops


def test_one_parse_per_file_on_the_mine_path(tmp_path, kb, hash_embedder):
    """`mine` parses each kernel file once — facts, tags (conditions and the data-flow view)
    included — and not at all when the facts cache already holds it."""
    import skel.kernels.triton as triton
    from skel.miner.mine import mine
    from skel.miner.sources import DirectorySource
    from skel.skeletons.registry import all_skeletons, fixture_path
    from skel.store.knowledge import KnowledgeBase

    all_skeletons()
    repo = tmp_path / "repo"
    repo.mkdir()
    for sid in ("online-softmax", "split-k-reduction"):
        (repo / f"{sid.replace('-', '_')}.py").write_text(fixture_path(sid).read_text())
    before = triton.PARSES
    report = mine(DirectorySource(repo), kb, embedder=hash_embedder, jobs=1, cache_root=tmp_path / "cache")
    assert report.kernels > 4 and report.parsed == 2
    assert triton.PARSES - before == 2
    again = mine(DirectorySource(repo), KnowledgeBase.open(str(tmp_path / "other")), embedder=hash_embedder,
                 jobs=1, cache_root=tmp_path / "cache")
    assert again.cached == 2 and triton.PARSES - before == 2


def test_facts_read_back_without_a_tree_are_judged_the_same():
    """Facts from the cache or the store carry no tree: the data-flow view then parses the
    kernel's own source once (lines shifted back to the file's) and every skeleton judges
    it exactly as it judged the freshly extracted kernel."""
    import skel.kernels.triton as triton
    from skel.kernels.model import KernelFacts
    from skel.skeletons.registry import all_skeletons, fixture_path

    path = fixture_path("incremental-pointer-advance")
    fresh = extract_file(path.read_text(), str(path))
    for k in fresh:
        back = KernelFacts.from_dict(k.to_dict())
        assert back.syntax is None
        before = triton.PARSES
        for s in all_skeletons():
            a, b = s.assess(k), s.assess(back)
            assert (a.present, a.matched, a.failed) == (b.present, b.matched, b.failed), (k.name, s.id)
        assert triton.PARSES - before == 1


HELPERS = '''
import triton
import triton.language as tl


@triton.jit
def tanh(x):
    return 2 * tl.sigmoid(2 * x) - 1


@triton.jit
def remap_xcd(pid, GRID_MN, NUM_XCDS: tl.constexpr = 8):
    per_xcd = (GRID_MN + NUM_XCDS - 1) // NUM_XCDS
    return (pid % NUM_XCDS) * per_xcd + pid // NUM_XCDS


@triton.jit
def scaled_exp(x, scale):
    return tl.exp(x * scale)


@triton.jit
def load_tile(ptr, offs, n):
    return tl.load(ptr + offs, mask=offs < n, other=0.0)


@triton.jit
def gelu_tanh_kernel(x_ptr, y_ptr, n, GRID_MN, BLOCK: tl.constexpr):
    pid = remap_xcd(tl.program_id(0), GRID_MN)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    for i in range(2):
        x = load_tile(x_ptr, offs, n)
        tl.store(y_ptr + offs, 0.5 * x * (1 + tanh(0.79788456 * x)), mask=offs < n)


@triton.jit
def unused_store_kernel(x_ptr, n):
    tl.store(x_ptr, n)


@triton.jit
def launched_and_called(x_ptr):
    tl.store(x_ptr, 1.0)


@triton.jit
def caller(x_ptr):
    launched_and_called(x_ptr)


def launch(x):
    launched_and_called[(1,)](x)
'''


def test_device_helpers_are_not_kernels_and_their_facts_fold_into_callers():
    ks = {k.name: k for k in extract_file(HELPERS, "helpers.py")}
    # tanh / remap_xcd / load_tile are called by a kernel; scaled_exp is called by none but
    # takes no pointer and returns a value; a function that stores, or is launched, is a kernel
    assert set(ks) == {"gelu_tanh_kernel", "unused_store_kernel", "launched_and_called", "caller"}
    k = ks["gelu_tanh_kernel"]
    src = HELPERS.splitlines()
    assert set(k.folded) == {"tanh", "remap_xcd", "load_tile"}
    (sig,) = k.calls_named("tl.sigmoid")  # tanh's call, at tanh's own line
    assert "tl.sigmoid(2 * x)" in src[sig.line - 1] and k.helper_at(sig.line) == "tanh"
    assert sig.loop_depth == 1, "tanh is called inside the kernel's loop"
    (ld,) = k.calls_named("tl.load")
    assert k.helper_at(ld.line) == "load_tile" and ld.kwargs["other"] == "0.0"
    assert "NUM_XCDS" in k.names and k.helper_at(k.names["NUM_XCDS"]) == "remap_xcd"
    # the helper's parameters are bound to what the kernel passes
    assert any(a.targets == ["ptr"] and a.value == "x_ptr" for a in k.assigns)
    assert set(ks["caller"].folded) == {"launched_and_called"}
    every = {k.name for k in extract_file(HELPERS, "helpers.py", helpers=True)}
    assert {"tanh", "remap_xcd", "scaled_exp", "load_tile"} <= every
    back = type(k).from_dict(k.to_dict())
    assert back.folded == k.folded and back.helper_at(sig.line) == "tanh"


def test_a_helper_only_module_has_no_kernel():
    src = "import triton\nimport triton.language as tl\n\n@triton.jit\ndef exp2(x):\n    return tl.exp2(x)\n"
    assert extract_file(src) == []
    assert [k.name for k in extract_file(src, helpers=True)] == ["exp2"]


def test_the_flow_view_walks_device_helpers_as_if_inlined():
    from skel.kernels.flow import flow_of

    (k,) = [k for k in extract_file(HELPERS, "helpers.py") if k.name == "gelu_tanh_kernel"]
    fl = flow_of(k)
    src = HELPERS.splitlines()
    (sig,) = fl.named("tl.sigmoid")
    assert "tl.sigmoid(2 * x)" in src[sig.line - 1] and fl.text(sig.node) == "tl.sigmoid(2 * x)"
    assert sig.loops and sig.loops[0].kind == "range", "tanh is called in the kernel's loop"
    (ld,) = fl.loads()
    names, _ = fl.closure(ld.arg(0, "pointer"))
    assert {"ptr", "x_ptr", "offs"} <= names, "load_tile's `ptr` is bound to the kernel's `x_ptr`"


def test_embedded_text_is_plain_words_each_said_once():
    # the document the model embeds: module prefixes, underscores, repeats and parameter
    # names cost word pieces (the model's time grows with them) and told it nothing the
    # retrieval benchmark's dev split could use
    (k,) = extract_file('''
import triton
import triton.language as tl

@triton.autotune(configs=[], key=["n_cols"])
@triton.jit
def _rms_norm_fwd_kernel(x_ptr, y_ptr, w_ptr, stride_x_row, stride_y_row, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + row * stride_x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    r = tl.math.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(y_ptr + row * stride_y_row + cols, x * r * tl.load(w_ptr + cols))
''', "norm.py")
    assert k.text() == ("triton kernel rms norm fwd kernel. calls: arange load program id rsqrt store sum to. "
                        "loops: none. decorators: autotune.")
