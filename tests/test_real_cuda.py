"""Mining the CUDA C++ sources shipped inside the real sglang 0.5.23 wheel.

The wheel (39 MB) is fetched once with ``pip download --no-deps`` from the package index
into ``~/.cache/skel-test/`` and its C++/CUDA files unpacked there; nothing of it is
committed. Without the network these tests skip, saying so — unless
SKEL_REQUIRE_REAL_PACKAGES is set (CI), where a missing wheel is a failure.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

SGLANG = "0.5.23"
WHEEL = f"sglang-{SGLANG}-cp311-cp311-manylinux_2_34_x86_64.whl"
CACHE = Path(os.environ.get("SKEL_TEST_CACHE", Path.home() / ".cache" / "skel-test"))
CPP = (".cu", ".cuh", ".cpp", ".cc", ".hpp", ".h")


def _missing(why: str):
    if os.environ.get("SKEL_REQUIRE_REAL_PACKAGES"):
        pytest.fail(why)
    pytest.skip(why)


@pytest.fixture(scope="module")
def sglang_cpp() -> Path:
    """The wheel's C++/CUDA sources, unpacked (downloaded on first use)."""
    root = CACHE / f"sglang-{SGLANG}-cpp"
    if (root / ".complete").exists():
        return root
    wheel = CACHE / WHEEL
    if not wheel.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        # pinned to the cp311 manylinux wheel whatever Python runs the tests: only its sources are read
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version",
               "3.11", "--platform", "manylinux_2_34_x86_64", f"sglang=={SGLANG}", "-d", str(CACHE)]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        if done.returncode != 0 or not wheel.exists():
            last = (done.stderr.strip().splitlines() or ["?"])[-1]
            _missing(f"could not download the sglang {SGLANG} wheel: {last}")
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if name.endswith(CPP):
                z.extract(name, root)
    (root / ".complete").write_text(SGLANG)
    return root


@pytest.fixture(scope="module")
def units(sglang_cpp):
    from skel.kernels.extract import extract, hint

    out = {}
    for p in sorted(sglang_cpp.rglob("*")):
        if p.suffix in CPP and p.is_file():
            text = p.read_text(encoding="utf-8", errors="replace")
            if hint(text, p.name):
                rel = p.relative_to(sglang_cpp).as_posix()
                out[rel] = extract(text, rel)
    return out


def _unit(units, file, function):
    found = [k for k in units[file] if k.name == function]
    assert len(found) == 1, f"{file}:{function} found {len(found)} times"
    return found[0]


def test_every_cuda_file_is_read_and_its_kernels_found(units):
    kernels = sum(1 for ks in units.values() for k in ks if k.kind == "kernel")
    bindings = sum(1 for ks in units.values() for k in ks if k.kind == "binding")
    # counted on 0.5.23: a change of the extractor that loses (or invents) units shows here
    assert (len(units), kernels, bindings) == (216, 333, 23), (len(units), kernels, bindings)


@pytest.mark.parametrize("file,function,line,facts", [
    # `__global__ __launch_bounds__(kThreads) void` (the bound before the return type), a template,
    # and the __device__ GEMV helpers it calls folded in
    ("sglang/kernels/jit/csrc/dsa_gfx950/dual_gemv_bf16.cuh", "dual_gemv_kernel", 207,
     {"launch_bounds": ["kThreads"], "folded": {"gemv_q", "gemv_kw"}}),
    ("sglang/kernels/jit/csrc/qprep_bf16_fp8_sm90/kernel.cuh", "qprep_bf16_fp8_kernel", 507,
     {"launch_bounds": ["Kernel::NUM_THREADS", "Kernel::MIN_CTAS"], "folded": {"load_a_tile"}}),
])
def test_kernels_at_their_places(units, file, function, line, facts):
    k = _unit(units, file, function)
    assert (k.kind, k.line_start) == ("kernel", line)
    assert k.decorator("__launch_bounds__").list_items == facts["launch_bounds"]
    assert facts["folded"] <= set(k.folded)


def test_python_binding_with_its_def(units):
    k = _unit(units, "sglang/srt/mem_cache/cpp_utils/hash_binding.cpp", "get_hash")
    assert k.kind == "binding" and k.line_start == 390
    (own,) = [b for b in k.bindings if b["self"]]
    assert (own["python_name"], own["owner"], own["line"]) == ("get_hash", "module", 405)


@pytest.fixture(scope="module")
def mined(sglang_cpp, tmp_path_factory):
    """`skel mine` of the unpacked C++/CUDA sources, as a user would mine a checkout."""
    from skel.embed import HashEmbedder
    from skel.miner.mine import mine
    from skel.miner.sources import DirectorySource
    from skel.store.knowledge import KnowledgeBase

    kb = KnowledgeBase.open(str(tmp_path_factory.mktemp("real-cuda") / "store"))
    report = mine(DirectorySource(sglang_cpp, name="sglang", version=SGLANG), kb, jobs=2, embedder=HashEmbedder())
    return kb, report


def _record(kb, file, function, line):
    recs = [r for r in kb.kernels(where={"$and": [{"file": file}, {"function": function}]}) if r.line_start == line]
    assert len(recs) == 1, f"{file}:{line}:{function} found {len(recs)} times"
    return recs[0]


# (file, kernel, its first line, techniques it uses, skeletons suggested for it): read off the
# sources by hand (the evidence line each detection points at is checked below)
PLACES = [
    ("sglang/kernels/jit/csrc/sparse_mla_q8kv8_prefill_sm90/kernel.cuh", "sparse_mla_q8kv8_prefill_kernel", 1062,
     {"tma-store-epilogue", "warp-specialized-mbarrier", "wgmma-async-mma"}, set()),
    ("sglang/kernels/jit/csrc/gemm/dsv3_fused_a_gemm.cuh", "fused_a_gemm_kernel", 511,
     {"warp-specialized-mbarrier", "cuda-programmatic-dependent-launch"}, set()),
    ("sglang/kernels/jit/csrc/attention/kda_prefill.cu", "k1_factors_mma", 1330,
     {"wgmma-async-mma", "cp-async-multistage"}, set()),
    ("sglang/kernels/jit/csrc/moe/moe_finalize_fuse_shared.cu", "moeFinalizeKernel", 67,
     {"cuda-programmatic-dependent-launch"}, set()),
    ("sglang/kernels/jit/csrc/deepseek_v4/block_amax.cuh", "amax8_varlen_kernel", 53,
     {"cuda-programmatic-dependent-launch", "launch-bounds-occupancy"}, set()),
    ("sglang/kernels/jit/csrc/elementwise/pos_enc.cuh", "rotary_embedding_kernel", 87,
     set(), {"cuda-programmatic-dependent-launch"}),
    ("sglang/kernels/jit/csrc/moe/topk_sum.cuh", "topk_sum_kernel", 27, set(), {"launch-bounds-occupancy"}),
    ("sglang/kernels/ops/diffusion/ext/hunyuan3d_rasterizer/rasterizer_gpu.cu", "rasterizeImagecoordsKernelGPU", 99,
     set(), {"launch-bounds-occupancy"}),
    ("sglang/kernels/jit/csrc/qprep_bf16_fp8_sm90/kernel.cuh", "qprep_bf16_fp8_kernel", 507,
     {"wgmma-async-mma", "cp-async-multistage"}, {"persistent-tile-scheduler"}),
]


@pytest.mark.parametrize("file,function,line,uses,fits", PLACES, ids=lambda v: v if isinstance(v, str) else None)
def test_mining_finds_techniques_at_their_places(mined, file, function, line, uses, fits):
    kb, _ = mined
    rec = _record(kb, file, function, line)
    assert uses <= set(rec.techniques), f"missing {uses - set(rec.techniques)} (has {rec.techniques})"
    assert fits <= set(rec.applicable), f"not suggested: {fits - set(rec.applicable)} (fits {rec.applicable})"
    assert not (fits & set(rec.techniques))


def test_mine_report_counts_the_cuda_units(mined):
    _, report = mined
    assert report.kernels == 333 + 23 and not [s for s in report.skipped if "syntax" in s.reason]
