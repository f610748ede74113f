"""The applied? stage on the CPU: parse failures and absent techniques are "not-applied"; a
renamed copy of a kernel is a "no-op" (machine code compiled offline for sm_90); the
normalisation that makes that comparison fair is tested on fake machine code."""

from __future__ import annotations

import os

import pytest

from conftest import write

pytest.importorskip("triton")
os.environ.setdefault("TRITON_INTERPRET", "1")

from skel.skeletons.pairs import example_path, module_name  # noqa: E402
from skel.verifier import applied  # noqa: E402
from skel.verifier.applied import LaunchCode, check_applied, normalise, same_machine_code  # noqa: E402

EX = example_path("online-softmax")


@pytest.fixture(scope="module")
def h():
    from skel.verifier.harness import Harness, import_file

    return Harness.from_module(import_file(EX, module_name("online-softmax")))


def test_candidate_that_does_not_parse_is_not_applied(tmp_path):
    bad = write(tmp_path / "cand.py", "import triton\n@triton.jit\ndef k(x:\n    pass\n")
    r = check_applied(EX, bad, kernel=None, skeleton=None, harness=None, orig_fn=None, cand_fn=None, device="cpu")
    assert r.verdict == "not-applied" and "does not parse" in r.detail


def test_technique_absent_is_not_applied(h):
    r = check_applied(EX, EX, kernel=None, skeleton="online-softmax", harness=None, orig_fn=h.launcher("before"),
                      cand_fn=h.launcher("before"), device="cpu")
    assert r.verdict == "not-applied" and "not detected" in r.detail


def test_technique_present_continues_without_launchers(h):
    r = check_applied(EX, EX, kernel=None, skeleton="online-softmax", harness=None, orig_fn=h.launcher("before"),
                      cand_fn=h.launcher("after"), device="cpu")
    assert r.verdict is None and any("machine code not compared" in n for n in r.notes)


def test_normalise_strips_names_comments_and_debug():
    a = ".visible .entry before_kernel(\n .param .u64 before_kernel_param_0\n)\n\t.loc 1 3 0\n add.s32 %r1;  // x\n" \
        ".section .debug_info {\n junk\n}"
    b = ".visible .entry after_kernel(\n .param .u64 after_kernel_param_0\n)\n\t.loc 1 9 4\n add.s32 %r1;  // y\n"
    assert normalise(a, "ptx", ["before_kernel"]) == normalise(b, "ptx", ["after_kernel"])
    sa = "Function:before_kernel\n--:-:1:-:7\tS2R R0, SR_TID.X;\n"
    sb = "Function:after_kernel\n--:-:1:-:7\tS2R R0, SR_TID.X;\n"
    assert normalise(sa, "sass", ["before_kernel"]) == normalise(sb, "sass", ["after_kernel"])
    assert normalise(sa, "sass", []) != normalise(sa.replace("TID.X", "TID.Y"), "sass", [])


def test_same_machine_code_logic():
    x, y = LaunchCode("k", "sass", "A", "(4,)"), LaunchCode("k", "sass", "B", "(4,)")
    assert same_machine_code([x], [LaunchCode("j", "sass", "A", "(4,)")])[0]
    assert not same_machine_code([x], [y])[0]
    regridded = [LaunchCode("k", "sass", "A", "(8,)")]
    assert same_machine_code([x], regridded) == (False, "same machine code, different grids")
    assert not same_machine_code([x], [x, x])[0]
    assert not same_machine_code([], [])[0]


def test_fake_gpu_no_op_decision(h, monkeypatch):
    code = [LaunchCode("k", "sass", "SAME", "(4,)")]
    monkeypatch.setattr(applied, "launches_of", lambda *a, **k: list(code))
    monkeypatch.setattr(type(h), "gpu_shapes", property(lambda self: ("vocab",)))
    r = check_applied(EX, EX, kernel=None, skeleton=None, harness=h, orig_fn=h.launcher("before"),
                      cand_fn=h.launcher("after"), device="cuda")
    assert r.verdict == "no-op" and "identical SASS" in r.detail


RENAMED = '''
import triton
import triton.language as tl
from skel.skeletons.catalog.online_softmax.example import *  # noqa: F403  (the harness)


@triton.jit
def renamed_kernel(x_ptr, lse_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_ptr += row * stride
    offs = tl.arange(0, BLOCK)
    m = float("-inf")
    for start in range(0, n_cols, BLOCK):
        x = tl.load(x_ptr + start + offs, mask=start + offs < n_cols, other=float("-inf")).to(tl.float32)
        m = tl.maximum(m, tl.max(x, axis=0))
    l = 0.0
    for start in range(0, n_cols, BLOCK):
        x = tl.load(x_ptr + start + offs, mask=start + offs < n_cols, other=float("-inf")).to(tl.float32)
        l += tl.sum(tl.exp(x - m), axis=0)
    tl.store(lse_ptr + row, m + tl.log(l))


def run(x, lse):
    renamed_kernel[(x.shape[0],)](x, lse, x.stride(0), x.shape[1], BLOCK=min(BLOCK, triton.next_power_of_2(x.shape[1])))
'''


def test_renamed_copy_is_a_no_op_offline_and_the_real_change_is_not(h, tmp_path):
    from skel.verifier.harness import import_file

    cand_path = write(tmp_path / "cand.py", RENAMED)
    cand = import_file(cand_path)
    r = check_applied(EX, cand_path, kernel=None, skeleton=None, harness=h, orig_fn=h.launcher("before"),
                      cand_fn=cand.run, device="cpu")
    assert r.verdict == "no-op", r
    assert "compiled offline for sm_90" in r.detail
    r = check_applied(EX, EX, kernel=None, skeleton="online-softmax", harness=h, orig_fn=h.launcher("before"),
                      cand_fn=h.launcher("after"), device="cpu")
    assert r.verdict is None and any("machine code differs" in n for n in r.notes), r
