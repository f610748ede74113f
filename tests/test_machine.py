"""Machine-code facts of Triton kernels compiled offline for sm_90 (skel/kernels/machine.py).

Real compiles: each distinct kernel is compiled once, in a child process, with Triton's own
compiler and bundled ptxas (about half a second each); the rest are cache hits.
"""

from __future__ import annotations

import json

import pytest

from skel.kernels import machine
from skel.kernels.machine import (
    Launch,
    MachineFactsUnavailable,
    machine_facts,
    occupancy,
    pointer_params,
    ptx_facts,
    ptxas_log_facts,
    same_machine_code,
)

pytest.importorskip("triton")

COPY = '''
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)
'''

# the same program: a renamed local, a comment, another kernel beside it
COPY_RENAMED = '''
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # one block of BLOCK elements per program
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    in_bounds = idx < n
    tl.store(y_ptr + idx, tl.load(x_ptr + idx, mask=in_bounds), mask=in_bounds)


@triton.jit
def unused_kernel(z_ptr):
    tl.store(z_ptr, 1.0)
'''

GEMM = '''
import triton
import triton.language as tl


@triton.jit
def gemm_tile(a_ptr, b_ptr, c_ptr, K, stride_am, stride_bk, stride_cm,
              BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * stride_am + rk[None, :]
    b = b_ptr + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, K, BK):
        acc += tl.dot(tl.load(a), tl.load(b))
        a += BK
        b += BK * stride_bk
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(tl.float16))
'''

EXP = '''
import triton
import triton.language as tl


@triton.jit
def exp_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr = 256):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n).to(tl.float32)
    tl.store(y_ptr + offs, tl.exp(x), mask=offs < n)
'''

BROKEN = '''
import triton
import triton.language as tl


@triton.jit
def broken_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.no_such_op(offs))
'''

COPY_LAUNCH = Launch(constexprs={"BLOCK": 1024}, num_warps=4, divisible=("n",))


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    """One cache for the whole module: a kernel compiled by one test is a hit in the next."""
    monkeypatch.setenv("SKEL_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "skel-cache"))


def test_vectorised_copy_loads_and_stores_128_bits():
    f = machine_facts(COPY, "copy_kernel", COPY_LAUNCH)
    # 1024 fp16 over 128 threads: 8 halves each, one 16-byte access
    assert (f.loads.v4, f.loads.scalar, f.loads.widest) == (1, 0, 16)
    assert (f.stores.v4, f.stores.widest) == (1, 16)
    assert f.arch == "sm_90" and f.num_warps == 4 and f.mma == "none" and f.mufu == {}
    assert 0 < f.registers <= 64 and f.spilled_bytes == 0
    assert f.occupancy.blocks_per_sm == 16 and f.occupancy.limited_by == "warps"
    assert f.signature == {"x_ptr": "*fp16", "y_ptr": "*fp16", "n": "i32", "BLOCK": "constexpr=1024"}
    assert "n: i32" in f.assumed and len(f.ptx_hash) == 64


def test_a_length_not_known_divisible_keeps_masked_accesses_scalar():
    f = machine_facts(COPY, "copy_kernel", Launch(constexprs={"BLOCK": 1024}, num_warps=4))
    assert f.loads.v4 == 0 and f.loads.scalar > 0 and f.loads.widest == 2


def test_dot_tile_uses_tensor_cores_on_sm90():
    f = machine_facts(GEMM, "gemm_tile", Launch(constexprs={"BM": 128, "BN": 128, "BK": 64}, num_warps=4,
                                                divisible=("stride_am", "stride_bk", "stride_cm")))
    assert f.mma in ("wgmma", "mma.sync") and f.mma_count > 0
    assert f.shared_bytes > 0 and f.registers > 0


def test_exp_counts_mufu_and_takes_the_constexpr_default():
    f = machine_facts(EXP, "exp_kernel")
    assert f.mufu.get("ex2", 0) >= 1
    assert "BLOCK=256 from the signature's default" in f.assumed


def test_unknown_op_gives_a_reason():
    with pytest.raises(MachineFactsUnavailable, match="does not compile for sm_90.*no_such_op"):
        machine_facts(BROKEN, "broken_kernel", Launch(constexprs={"BLOCK": 64}))


def test_missing_constexpr_and_missing_kernel_give_reasons():
    with pytest.raises(MachineFactsUnavailable, match="constexpr 'BLOCK'.*Launch.constexprs"):
        machine_facts(COPY, "copy_kernel")
    with pytest.raises(MachineFactsUnavailable, match="no kernel named 'nope'"):
        machine_facts(COPY, "nope", COPY_LAUNCH)
    with pytest.raises(MachineFactsUnavailable, match="importing the file failed: ZeroDivisionError"):
        machine_facts("x = 1 / 0\n", "k")


def test_no_triton_is_a_reason(monkeypatch):
    monkeypatch.setattr(machine, "triton_version", lambda: None)
    with pytest.raises(MachineFactsUnavailable, match="Triton is not installed"):
        machine_facts(COPY, "copy_kernel", COPY_LAUNCH)


def test_cache_hit_does_not_compile_again(monkeypatch, tmp_path):
    monkeypatch.setenv("SKEL_CACHE_DIR", str(tmp_path))
    calls = []
    real = machine._compile

    def counting(spec, timeout):
        calls.append(spec["kernel"])
        return real(spec, timeout)

    monkeypatch.setattr(machine, "_compile", counting)
    launch = Launch(constexprs={"BLOCK": 512}, num_warps=2, divisible=("n",))
    first = machine_facts(COPY, "copy_kernel", launch)
    second = machine_facts(COPY, "copy_kernel", launch)
    assert calls == ["copy_kernel"]
    assert not first.cached and second.cached
    assert second.to_json() | {"cached": False} == first.to_json()
    # a corrupt entry is recomputed, not fatal
    (entry,) = (tmp_path / "machine").glob("*.json")
    entry.write_text("{not json")
    third = machine_facts(COPY, "copy_kernel", launch)
    assert calls == ["copy_kernel", "copy_kernel"] and third.ptx_hash == first.ptx_hash
    assert json.loads(entry.read_text())["facts"]["ptx_hash"] == first.ptx_hash
    # a failed compile is cached too
    with pytest.raises(MachineFactsUnavailable):
        machine_facts(BROKEN, "broken_kernel", Launch(constexprs={"BLOCK": 64}))
    with pytest.raises(MachineFactsUnavailable, match="no_such_op"):
        machine_facts(BROKEN, "broken_kernel", Launch(constexprs={"BLOCK": 64}))
    assert calls.count("broken_kernel") == 1


def test_same_machine_code():
    assert same_machine_code(COPY, COPY_RENAMED, "copy_kernel", COPY_LAUNCH) is True
    assert same_machine_code(COPY, EXP.replace("exp_kernel", "copy_kernel"), "copy_kernel", COPY_LAUNCH) is False
    assert same_machine_code(COPY, BROKEN, "copy_kernel", COPY_LAUNCH) is None


# ---- the pure parts ----------------------------------------------------------------------------

def test_occupancy_arithmetic():
    # 38 registers -> 40 per thread, 1280 per warp: 12 warps per sub-partition, 48 per SM
    assert occupancy(38, 32, 8) == machine.Occupancy(6, 48, 64, "registers")
    assert occupancy(255, 0, 4).blocks_per_sm == 2  # 8192 registers a warp: 8 warps per SM
    assert occupancy(32, 100 * 1024, 4) == machine.Occupancy(2, 8, 64, "shared")
    assert occupancy(32, 300 * 1024, 4).blocks_per_sm == 0
    assert occupancy(16, 0, 1).limited_by == "blocks"


def test_ptx_and_log_parsing():
    ptx = "\n".join([
        "\t@%p1 ld.global.v4.b32 { %r1, %r2, %r3, %r4 }, [ %rd1 + 0 ];",
        "\tld.global.L1::evict_last.v2.b32 { %r5, %r6 }, [ %rd2 + 0 ];",
        "\t@!%p2 st.global.b16 [ %rd3 + 0 ], { %rs1 };",
        "\tex2.approx.f32 %f2, %f1;", "\tex2.approx.ftz.f32 %f3, %f1;", "\trsqrt.approx.ftz.f32 %f4, %f3;",
        "\tdiv.full.f32 %f5, %f4, %f3;", "\tmma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {...};",
        "\tcp.async.cg.shared.global [ %r1 + 0 ], [ %rd1 + 0 ], 0x10, %r2;",
    ])
    p = ptx_facts(ptx)
    assert p["loads"] == {"scalar": 0, "v2": 1, "v4": 1, "bytes": {16: 1, 8: 1}}
    assert p["stores"] == {"scalar": 1, "v2": 0, "v4": 0, "bytes": {2: 1}}
    assert p["mufu"] == {"div.full": 1, "ex2": 2, "rsqrt": 1}
    assert (p["mma"], p["mma_count"], p["other"]) == ("mma.sync", 1, {"cp.async": 1})
    log = ("ptxas info    : Compiling entry function 'k' for 'sm_90a'\nptxas info    : Function properties for k\n"
           "    0 bytes stack frame, 24 bytes spill stores, 16 bytes spill loads\n"
           "ptxas info    : Used 255 registers, used 1 barriers, 1024 bytes smem\n")
    assert ptxas_log_facts(log, "k") == {"registers": 255, "spill_stores": 24, "spill_loads": 16,
                                         "static_smem": 1024}
    assert ptxas_log_facts(log, "other") is None


def test_pointer_params_from_addresses():
    src = '''
def k(X, Y, stride, n, start, W_ptr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    X += row * stride
    offs = start + tl.arange(0, BLOCK)
    base = Y + row * stride
    w = tl.load(W_ptr + offs)
    tl.store(base + offs, tl.load(X + offs, mask=offs < n) * w)
'''
    assert pointer_params(src) == {"X", "Y", "W_ptr"}
