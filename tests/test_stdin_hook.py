"""Where engineers already look: `skel suggest -` (a kernel on standard input, for editor
integrations) and the pre-commit hook (`.pre-commit-hooks.yaml` → `skel hook`)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys

import yaml

from conftest import ROOT, run_skel, write
from skel.skeletons.registry import fixture_file

SOFTMAX = (ROOT / "examples" / "row_softmax.py").read_text()
CUDA = fixture_file("cp_async_multistage.cu")


def _stdin(*args: str, text: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "skel.cli", "suggest", "-", *args], input=text,
                          capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_stdin_answers_as_the_file_would(tmp_path):
    f = write(tmp_path / "softmax.py", SOFTMAX)
    from_file = json.loads(run_skel("suggest", str(f), "--json").stdout)
    r = _stdin("--json", "--stdin-name", "softmax.py", text=SOFTMAX)
    assert r.returncode == 0, r.stderr
    from_stdin = json.loads(r.stdout)
    (a,), (b,) = from_file["kernels"], from_stdin["kernels"]
    assert b["path"] == "softmax.py", "results name the given name, not a temporary file"
    assert [s["id"] for s in a["suggestions"]] == [s["id"] for s in b["suggestions"]]
    assert [s["why"] for s in a["suggestions"]] == [s["why"] for s in b["suggestions"]]


def test_stdin_name_sets_the_language_and_the_default_is_python():
    cu = CUDA.read_text()
    r = _stdin("--stdin-name", "gemm.cu", "--format", "prompt", text=cu)
    assert r.returncode == 0, r.stderr
    assert "`gemm.cu`" in r.stdout and "skel verify gemm.cu gemm_" in r.stdout
    # without a name it is read as Python: C++ text has no @triton.jit kernel, exit 2 with that said
    r = _stdin(text=cu)
    assert r.returncode == 2 and "stdin.py" in r.stderr and "@triton.jit" in r.stderr
    assert "skel-stdin-" not in r.stderr, "the temporary path never shows"


def test_stdin_exit_codes():
    trivial = "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef k(x_ptr, y_ptr):\n" \
              "    tl.store(y_ptr, tl.load(x_ptr))\n"
    assert _stdin(text=trivial).returncode == 1
    r = _stdin("--stdin-name", "..", text=trivial)
    assert r.returncode == 2 and "--stdin-name" in r.stderr


ROW_SCALE = """
import triton
import triton.language as tl


@triton.jit
def row_scale(x_ptr, y_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
    tl.store(y_ptr + row * stride + cols, x * 2.0, mask=cols < n_cols)
"""


def test_stdin_name_carries_a_path_whose_facts_apply_and_are_said(tmp_path):
    """`--stdin-name sglang/srt/layers/ops.py` judges the buffer as that file would be: in a
    serving engine's package int64-offsets loses a condition, as it does for the file on disk,
    and a note says the path decided it; the answer names the path given, never the temporary one."""
    on_disk = write(tmp_path / "sglang" / "srt" / "layers" / "ops.py", ROW_SCALE)
    asked = ("--json", "--why-not", "int64-offsets")
    (from_file,) = json.loads(run_skel("suggest", str(on_disk), *asked).stdout)["kernels"]
    r = _stdin(*asked, "--stdin-name", "sglang/srt/layers/ops.py", text=ROW_SCALE)
    assert r.returncode in (0, 1), r.stderr
    (served,) = json.loads(r.stdout)["kernels"]
    assert served["path"] == "sglang/srt/layers/ops.py"
    assert served["why_not"][0]["verdict"] == from_file["why_not"][0]["verdict"]
    assert any("no module of an LLM serving engine" in f for f in served["why_not"][0]["fails"])
    assert any(n.startswith("judged as part of a serving engine (sglang) from its path") for n in served["notes"])
    assert not any("skel-stdin-" in n for n in served["notes"])
    # the bare file name: no serving engine, no such note, int64-offsets waits on sizes
    (bare,) = json.loads(_stdin(*asked, "--stdin-name", "ops.py", text=ROW_SCALE).stdout)["kernels"]
    assert not any("serving engine" in n for n in bare["notes"])
    assert bare["why_not"][0]["verdict"] != served["why_not"][0]["verdict"]
    # an absolute path or `..` parts never write outside the temporary folder
    r = _stdin("--stdin-name", "/../../sglang/srt/ops.py", "--no-template", text=ROW_SCALE)
    assert r.returncode in (0, 1), r.stderr
    assert "serving engine (sglang)" in r.stdout and "/../../sglang/srt/ops.py" in r.stdout


def _hook() -> dict:
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    return hook


def test_hook_file_selects_every_kernel_suffix_and_nothing_else():
    from skel.kernels.extract import SUFFIXES

    hook = _hook()
    assert hook["id"] == "skel-suggest" and hook["language"] == "python"
    files = re.compile(hook["files"])
    assert all(files.search(f"a/b/k{suffix}") for suffix in SUFFIXES)
    assert not any(files.search(name) for name in ("README.md", "setup.cfg", "k.pyc", "data.json"))


def _run_hook(*files: str, extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """The way pre-commit runs it: the hook's entry, its args, then the staged files."""
    hook = _hook()
    entry = shlex.split(hook["entry"])
    assert entry[0] == "skel"  # the console script; here the checkout's module stands in for it
    cmd = [sys.executable, "-m", "skel.cli", *entry[1:], *hook.get("args", []), *extra, *files]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_hook_reports_and_never_fails_on_suggestions(tmp_path):
    kernel = write(tmp_path / "softmax.py", SOFTMAX)
    plain = write(tmp_path / "util.py", "def add(a, b):\n    return a + b\n")
    r = _run_hook(str(kernel), str(plain))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines and all(line.startswith(f"{kernel}:") for line in lines), "only the kernel file is reported"
    assert any(re.match(rf"{re.escape(str(kernel))}:27: online-softmax — ", line) for line in lines)
    assert r.stderr == ""


def test_hook_reports_errors_and_fails_on_them_only_with_strict(tmp_path):
    kernel = write(tmp_path / "softmax.py", SOFTMAX)
    broken = write(tmp_path / "broken.py", "import triton\n\n@triton.jit\ndef k(x_ptr:\n")
    r = _run_hook(str(kernel), str(broken))
    assert r.returncode == 0 and "broken.py: error: " in r.stderr and "online-softmax" in r.stdout
    r = _run_hook(str(kernel), str(broken), extra=("--strict",))
    assert r.returncode == 2 and "broken.py: error: " in r.stderr
    # no kernel is not an error, even with --strict
    plain = write(tmp_path / "util.py", "x = 1\n")
    assert _run_hook(str(plain), extra=("--strict",)).returncode == 0
