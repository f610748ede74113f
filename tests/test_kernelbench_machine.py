"""KernelBench files get their machine code compared offline (issue #36, item 4): the candidate's
``ModelNew`` against ORIGINAL's own ``ModelNew`` (the Triton version being improved), both
compiled for sm_90 on this GPU-less machine on ``get_inputs()``. A renamed copy is a no-op; a
real change (a different mask) is not; a PyTorch-only ``Model`` says in one line why nothing
was compared."""

from __future__ import annotations

import pytest

from conftest import ROOT, write

pytest.importorskip("triton", reason="the [verify] extra (triton) is not installed")

from skel import api  # noqa: E402

CHEATERS = ROOT / "tests" / "cheaters"

KERNEL = '''
@triton.jit
def {name}(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask={mask}, other=0.0)
    tl.store(out_ptr + row, tl.sum(x, axis=0))


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape[0], dtype=x.dtype, device=x.device)
        {name}[(x.shape[0],)](x, out, x.stride(0), x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        return out
'''

HEAD = '''
import torch
import triton
import triton.language as tl
'''

# The problem with the Triton version being improved beside Model, as ORIGINAL.
PROBLEM = HEAD + '''
batch_size = 8
n_cols = 200


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.sum(x, dim=1)


def get_inputs():
    return [torch.rand(batch_size, n_cols)]


def get_init_inputs():
    return []
''' + KERNEL.format(name="rowsum_kernel", mask="cols < n_cols")


def _applied(result):
    return next(s for s in result.stages if s.name == "applied")


def test_a_renamed_copy_of_the_originals_modelnew_is_a_no_op(tmp_path):
    orig = write(tmp_path / "problem.py", PROBLEM)
    cand = write(tmp_path / "renamed.py", HEAD + KERNEL.format(name="renamed_kernel", mask="cols < n_cols"))
    r = api.verify(orig, cand, device="cpu")
    assert r.format == "kernelbench"
    assert r.record.verdict == "no-op", r.record.detail
    assert "identical PTX" in r.record.detail and "compiled offline for sm_90" in r.record.detail
    assert "the original's ModelNew" in r.record.detail


def test_a_real_change_compiles_to_different_machine_code(tmp_path):
    orig = write(tmp_path / "problem.py", PROBLEM)
    cand = write(tmp_path / "drops.py", HEAD + KERNEL.format(name="rowsum_kernel", mask="cols < n_cols - 1"))
    r = api.verify(orig, cand, device="cpu")
    stage = _applied(r)
    assert stage.status == "passed"
    assert "machine code differs" in stage.detail and "compiled offline for sm_90" in stage.detail, stage
    assert not any("not a skel harness" in n for n in stage.notes)
    assert r.record.verdict == "wrong"  # the dropped column is still caught by the results stage
    assert any("compared offline only" in u for u in r.unchecked)


def test_a_pytorch_only_model_says_why_nothing_was_compared():
    r = api.verify(CHEATERS / "kb_rowsum.py", CHEATERS / "kb_rowsum_correct.py", device="cpu")
    stage = _applied(r)
    said = " ".join([stage.detail, *stage.notes])
    assert "not a skel harness" not in said and "offline compile failed" not in said
    assert "Model launches no Triton kernel (PyTorch only)" in said
    assert "the candidate: 1 launch(es), compiled offline for sm_90" in said
    assert any("PyTorch only" in u for u in r.unchecked)
    assert r.record.verdict == "correct"
    assert "memcheck: not run (CPU)" in r.record.notes
