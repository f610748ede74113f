"""What `skel suggest` shows: sizes decide the size-bound techniques (payoffs), a fitted
probability decides the rest (calibration), and the rest is named, never silently dropped."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT, run_skel, write
from skel.errors import UsageError
from skel.kernels.workload import Workload, from_launches

ROW_SCALE = '''
import triton
import triton.language as tl


@triton.jit
def row_scale(x_ptr, y_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
    tl.store(y_ptr + row * stride + cols, x * 2.0, mask=cols < n_cols)


def launch(x, y):
    row_scale[(x.shape[0],)](x, y, x.stride(0), x.shape[1], BLOCK=1024, num_warps=4)
'''

KERNELBENCH = '''
import torch

batch_size = 4096
dim = 8 * 8192


class Model(torch.nn.Module):
    def forward(self, x):
        return x * 2


def get_inputs():
    n = batch_size * 2
    return [torch.randn(n, dim), torch.randint(0, 10, (batch_size,))]
'''


# --- the workload model ------------------------------------------------------------------

def test_shape_flags_parse_sizes_products_and_shapes():
    wl = Workload.parse(["n_cols=4096", "elements=8192*152064", "x_ptr=8192x152064"])
    assert wl.size("n_cols") == 4096 and wl.size("elements") == 8192 * 152064
    assert wl.shapes["x_ptr"] == (8192, 152064) and wl.size("x_ptr") == 8192 * 152064
    assert wl.where("x_ptr") == "--shape" and wl.sms == 132
    assert Workload.parse(["sms=78"]).sms == 78
    for bad in ("n_cols", "n_cols=", "n_cols=abc", "1x=2", "n=4.5"):
        with pytest.raises(UsageError, match="NAME=VALUE"):
            Workload.parse([bad])


def test_a_workload_file_is_read_without_running_it(tmp_path):
    problem = write(tmp_path / "problem.py", KERNELBENCH + "\nraise SystemExit('never run')\n")
    wl = Workload.read(problem)
    assert wl.size("batch_size") == 4096 and wl.size("dim") == 65536
    assert wl.inputs == [(8192, 65536), (4096,)]
    assert wl.largest_elements() == (8192 * 65536, "an input")
    js = write(tmp_path / "sizes.json", '{"rows": 128, "x_ptr": [4, 8], "elements": "2*3"}')
    wl = Workload.read(js)
    assert (wl.size("rows"), wl.shapes["x_ptr"], wl.size("elements")) == (128, (4, 8), 6)
    # the flags win over the file
    assert Workload.parse(["rows=7"]).merged(wl).size("rows") == 7


@pytest.mark.parametrize("name, content, message", [
    ("missing.json", None, "no such file"),
    ("bad.json", b"{not json", "not JSON"),
    ("list.json", b"[1, 2]", "a JSON object"),
    ("value.json", b'{"rows": "many"}', "not a size or a shape"),
    ("latin.py", b"x = '\xe9'\n", "not UTF-8"),
    ("broken.py", b"def (:\n", "Python that parses"),
])
def test_a_bad_workload_file_is_a_clear_error(tmp_path, name, content, message):
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(UsageError, match=message):
        Workload.read(path)


def test_launch_literals_are_sizes_and_compiler_options_are_not(tmp_path):
    from skel.kernels.extract import extract

    (kf,) = extract(ROW_SCALE, "mylib/ops.py")
    wl = from_launches(kf)
    assert wl.size("BLOCK") == 1024 and wl.where("BLOCK").startswith("launch at line")
    assert wl.size("num_warps") is None


# --- payoffs in the list -----------------------------------------------------------------

def _kernel(tmp_path, folder="mylib"):
    return write(tmp_path / folder / "ops.py", ROW_SCALE)


def test_without_sizes_a_size_bound_technique_is_conditional_and_named(tmp_path):
    path = _kernel(tmp_path)
    r = run_skel("suggest", str(path), "--threshold", "0", "--json")
    (kern,) = json.loads(r.stdout)["kernels"]
    ids = [s["id"] for s in kern["suggestions"]]
    cond = {d["id"]: d for d in kern["conditional"]}
    assert "int64-offsets" in cond and "int64-offsets" not in ids
    assert "2**31" in cond["int64-offsets"]["reason"] and "--shape" in cond["int64-offsets"]["needs"]
    text = run_skel("suggest", str(path), "--threshold", "0", "--no-template").stdout
    assert "  conditional: int64-offsets — pays only if a tensor this kernel indexes holds more than 2**31" in text
    assert "give --shape elements=N" in text


def test_sizes_decide_pays_and_does_not_pay(tmp_path):
    path = _kernel(tmp_path)
    big = run_skel("suggest", str(path), "--shape", "rows=70000", "--shape", "cols=32768", "--json")
    (kern,) = json.loads(big.stdout)["kernels"]
    (s,) = [s for s in kern["suggestions"] if s["id"] == "int64-offsets"]
    assert s["payoff"]["state"] == "pays" and "2,293,759,999" in s["payoff"]["reason"]
    assert "rows=70000" in kern["workload"]
    # whatever its probability, a payoff that holds at the sizes given is shown
    assert s["probability"] is not None and not s["below_threshold"]
    small = run_skel("suggest", str(path), "--shape", "rows=4096", "--shape", "cols=4096", "--json")
    (kern,) = json.loads(small.stdout)["kernels"]
    assert "int64-offsets" not in [s["id"] for s in kern["suggestions"]]
    (np,) = [d for d in kern["not_paying"] if d["id"] == "int64-offsets"]
    assert "16,777,216 elements" in np["reason"]
    text = run_skel("suggest", str(path), "--shape", "rows=4096", "--shape", "cols=4096", "--no-template").stdout
    assert "does not pay here: int64-offsets — the largest tensor" in text


def test_a_workload_file_and_a_bad_shape_through_the_cli(tmp_path):
    path = _kernel(tmp_path)
    sizes = write(tmp_path / "sizes.json", '{"x_ptr": [70000, 32768], "y_ptr": [70000, 32768]}')
    r = run_skel("suggest", str(path), "--workload", str(sizes), "--json")
    assert r.returncode == 0, r.stderr
    (kern,) = json.loads(r.stdout)["kernels"]
    assert "int64-offsets" in [s["id"] for s in kern["suggestions"]]
    bad = run_skel("suggest", str(path), "--shape", "rows")
    assert bad.returncode == 2 and "--shape 'rows': expected NAME=VALUE" in bad.stderr and not bad.stdout
    missing = run_skel("suggest", str(path), "--workload", str(tmp_path / "nope.json"))
    assert missing.returncode == 2 and "no such file" in missing.stderr


def test_a_refinement_needs_no_payoff(tmp_path):
    """The authors chose the technique; completing it is not a question of sizes."""
    from skel.retriever.suggest import suggest
    from skel.skeletons import registry

    (res,) = suggest(registry.fixture_path("persistent-kernel"), None, kernel="rmsnorm_grid_stride_every_row", k=50)
    assert {s.id: s.kind for s in res.suggestions}.get("persistent-kernel") == "refine"
    assert "persistent-kernel" not in [d["id"] for d in res.conditional]


# --- the probability and the threshold ---------------------------------------------------

@pytest.mark.calibrated
def test_the_shipped_model_holds_back_what_is_unlikely_and_all_lists_it(tmp_path):
    from skel.retriever import calibration

    m = calibration.model()
    assert m is not None and 0 < m.threshold < 1
    assert set(m.weights) == set(calibration.FEATURES)
    example = str(ROOT / "examples" / "row_softmax.py")
    default = json.loads(run_skel("suggest", example, "--json").stdout)["kernels"][0]
    everything = json.loads(run_skel("suggest", example, "--json", "--all").stdout)["kernels"][0]
    shown = {s["id"] for s in default["suggestions"]}
    held = {d["id"]: d["probability"] for d in default["held_back"]}
    assert held and all(p < m.threshold for p in held.values())
    assert all(s["probability"] >= m.threshold for s in default["suggestions"])
    listed = {s["id"]: s for s in everything["suggestions"]}
    # with --all the matches held back are listed (near misses and related ones, as ever, give
    # way to them and are named in a note)
    held_matches = {d["id"] for d in default["held_back"] if d["kind"] == "match"}
    assert held_matches and held_matches <= set(listed) and shown <= set(listed)
    assert all(listed[i]["below_threshold"] for i in held_matches)
    assert not any(listed[i]["below_threshold"] for i in shown)
    text = run_skel("suggest", example, "--no-template").stdout
    assert f"held back (probability of being right under {m.threshold:.2f}; --all lists them)" in text
    marked = run_skel("suggest", example, "--no-template", "--all").stdout
    assert "BELOW THRESHOLD" in marked
    # nothing over the threshold: exit 1 ("no suggestion"), not an error
    if not shown:
        assert run_skel("suggest", example).returncode == 1


@pytest.mark.calibrated
def test_the_threshold_flag_and_environment(tmp_path, monkeypatch):
    example = str(ROOT / "examples" / "row_softmax.py")
    none = json.loads(run_skel("suggest", example, "--json", "--threshold", "1").stdout)["kernels"][0]
    every = json.loads(run_skel("suggest", example, "--json", "--threshold", "0").stdout)["kernels"][0]
    assert not none["suggestions"] and none["held_back"]
    assert every["suggestions"] and not every["held_back"] and every["threshold"] == 0
    monkeypatch.setenv("SKEL_THRESHOLD", "lots")
    bad = run_skel("suggest", example)
    assert bad.returncode == 2 and "SKEL_THRESHOLD='lots': a probability between 0 and 1" in bad.stderr
    monkeypatch.setenv("SKEL_THRESHOLD", "0")
    assert json.loads(run_skel("suggest", example, "--json").stdout)["kernels"][0]["held_back"] == []


def test_probability_grows_with_the_skeletons_judged_rate_and_falls_for_weaker_tiers():
    from skel.retriever.calibration import Model, features

    m = Model(weights={"bias": -1.0, "skeleton": 1.0, "near_miss": -1.0}, judged={"a": (9, 10), "b": (1, 10)},
              pooled=0.3, threshold=0.5)
    kernel = {"fits": 0.0}
    pa = m.probability(features(m.skeleton_rate("a"), "match", None, kernel))
    pb = m.probability(features(m.skeleton_rate("b"), "match", None, kernel))
    pn = m.probability(features(m.skeleton_rate("a"), "near-miss", None, kernel))
    assert pa > pb and pn < pa
    # never judged: the pooled rate
    assert m.skeleton_rate("never") == pytest.approx(0.3)


def test_a_missing_or_corrupt_model_shows_everything_and_says_so(tmp_path, monkeypatch):
    from skel.retriever import calibration
    from skel.retriever.suggest import suggest

    bad = tmp_path / "calibration.json"
    bad.write_text("{not json")
    monkeypatch.setattr(calibration, "MODEL", bad)
    calibration.model.cache_clear()
    try:
        (r,) = suggest(ROOT / "examples" / "row_softmax.py", None)
    finally:
        calibration.model.cache_clear()
    assert r.suggestions and all(s.probability is None for s in r.suggestions)
    assert any("no calibration model shipped" in n for n in r.notes)


# --- --compile: machine code, offline, and the no-op check ---------------------------------

GEMM = '''
import triton
import triton.language as tl


@triton.jit
def mm(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


def launch(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    mm[(M // 64, N // 64)](a, b, c, M, N, K, BM=64, BN=64, BK=32)
'''


def test_compile_shows_machine_code_and_drops_a_rewrite_the_compiler_already_does(tmp_path, monkeypatch):
    """`acc += tl.dot(a, b)` and `acc = tl.dot(a, b, acc)` compile to the same code: on a
    Triton where its shipped run does not already rule it out (3.2), dot-acc-argument fits
    and --compile finds the no-op itself, offline."""
    pytest.importorskip("triton", reason="--compile needs Triton's compiler")
    monkeypatch.setenv("SKEL_CACHE_DIR", str(tmp_path / "cache"))
    path = write(tmp_path / "gemm.py", GEMM)
    plain = json.loads(run_skel("suggest", str(path), "--triton", "3.2.0", "--json").stdout)["kernels"][0]
    assert "dot-acc-argument" in [s["id"] for s in plain["suggestions"]] and plain["machine"] is None
    r = run_skel("suggest", str(path), "--triton", "3.2.0", "--json", "--compile")
    assert r.returncode == 0, r.stderr
    kern = json.loads(r.stdout)["kernels"][0]
    assert kern["machine"]["mma"] in ("wgmma", "mma.sync") and kern["machine"]["registers"] > 0
    assert "dot-acc-argument" not in [s["id"] for s in kern["suggestions"]]
    (noop,) = [d for d in kern["no_op"] if d["id"] == "dot-acc-argument"]
    assert "same machine code" in noop["reason"]
    text = run_skel("suggest", str(path), "--triton", "3.2.0", "--compile", "--no-template").stdout
    assert "  machine code: " in text and "mma " in text and "  no-op here: dot-acc-argument" in text


def test_compile_says_why_when_a_kernel_does_not_compile(tmp_path, monkeypatch):
    pytest.importorskip("triton", reason="--compile needs Triton's compiler")
    monkeypatch.setenv("SKEL_CACHE_DIR", str(tmp_path / "cache"))
    path = write(tmp_path / "bad.py", ROW_SCALE.replace("x * 2.0", "tl.no_such_op(x)"))
    r = run_skel("suggest", str(path), "--compile", "--json")
    kern = json.loads(r.stdout)["kernels"][0]
    assert kern["machine"] is None
    assert any(n.startswith("--compile: row_scale does not compile offline here") for n in kern["notes"])
