"""Launch-side measures on the CPU: compile counting with real Triton compiles (offline, for
sm_90, no GPU), and the GPU-only paths failing loudly."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, write

pytest.importorskip("triton")

HARNESS = '''
import torch
import triton
import triton.language as tl

SHAPES = {"a": dict(N=1000), "b": dict(N=1024), "c": dict(N=1), "d": dict(N=1003)}
CPU_SHAPES = ("a",)
DTYPES = ("float32",)
TOLERANCES = {"float32": (0.0, 0.0)}
MEASURE = "compile"
SEQUENCE = ("a", "b", "c", "d")


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape["N"], generator=g).to(dtype).to(device),)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["N"], dtype=dtype, device=device),)


def reference(x):
    return (x * 2,)


@triton.jit
def before_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def before(x, y):
    before_kernel[(triton.cdiv(x.numel(), 128),)](x, y, x.numel(), BLOCK=128)


@triton.jit(do_not_specialize=["n"])
def after_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def after(x, y):
    after_kernel[(triton.cdiv(x.numel(), 128),)](x, y, x.numel(), BLOCK=128)
'''

CHILD = '''
import json, sys
from pathlib import Path
from skel.verifier.gpu import offline_cuda
from skel.verifier.harness import Harness
from skel.verifier.launch import compile_counts
h = Harness.from_file(Path(sys.argv[1]))
with offline_cuda():
    out = {side: compile_counts(h, h.launcher(side), "cpu", list(h.sequence), "float32", offline=True)[0]
           for side in ("before", "after", "before")}
print(json.dumps(out))
'''


def test_compile_count_follows_specialisation(tmp_path):
    path = write(tmp_path / "pair.py", HARNESS)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    env["TRITON_CACHE_DIR"] = str(tmp_path / "cache")
    proc = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    counts = json.loads(proc.stdout.strip().splitlines()[-1])
    # n=1000 and n=1003: one key; n=1024: divisible by 16; n=1: specialised to a constant.
    # Counted again from cold caches on the second "before" (the dict keeps the last).
    assert counts == {"before": 3, "after": 1}


def test_gpu_measures_refuse_the_cpu(tmp_path):
    os.environ["TRITON_INTERPRET"] = "1"
    from skel.verifier import launch
    from skel.verifier.harness import Harness

    h = Harness.from_file(write(tmp_path / "pair.py", HARNESS))
    with pytest.raises(RuntimeError, match="need a GPU"):
        launch.measure(h, h.launcher("before"), h.launcher("after"), "cpu")
