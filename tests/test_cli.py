"""The command line: outputs, formats and exit codes (0 suggestions, 1 none, 2 error)."""

from __future__ import annotations

import json
import re

import pytest

from conftest import ROOT, run_skel, write

FP32_DOT = '''
import triton
import triton.language as tl


@triton.jit
def solve_kernel(a_ptr, b_ptr, c_ptr, BT: tl.constexpr):
    o = tl.arange(0, BT)
    a = tl.load(a_ptr + o[:, None] * BT + o[None, :]).to(tl.float32)
    b = tl.load(b_ptr + o[:, None] * BT + o[None, :]).to(tl.float32)
    tl.store(c_ptr + o[:, None] * BT + o[None, :], tl.dot(a, b))
'''

TRIVIAL = '''
import triton
import triton.language as tl


@triton.jit
def store_one(x_ptr):
    tl.store(x_ptr, 1.0)
'''


@pytest.fixture
def mined_store(tmp_path):
    repo = tmp_path / "repo"
    write(repo / "k.py", FP32_DOT.replace("tl.dot(a, b)", 'tl.dot(a, b, input_precision="tf32x3")'))
    store = tmp_path / "store"
    r = run_skel("mine", str(repo), "--store", str(store), "--source", "demo", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["kernels"] == 1
    return store


def test_suggest_text_with_evidence(tmp_path, mined_store):
    k = write(tmp_path / "mine.py", FP32_DOT)
    r = run_skel("suggest", str(k), "--store", str(mined_store))
    assert r.returncode == 0, r.stderr
    assert "dot-input-precision-tf32x3" in r.stdout
    assert "why: a `tl.dot` on fp32 operands (line 10)" in r.stdout
    assert "demo k.py:5 (solve_kernel)" in r.stdout, "a real mined location backs the suggestion"
    assert '+    tl.store' in r.stdout or 'input_precision="tf32x3"' in r.stdout


def test_suggest_json_and_markdown(tmp_path, mined_store):
    k = write(tmp_path / "mine.py", FP32_DOT)
    r = run_skel("suggest", str(k), "--store", str(mined_store), "--json")
    data = json.loads(r.stdout)
    (kern,) = data["kernels"]
    ids = [s["id"] for s in kern["suggestions"]]
    assert "dot-input-precision-tf32x3" in ids and r.returncode == 0
    sug = kern["suggestions"][ids.index("dot-input-precision-tf32x3")]
    assert sug["evidence"][0]["file"] == "k.py" and sug["occurrences"] == 1
    md = run_skel("suggest", str(k), "--store", str(mined_store), "--format", "markdown")
    assert md.returncode == 0 and "```diff" in md.stdout and "### 1." in md.stdout


def test_no_suggestion_exits_1_and_says_so(tmp_path):
    k = write(tmp_path / "trivial.py", TRIVIAL)
    r = run_skel("suggest", str(k))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "no skeleton applies" in r.stdout


@pytest.mark.parametrize("content,needle", [
    (None, "no such file"),
    ("def f():\n    return 1\n", "no @triton.jit kernel"),
    ("import triton\n@triton.jit\ndef k(:\n", "does not parse"),
    ("import triton\nimport triton.language as tl\n@triton.jit\ndef tanh(x):\n    return 2 * tl.sigmoid(2 * x) - 1\n",
     "only device helpers: tanh"),
    (b"\xff\xfe garbage", "not UTF-8"),
])
def test_bad_input_is_a_one_line_error_exit_2(tmp_path, content, needle):
    p = tmp_path / "k.py"
    if isinstance(content, bytes):
        p.write_bytes(content)
    elif content is not None:
        p.write_text(content)
    r = run_skel("suggest", str(p))
    assert r.returncode == 2
    assert needle in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_unknown_kernel_name_and_missing_store(tmp_path):
    k = write(tmp_path / "mine.py", FP32_DOT)
    r = run_skel("suggest", str(k), "--kernel", "nope")
    assert r.returncode == 2 and "found: solve_kernel" in r.stderr
    r = run_skel("suggest", str(k), "--store", str(tmp_path / "absent"))
    assert r.returncode == 2 and "no knowledge base" in r.stderr


def test_corrupt_store_is_a_clear_error(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    (store / "chroma.sqlite3").write_bytes(b"this is not a database" * 100)
    k = write(tmp_path / "mine.py", FP32_DOT)
    r = run_skel("suggest", str(k), "--store", str(store))
    assert r.returncode == 2 and "store" in r.stderr and "Traceback" not in r.stderr


def test_target_environment_filters_and_caveats(tmp_path):
    k = write(tmp_path / "mine.py", FP32_DOT)
    on_rocm = json.loads(run_skel("suggest", str(k), "--backend", "rocm", "--json").stdout)
    assert "dot-input-precision-tf32x3" not in [s["id"] for s in on_rocm["kernels"][0]["suggestions"]]
    unknown = json.loads(run_skel("suggest", str(k), "--json").stdout)
    sug = {s["id"]: s for s in unknown["kernels"][0]["suggestions"]}["dot-input-precision-tf32x3"]
    assert any("backend not given" in c for c in sug["caveats"])


def test_skeletons_list_and_show():
    r = run_skel("skeletons", "list")
    assert r.returncode == 0 and "dot-input-precision-tf32x3" in r.stdout
    r = run_skel("skeletons", "show", "dot-input-precision-tf32x3")
    assert r.returncode == 0 and "Applies when" in r.stdout and "Example: after" in r.stdout
    r = run_skel("skeletons", "show", "no-such-thing")
    assert r.returncode == 2 and "unknown skeleton" in r.stderr


def test_mine_errors_and_store_info(tmp_path, mined_store):
    r = run_skel("mine")
    assert r.returncode == 2 and "exactly one of PATH or --package" in r.stderr
    r = run_skel("mine", str(tmp_path / "nowhere"))
    assert r.returncode == 2 and "no such file" in r.stderr
    r = run_skel("mine", "--package", "no_such_package_xyz")
    assert r.returncode == 2 and "not installed" in r.stderr
    r = run_skel("store", "info", "--store", str(mined_store), "--json")
    info = json.loads(r.stdout)
    assert info["kernels"] == 1 and info["sources"][0]["state"] == "complete"


def test_embedder_mismatch_is_refused(tmp_path, mined_store):
    k = write(tmp_path / "mine.py", FP32_DOT)
    r = run_skel("suggest", str(k), "--store", str(mined_store), env={"SKEL_EMBEDDER": "numpy"})
    assert r.returncode == 2 and "embeddings" in r.stderr


def test_bundled_example_runs():
    r = run_skel("suggest", str(ROOT / "examples" / "row_softmax.py"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "online-softmax" in r.stdout


def test_ctrl_c_during_mine_exits_130_and_a_rerun_completes(tmp_path):
    """A real SIGINT half way through `skel mine`: exit 130, a consistent store, and the
    same command finishes the job."""
    import os
    import signal
    import subprocess
    import sys
    import time

    repo = tmp_path / "repo"
    for i in range(120):  # three store batches of 48 files
        write(repo / f"k{i}.py", FP32_DOT.replace("solve_kernel", f"solve_kernel_{i}"))
    store = tmp_path / "store"
    marker = tmp_path / "second-batch"
    # The CLI as users run it, with the store's writes slowed down at the second batch so the
    # signal lands after one batch is stored and before the next is (no timing guesswork).
    # A shell that starts a job in the background (CI runners, `nohup ... &`) hands it SIGINT
    # ignored, and Python then keeps it ignored: the child restores the terminal's behaviour.
    code = f"""
import signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
from skel.store.knowledge import KnowledgeBase
calls = []
orig = KnowledgeBase.add_many
def slow(self, records):
    calls.append(1)
    if len(calls) == 2:
        open({str(marker)!r}, "w").close()
        time.sleep(600)
    return orig(self, records)
KnowledgeBase.add_many = slow
sys.argv = ["skel", "mine", {str(repo)!r}, "--store", {str(store)!r}, "--source", "demo", "--jobs", "1"]
from skel.cli import main
main()
"""
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ))
    deadline = time.time() + 120
    while not marker.exists():
        assert time.time() < deadline and proc.poll() is None, proc.communicate()[1]
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)  # a run that ignored the signal sleeps 600 s: it fails here
    assert proc.returncode == 130, err
    assert "run the same command again" in err
    info = json.loads(run_skel("store", "info", "--store", str(store), "--json").stdout)
    assert info["sources"][0]["state"] == "mining" and info["kernels"] == 48
    r = run_skel("mine", str(repo), "--store", str(store), "--source", "demo", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["kernels"] == 120 and report["unchanged"] == 48, "the first batch is not redone"
    info = json.loads(run_skel("store", "info", "--store", str(store), "--json").stdout)
    assert info["sources"][0]["state"] == "complete" and info["kernels"] == 120


def test_naming_a_device_helper_says_where_it_went(tmp_path):
    from skel.errors import SuggestError
    from skel.retriever.suggest import load_kernels

    k = write(tmp_path / "h.py", "import triton\nimport triton.language as tl\n\n@triton.jit\ndef tanh(x):\n"
              "    return 2 * tl.sigmoid(2 * x) - 1\n\n@triton.jit\ndef act(x_ptr, n, B: tl.constexpr):\n"
              "    o = tl.program_id(0) * B + tl.arange(0, B)\n    tl.store(x_ptr + o, tanh(tl.load(x_ptr + o)))\n")
    with pytest.raises(SuggestError, match="'tanh' is a @triton.jit device helper, folded into .*: act"):
        load_kernels(k, "tanh")


ROW_SCALE = '''
import triton
import triton.language as tl


@triton.jit
def row_scale(x_ptr, y_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
    tl.store(y_ptr + row * stride + cols, x * 2.0, mask=cols < n_cols)
'''


def test_why_not_explains_a_skeleton_listed_or_not(tmp_path):
    """`--why-not ID` gives each asked-for skeleton's verdict and its conditions on the
    kernel: what holds (with lines) and what fails. The same kernel in a serving engine's
    folder loses int64-offsets, and says which condition; an unknown id is an error."""
    plain = write(tmp_path / "mylib" / "ops.py", ROW_SCALE)
    served = write(tmp_path / "sglang" / "srt" / "ops.py", ROW_SCALE)
    # without sizes int64-offsets waits on them (a conditional entry), and the verdict says so
    r = run_skel("suggest", str(plain), "--why-not", "int64-offsets", "--json")
    (kern,) = json.loads(r.stdout)["kernels"]
    assert "int64-offsets" not in [s["id"] for s in kern["suggestions"]]
    assert [d["id"] for d in kern["conditional"]] == ["int64-offsets"]
    assert kern["why_not"][0]["verdict"].startswith("conditional: pays only if a tensor this kernel indexes holds")
    # the rows past 2**31 elements: it pays, and is suggested
    r = run_skel("suggest", str(plain), "--why-not", "int64-offsets", "--why-not", "dot-acc-argument", "--json",
                 "--shape", "x_ptr=70000x32768", "--shape", "y_ptr=70000x32768")
    assert r.returncode == 0, r.stderr
    (kern,) = json.loads(r.stdout)["kernels"]
    rank = [s["id"] for s in kern["suggestions"]].index("int64-offsets") + 1
    listed, dot = kern["why_not"]
    assert listed["id"] == "int64-offsets" and listed["verdict"] == f"suggested, rank {rank}"
    assert any("int32 product" in h and "(line 9, 10)" in h for h in listed["holds"]) and not listed["fails"]
    assert dot["verdict"] == "not suggested: 1 of its conditions fails" and "tl.dot" in dot["fails"][0]
    r = run_skel("suggest", str(served), "--why-not", "int64-offsets", "--no-template")
    assert "int64-offsets" not in [ln.split(". ", 1)[-1].split(" — ")[0] for ln in r.stdout.splitlines()
                                   if ln.startswith("  1. ") or ln.startswith("  2. ")]
    assert "why not int64-offsets: not suggested: 1 of its conditions fails" in r.stdout
    assert "fails: no module of an LLM serving engine" in r.stdout and "holds: an address multiplying" in r.stdout
    # a near miss beside full matches is named in a note, and the verdict says so
    ex = run_skel("suggest", str(ROOT / "examples" / "row_softmax.py"), "--why-not", "launch-pdl", "--no-template")
    assert "why not launch-pdl: a near miss, named in a note rather than listed" in ex.stdout
    assert "fails: no loop over a runtime length" in ex.stdout
    # markdown and the prompt block answer it too; the prompt block even on the smallest budget
    md = run_skel("suggest", str(served), "--why-not", "int64-offsets", "--format", "markdown")
    assert "**Why not `int64-offsets`**: not suggested: 1 of its conditions fails" in md.stdout
    assert "- fails: no module of an LLM serving engine" in md.stdout
    pr = run_skel("suggest", str(served), "--why-not", "int64-offsets", "--format", "prompt", "--max-tokens", "200")
    assert "Why not `int64-offsets` for `row_scale`: not suggested" in pr.stdout
    assert "- fails: no module of an LLM serving engine" in pr.stdout
    bad = run_skel("suggest", str(plain), "--why-not", "no-such-skeleton")
    assert bad.returncode == 2 and "unknown skeleton 'no-such-skeleton'" in bad.stderr


def test_the_order_is_said_in_words_and_the_components_only_with_explain():
    """Each suggestion says what ranked it (`ranked by:`, a measured speedup first); the
    ranking's components (`rank:`) are printed only with --explain; JSON keeps them always."""
    ex = str(ROOT / "examples" / "row_softmax.py")
    r = run_skel("suggest", ex, "-k", "3", "--all", "--no-template")
    assert r.returncode in (0, 1), r.stderr
    assert "rank:" not in r.stdout and "support=" not in r.stdout
    ranked = [ln for ln in r.stdout.splitlines() if ln.startswith("     ranked by: ")]
    assert ranked and re.match(r"     ranked by: measured \d+\.\d\dx on NVIDIA H(100|200)", ranked[0]), r.stdout
    e = run_skel("suggest", ex, "-k", "3", "--all", "--no-template", "--explain")
    rank = [ln for ln in e.stdout.splitlines() if ln.startswith("     rank: ")]
    assert len(rank) == len(ranked) and "support=" in rank[0] and "evidence=" in rank[0] and "(score " in rank[0]
    (kern,) = json.loads(run_skel("suggest", ex, "-k", "3", "--all", "--json").stdout)["kernels"]
    assert set(kern["suggestions"][0]["components"]) == {"support", "facts", "prevalence", "specificity", "rarity",
                                                         "bound", "evidence", "lexical"}


def test_a_mistyped_skeleton_id_names_the_close_ones_not_the_catalog(tmp_path):
    """Every command that takes an id answers a typo with one line naming the close ids."""
    k = write(tmp_path / "mylib" / "ops.py", ROW_SCALE)
    for args, given in ((("skeletons", "show", "ONLNE-SOFTMAX"), "ONLNE-SOFTMAX"),
                        (("verify", "--example", "onlne-softmax"), "onlne-softmax"),
                        (("suggest", str(k), "--why-not", "onlne-softmax"), "onlne-softmax"),
                        (("apply", "onlne-softmax", str(k), "--kernel", "row_scale"), "onlne-softmax")):
        r = run_skel(*args)
        assert (r.returncode, r.stderr) == (
            2, f"skel: error: unknown skeleton '{given}'; did you mean online-softmax?\n"), args
    r = run_skel("skeletons", "show", "zzzz-qqqq")
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "int64-offsets" not in r.stderr
    assert "`skel skeletons list`" in r.stderr
