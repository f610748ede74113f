"""History mining over many repositories (issue #38): a date bound (``--until``: a
benchmark's cutoff keeps every later commit out), CUDA C++ files read too, a merged pull
request named by its title, and the normalised edit a draft keeps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_history import EXP, EXP2, V1, commit, git

from skel.cli import cli

CU = '''
#include <cuda_runtime.h>

__global__ void scale_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = x[i] * 2.0f;
    }
}

void scale(const float* x, float* y, int n) {
    scale_kernel<<<(n + 255) / 256, 256>>>(x, y, n);
}
'''


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A Triton file and a CUDA file; commits on both sides of 2024-03-01 (UTC)."""
    r = tmp_path_factory.mktemp("scale") / "demo"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    shas = {"initial": commit(r, "initial kernels", "2024-01-01T10:00:00+00:00", {"k.py": V1, "scale.cu": CU})}
    shas["ldg"] = commit(r, "scale: read x through the read-only cache", "2024-02-01T10:00:00+00:00",
                         {"scale.cu": CU.replace("y[i] = x[i] * 2.0f;", "y[i] = __ldg(&x[i]) * 2.0f;")})
    # committed 2024-02-29 23:30 in UTC-2: 2024-03-01 01:30 UTC, on the cutoff day, so after it
    shas["cutoff day"] = commit(r, "softmax: exp2 with log2(e) folded (1.3x faster)", "2024-02-29T23:30:00-02:00",
                                {"k.py": V1.replace(EXP, EXP2)})
    git(r, "checkout", "-q", "-b", "side")
    text = V1.replace(EXP, EXP2).replace("BLOCK=1024, num_warps=4)", "BLOCK=1024, num_warps=8)")
    commit(r, "add: 8 warps", "2024-03-05T10:00:00+00:00", {"k.py": text})
    git(r, "checkout", "-q", "main")
    git(r, "merge", "-q", "--no-ff", "side", "-m", "Merge pull request #12 from ada/warps\n\nadd: 8 warps, 1.2x faster",
        date="2024-03-06T10:00:00+00:00")
    shas["merge"] = git(r, "rev-parse", "HEAD")
    return r, shas


def _mine(repo: Path, store: Path, **kw):
    from skel.miner.history import mine_history
    from skel.store.history import HistoryStore

    return mine_history(repo, HistoryStore(store), name="demo", jobs=1, cache_root=store.parent / "cache", **kw)


def test_until_stops_before_the_cutoff_day_then_a_later_run_continues(repo, tmp_path):
    from skel.store.history import HistoryStore

    r, shas = repo
    store = tmp_path / "store"
    first = _mine(r, store, until="2024-03-01")
    assert first.tip == first.last_commit == shas["ldg"], "a bare date is midnight UTC: the cutoff day is out"
    assert first.commits_read == first.commits_walked == 2 and first.until == "2024-03-01"
    hs = HistoryStore(store)
    assert {e.commit for e in hs.events()} | {d.commit for d in hs.drafts()} == {shas["ldg"]}
    again = _mine(r, store, until="2024-03-01")
    assert again.up_to_date
    later = _mine(r, store)  # no bound: the commits after the cutoff, and only those
    assert later.start == shas["ldg"] and later.commits_read == 2
    assert {e.commit for e in hs.events() if e.technique == "exp2-log2e-folding"} == {shas["cutoff day"]}


def test_until_before_the_first_commit_is_an_error(repo, tmp_path):
    r, _ = repo
    with pytest.raises(FileNotFoundError, match="no commit of .* was committed before 2023-01-01"):
        _mine(r, tmp_path / "store", until="2023-01-01")
    result = CliRunner().invoke(cli, ["mine", "--history", str(r), "--until", "2023-01-01",
                                      "--store", str(tmp_path / "store")])
    assert result.exit_code == 2 and "before 2023-01-01" in result.output
    result = CliRunner().invoke(cli, ["mine", str(r), "--until", "2024-01-01", "--store", str(tmp_path / "s")])
    assert result.exit_code == 2 and "go with --history" in result.output


def test_cli_until(repo, tmp_path):
    r, shas = repo
    result = CliRunner().invoke(cli, ["mine", "--history", str(r), "--until", "2024-03-01", "--store",
                                      str(tmp_path / "store"), "-j", "1"])
    assert result.exit_code == 0, result.output
    assert f"to {shas['ldg'][:8]} (the last commit before 2024-03-01)" in result.output
    out = CliRunner().invoke(cli, ["mine", "--history", str(r), "--until", "2024-03-01", "--store",
                                   str(tmp_path / "store2"), "--json"]).output
    assert json.loads(out)["until"] == "2024-03-01"


def test_cuda_history_is_read_and_drafts_keep_their_edit(repo, tmp_path):
    from skel.store.history import HistoryStore

    r, shas = repo
    store = tmp_path / "store"
    _mine(r, store)
    # the CUDA commit is read: adding `__ldg` was a draft ("+ call __ldg") until
    # cuda-restrict-readonly-loads was promoted from that very group; now it is that technique introduced
    hs = HistoryStore(store)
    assert not [d for d in hs.drafts() if d.commit == shas["ldg"]]
    (e,) = [e for e in hs.events() if e.commit == shas["ldg"]]
    assert (e.path, e.kernel, e.technique, e.kind) == ("scale.cu", "scale_kernel", "cuda-restrict-readonly-loads",
                                                       "introduced")
    # a merged pull request is named by its title, and its change is read against the first parent
    (w,) = [d for d in HistoryStore(store).drafts() if d.commit == shas["merge"]]
    assert w.message == "add: 8 warps, 1.2x faster (Merge pull request #12 from ada/warps)"
    assert w.kernel == "add_kernel" and w.edit == ["launch num_warps up"] and w.numbers == ["1.2x faster"]


@pytest.mark.parametrize("message, why", [
    ("[kunlunxin]fix-all (#607)", "a fix"),
    ("[AMD][Bugfix] rope offsets", "a fix"),
    ("[AMD] Fix rope for gfx942", "a fix"),
    ("[Perf] rope: 1.3x faster", ""),
    ("[kernel] prefix sums in one pass", ""),
])
def test_bracketed_tags_before_a_fix(message, why):
    from skel.miner import changes

    assert changes.fix_not_optimisation(message) == why


def test_edit_is_written_without_the_repositorys_names():
    from skel.kernels.extract import extract
    from skel.miner import changes

    def entry(src: str, name: str) -> dict:
        return {"facts": next(k for k in extract(src, "k.py") if k.name == name).to_dict()}

    mine = V1.replace("def softmax_kernel(x_ptr, y_ptr, N, BLOCK: tl.constexpr)",
                      "def softmax_kernel(x_ptr, y_ptr, N, T, BLOCK: tl.constexpr)")
    theirs = mine.replace("softmax_kernel", "row_softmax_fwd").replace("x_ptr", "inp")
    for src, name in ((mine, "softmax_kernel"), (theirs, "row_softmax_fwd")):
        after = src.replace(", T, BLOCK", ", T: tl.constexpr, BLOCK")  # the length made constexpr
        assert changes.edit(entry(src, name), entry(after, name)) == [
            "+ constexpr sequence length", "more constexpr parameters",
            "+ constexpr sequence length (was a runtime parameter)"]
    assert changes.edit(entry(V1, "softmax_kernel"), entry(V1.replace(EXP, EXP2), "softmax_kernel")) == [
        "+ call tl.exp2", "- call tl.exp"]
