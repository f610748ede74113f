"""Sizes from the repository's own tests and benchmarks (issue #35 item 1): `skel suggest`
reads the calls they make to a kernel's launcher, without running them, and the payoffs
that waited on a size (int64 offsets, several rows per program) are decided by them, saying
where the sizes came from (skel/kernels/callers.py)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from conftest import run_skel, write
from skel.kernels import callers
from skel.retriever.suggest import load_kernels, suggest

KERNEL = '''
import torch
import triton
import triton.language as tl


@triton.jit
def row_scale(x_ptr, y_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
    tl.store(y_ptr + row * stride + cols, x * 2.0, mask=cols < n_cols)


def scale(x):
    y = torch.empty_like(x)
    row_scale[(x.shape[0],)](x, y, x.stride(0), x.shape[1], BLOCK=1024, num_warps=4)
    return y


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, factor=2):
        return scale(x.contiguous())
'''

# one short row per program (a match for multi-row-per-program and int64-offsets)
ROWS_KERNEL = '''
import torch
import triton
import triton.language as tl


@triton.jit
def l2norm_row(x, y, rstd, eps, D, BD: tl.constexpr):
    i_t = tl.program_id(0)
    o_d = tl.arange(0, BD)
    b_x = tl.load(x + i_t * D + o_d, mask=o_d < D, other=0.0).to(tl.float32)
    b_rstd = 1 / tl.sqrt(tl.sum(b_x * b_x, axis=0) + eps)
    tl.store(y + i_t * D + o_d, b_x * b_rstd, mask=o_d < D)
    tl.store(rstd + i_t, b_rstd)


def l2norm(x, eps=1e-6):
    T, D = x.shape
    y = torch.empty_like(x)
    rstd = torch.empty(T, dtype=torch.float32, device=x.device)
    l2norm_row[(T,)](x, y, rstd, eps, D, BD=triton.next_power_of_2(D))
    return y
'''


def _repo(root: Path, files: dict[str, str], kernel: str = KERNEL, marker: str | None = "pyproject.toml") -> Path:
    """A small repository: mylib/ops.py holding the kernel, and ``files`` beside it."""
    if marker:
        write(root / marker, "")
    write(root / "mylib" / "__init__.py", "")
    for rel, text in files.items():
        write(root / rel, text)
    return write(root / "mylib" / "ops.py", kernel)


def _call_line(root: Path, rel: str) -> str:
    """``rel:N``, N the line marked `# CALL` (where the test calls into the kernel's module)."""
    lines = (root / rel).read_text().splitlines()
    return f"{rel}:{next(i for i, ln in enumerate(lines, 1) if '# CALL' in ln)}"


def _verdict(result, sid: str = "int64-offsets") -> tuple[str, dict]:
    """Where ``sid`` ended up for one kernel: shown (its payoff), not paying or conditional."""
    for s in result.suggestions:
        if s.id == sid:
            return "shown", s.payoff or {}
    for d in result.not_paying:
        if d["id"] == sid:
            return "not-paying", d
    for d in result.conditional:
        if d["id"] == sid:
            return "conditional", d
    return "absent", {}


BIG_TEST = '''
import pytest
import torch

from mylib.ops import scale

COLS = 32768


@pytest.mark.parametrize("rows", [1024, 70000])
def test_scale(rows):
    x = torch.randn(rows, COLS, device="cuda")
    torch.testing.assert_close(scale(x), x * 2)  # CALL
'''

SMALL_TEST = BIG_TEST.replace("[1024, 70000]", "[16, 4096]").replace("COLS = 32768", "COLS = 4096")

TUPLE_ROWS = '''
import pytest
import torch
from mylib.ops import scale as kscale


@pytest.mark.parametrize("rows, cols", [(4096, 4096), (65536, 65536), (8, 3)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_scale(rows, cols, dtype):
    x = torch.randn((rows, cols), dtype=dtype)
    y = kscale(x)  # CALL
'''

PARAM_CONSTANTS = '''
import pytest
import torch
import mylib.ops as K

N = 2**16


@pytest.mark.parametrize("n", [pytest.param(N, marks=pytest.mark.slow), 128])
def test_scale(n):
    x = torch.empty((n, n), device="cuda").view(-1, n)
    K.scale(x)  # CALL
'''

AUTOGRAD = '''
import torch
from mylib.ops import Scale


class TestScale:
    def test_apply(self):
        x = torch.ones(50000, 50000)
        y = Scale.apply(x, 3)  # CALL
'''

DIRECT_LAUNCH = '''
import torch
from mylib.ops import row_scale


def test_launch():
    R, C = 3, 1 << 30
    x = torch.zeros(R, C)
    y = torch.empty_like(x)
    row_scale[(R,)](x, y, x.stride(0), C, BLOCK=1024)  # CALL
'''

BENCHMARK = '''
import torch
from mylib import ops


def bench():
    for rows in [1024, 131072]:
        x = torch.randn(rows, 32768, device="cuda")
        ops.scale(x)  # CALL


if __name__ == "__main__":
    bench()
'''

OTHER_MODULE = '''
import torch
from otherlib.ops import scale  # another module of the same name


def test_other():
    scale(torch.randn(100000, 100000))
'''

RUNTIME_SIZES = '''
import os
import torch
from mylib.ops import scale


def test_env():
    rows = int(os.environ["ROWS"])
    scale(torch.randn(rows, 8192))
'''

BAD_SYNTAX = '''
from mylib.ops import scale
def test_broken(:
    scale(torch.randn(100000, 100000))
'''

CASES = [
    # (case, files, expected verdict of int64-offsets, the file whose call site is the origin)
    ("a test's largest size passes 2**31", {"tests/test_ops.py": BIG_TEST}, "shown", "tests/test_ops.py"),
    ("a test's largest size does not", {"tests/test_ops.py": SMALL_TEST}, "not-paying", "tests/test_ops.py"),
    ("no test calls the kernel", {"tests/test_other.py": "def test_nothing():\n    assert True\n"},
     "conditional", None),
    ("parametrize rows: the row with the largest product", {"tests/test_tuple.py": TUPLE_ROWS}, "shown",
     "tests/test_tuple.py"),
    ("pytest.param of a module constant, through `import pkg.ops as K`", {"tests/test_k.py": PARAM_CONSTANTS},
     "shown", "tests/test_k.py"),
    ("an autograd Function's apply, in a test class", {"tests/test_autograd.py": AUTOGRAD}, "shown",
     "tests/test_autograd.py"),
    ("a test launching the kernel itself", {"tests/test_launch.py": DIRECT_LAUNCH}, "shown", "tests/test_launch.py"),
    ("a benchmark's loop over sizes", {"benchmarks/bench_ops.py": BENCHMARK}, "shown", "benchmarks/bench_ops.py"),
    ("a module of the same name elsewhere is not the kernel's",
     {"otherlib/__init__.py": "", "otherlib/ops.py": "def scale(x):\n    return x\n",
      "tests/test_other.py": OTHER_MODULE}, "conditional", None),
    ("a size computed at run time stays unknown", {"tests/test_env.py": RUNTIME_SIZES}, "conditional", None),
    ("a test file that does not parse is skipped, the others read",
     {"tests/test_bad.py": BAD_SYNTAX, "tests/test_ops.py": SMALL_TEST}, "not-paying", "tests/test_ops.py"),
    ("only a file that does not parse", {"tests/test_bad.py": BAD_SYNTAX}, "conditional", None),
]


@pytest.mark.parametrize("case, files, expected, origin_file", CASES, ids=[c[0] for c in CASES])
def test_repository_sizes_decide_int64_offsets(tmp_path, case, files, expected, origin_file):
    root = tmp_path / "repo"
    kernel = _repo(root, files)
    (res,) = suggest(kernel, None, k=50, threshold=0)
    state, entry = _verdict(res)
    assert state == expected, (case, state, entry, res.notes)
    if origin_file is None:
        assert "origin" not in entry and not any(n.startswith("sizes from") for n in res.notes)
        return
    where = _call_line(root, origin_file)
    assert set(entry["origin"].values()) == {where}, entry
    assert f"(sizes from {where}: " in entry["reason"]
    assert any(n.startswith(f"sizes from {where}, ") for n in res.notes), res.notes
    assert res.sizes_origin["x_ptr"] == where


def test_the_origin_names_the_call_and_the_largest_run(tmp_path):
    root = tmp_path / "repo"
    kernel = _repo(root, {"tests/test_ops.py": BIG_TEST})
    (res,) = suggest(kernel, None, k=50, threshold=0)
    state, payoff = _verdict(res)
    assert state == "shown" and payoff["state"] == "pays"
    assert "x_ptr holds 2,293,760,000 elements" in payoff["reason"]
    assert "sizes from tests/test_ops.py:12: x_ptr=70000x32768, y_ptr=70000x32768" in payoff["reason"]
    assert "x_ptr=70000x32768" in res.workload and "programs=70000" in res.workload


def test_nothing_in_a_repository_is_executed(tmp_path):
    """A test that would raise, exit or write a file at import is only read."""
    root = tmp_path / "repo"
    marker = tmp_path / "ran"
    hostile = f'''
import sys
open({str(marker)!r}, "w").write("ran")
raise SystemExit("this file must never be run")
sys.exit(3)

import torch
from mylib.ops import scale


def test_scale():
    scale(torch.randn(70000, 32768))  # CALL
'''
    kernel = _repo(root, {"tests/test_hostile.py": hostile})
    (res,) = suggest(kernel, None, k=50, threshold=0)
    assert _verdict(res)[0] == "shown" and not marker.exists()


def test_without_a_repository_nothing_is_read(tmp_path):
    """A file in no repository (no .git, pyproject.toml, setup.py or package) reads no tests."""
    kernel = write(tmp_path / "loose" / "ops.py", KERNEL)
    write(tmp_path / "loose" / "test_ops.py", BIG_TEST.replace("from mylib.ops", "from ops"))
    assert callers.repo_root(kernel) is None
    (res,) = suggest(kernel, None, k=50, threshold=0)
    assert _verdict(res)[0] == "conditional"


def test_a_package_without_a_marker_and_a_git_checkout_are_repositories(tmp_path):
    kernel = _repo(tmp_path / "a", {"tests/test_ops.py": BIG_TEST}, marker=None)
    assert callers.repo_root(kernel) == (kernel.parents[1], "mylib.ops")
    kernel = _repo(tmp_path / "b", {}, marker=".git/HEAD")
    assert callers.repo_root(kernel) == (kernel.parents[1], "mylib.ops")
    src = write(tmp_path / "c" / "src" / "pkg" / "ops.py", KERNEL)
    write(tmp_path / "c" / "setup.py", "")
    assert callers.repo_root(src) == (tmp_path / "c", "pkg.ops")
    wheel = write(tmp_path / "lib" / "site-packages" / "pkg" / "ops" / "k.py", KERNEL)
    write(wheel.parents[1] / "__init__.py", "")
    write(wheel.parent / "__init__.py", "")
    assert callers.repo_root(wheel) == (wheel.parents[1], "pkg.ops.k")


ROWS_TEST = '''
import pytest
import torch
from mylib.ops import l2norm


@pytest.mark.parametrize("T, D", [(ROWS, COLS)])
def test_l2norm(T, D):
    l2norm(torch.randn(T, D))  # CALL
'''


@pytest.mark.parametrize("rows, cols, expected, words", [
    # many short rows in a test: a lower bound on the workload, so it pays
    (1_000_000, 128, "shown", "1,000,000 rows of 128 columns"),
    # a few rows in a test say nothing about the workload's rows: conditional, saying so
    (64, 128, "conditional", "it would not: 64 rows are at most 4 waves"),
    # wide rows in a test: the same, a test may be smaller than the workload
    (64, 8192, "conditional", "it would not: rows of 8,192 columns"),
])
def test_a_test_shows_what_pays_but_never_that_rows_are_too_few(tmp_path, rows, cols, expected, words):
    root = tmp_path / "repo"
    test = ROWS_TEST.replace("ROWS", str(rows)).replace("COLS", str(cols))
    kernel = _repo(root, {"tests/test_rows.py": test}, kernel=ROWS_KERNEL)
    (res,) = suggest(kernel, None, kernel="l2norm_row", k=50, threshold=0)
    state, entry = _verdict(res, "multi-row-per-program")
    assert state == expected, (state, entry)
    assert words in entry["reason"] and entry["origin"]["x"] == _call_line(root, "tests/test_rows.py")
    if expected == "conditional":
        assert entry["needs"]  # the flag that would decide it


def test_the_cli_shows_the_origin_and_the_flags_override(tmp_path):
    root = tmp_path / "repo"
    kernel = _repo(root, {"tests/test_ops.py": BIG_TEST})
    text = run_skel("suggest", str(kernel), "--no-template")
    assert text.returncode == 0, text.stderr
    assert "pays here: x_ptr holds 2,293,760,000 elements" in text.stdout
    assert "(sizes from tests/test_ops.py:12: x_ptr=70000x32768, y_ptr=70000x32768" in text.stdout
    assert "note: sizes from tests/test_ops.py:12, the one run of this kernel found" in text.stdout
    (kern,) = json.loads(run_skel("suggest", str(kernel), "--json").stdout)["kernels"]
    (s,) = [s for s in kern["suggestions"] if s["id"] == "int64-offsets"]
    assert s["payoff"]["origin"]["x_ptr"] == "tests/test_ops.py:12"
    assert kern["sizes_origin"]["x_ptr"] == "tests/test_ops.py:12"
    # --no-repo-sizes: back to a conditional entry
    (kern,) = json.loads(run_skel("suggest", str(kernel), "--json", "--no-repo-sizes").stdout)["kernels"]
    assert "int64-offsets" in [d["id"] for d in kern["conditional"]] and "x_ptr" not in kern["sizes_origin"]
    # --shape elements=N bounds every tensor: the repository's shapes give way
    (kern,) = json.loads(run_skel("suggest", str(kernel), "--json", "--shape", "elements=1000").stdout)["kernels"]
    assert [d["id"] for d in kern["not_paying"]] == ["int64-offsets"]
    assert kern["sizes_origin"]["elements"] == "--shape"


def test_the_search_is_capped_and_fast(tmp_path, monkeypatch):
    """Pruned folders are not read, the candidates are capped, and one run stays quick."""
    root = tmp_path / "repo"
    files = {f"tests/test_pad_{i}.py": "def test_x():\n    pass\n" for i in range(50)}
    files["node_modules/tests/test_ops.py"] = BIG_TEST  # pruned
    files[".venv/tests/test_ops.py"] = BIG_TEST  # pruned
    kernel = _repo(root, files)
    found = callers.find(kernel, load_kernels(kernel))
    assert not found.runs and found.files_read == 51  # the 50 tests and the kernel's own file
    monkeypatch.setattr(callers, "MAX_FILES", 10)
    write(root / "tests" / "test_ops.py", BIG_TEST)
    found = callers.find(kernel, load_kernels(kernel))
    assert found.files_read <= 11 and found.largest("row_scale") is not None  # its name first
    start = time.perf_counter()
    callers.find(kernel, load_kernels(kernel))
    assert time.perf_counter() - start < 1.0


def test_the_own_files_main_block_is_a_caller(tmp_path):
    root = tmp_path / "repo"
    own = KERNEL + '''

if __name__ == "__main__":
    x = torch.randn(8, 1000)
    scale(x)  # CALL
'''
    kernel = _repo(root, {}, kernel=own)
    found = callers.find(kernel, load_kernels(kernel))
    run = found.largest("row_scale")
    assert run is not None and run.origin == _call_line(root, "mylib/ops.py")
    assert run.shapes == {"x_ptr": (8, 1000), "y_ptr": (8, 1000)} and run.sizes["n_cols"] == 1000
    assert run.programs == 8


def test_an_mcp_servers_roots_fence_the_search(tmp_path):
    """Inside an MCP server the search stays in its roots: a repository reaching above the
    root holding the kernel is read inside that root only, and a link out of it is not followed."""
    root = tmp_path / "repo"
    kernel = _repo(root, {"tests/test_ops.py": BIG_TEST})
    kernels = load_kernels(kernel)
    assert callers.find(kernel, kernels).largest("row_scale") is not None
    fenced = callers.find(kernel, kernels, within=[root / "mylib"])
    assert fenced.largest("row_scale") is None and fenced.root == str((root / "mylib").resolve())
    (root / "mylib" / "tests").mkdir()
    (root / "mylib" / "tests" / "test_link.py").symlink_to(root / "tests" / "test_ops.py")
    assert callers.find(kernel, kernels, within=[root / "mylib"]).largest("row_scale") is None
    assert callers.find(kernel, kernels, within=[tmp_path / "elsewhere"]).root == ""
