"""History mining: commits of a small throwaway repository walked, kernels compared before and
after, events and drafts recorded, incremental re-runs, the CLI and the export's refusal."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from skel.cli import cli

V1 = '''
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + offs, mask=offs < N, other=-float("inf"))
    e = tl.exp(x - tl.max(x, 0))
    tl.store(y_ptr + row * N + offs, e / tl.sum(e, 0), mask=offs < N)


@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=4), triton.Config({"BLOCK": 128}, num_warps=4)],
                 key=["N"])
@triton.jit
def scale_kernel(x_ptr, y_ptr, N, M, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    for i in range(0, N, BLOCK):
        x = tl.load(x_ptr + i + offs, mask=i + offs < N)
        tl.store(y_ptr + i + offs, x * 2, mask=i + offs < N)


@triton.jit
def add_kernel(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < N)
    tl.store(y_ptr + offs, x + 1, mask=offs < N)


def add(x, y):
    n = x.numel()
    add_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024, num_warps=4)
'''

OTHER = '''
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr):
    tl.store(y_ptr, tl.load(x_ptr))
'''

EXP = 'e = tl.exp(x - tl.max(x, 0))'
EXP2 = 'e = tl.exp2((x - tl.max(x, 0)) * 1.4426950408889634)'
KEY = 'key=["N"])'
AUTOTUNE = ('@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=4), '
            'triton.Config({"BLOCK": 128}, num_warps=4)],\n                 key=["N"])\n')


def git(repo: Path, *args: str, date: str = "2024-01-01T00:00:00+00:00") -> str:
    env = {"GIT_COMMITTER_DATE": date,
           "GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com", "GIT_COMMITTER_NAME": "Ada",
           "GIT_COMMITTER_EMAIL": "ada@example.com", "PATH": "/usr/bin:/bin:/usr/local/bin",
           "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def commit(repo: Path, message: str, date: str, files: dict[str, str | bytes | None]) -> str:
    for rel, content in files.items():
        p = repo / rel
        if content is None:
            git(repo, "rm", "-q", rel)
            continue
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content.lstrip())
        git(repo, "add", rel)
    git(repo, "commit", "-q", "-m", message, "--date", date, date=date)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    """Eight commits: each one a case history mining must tell apart."""
    r = tmp_path_factory.mktemp("hist") / "demo"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    k = V1
    commit(r, "initial kernels", "2024-01-01T10:00:00+00:00",
           {"k.py": k, "other.py": OTHER, "latin.py": "# caf\xe9 triton\n".encode("latin-1")})
    k = k.replace(EXP, EXP2)
    commit(r, "softmax: exp2 with log2(e) folded (1.3x faster)", "2024-01-02T10:00:00+00:00", {"k.py": k})
    k = k.replace(KEY, 'key=["N", "M"])').replace(
        'num_warps=4)],', 'num_warps=4), triton.Config({"BLOCK": 256}, num_warps=8)],')
    commit(r, "scale: autotune on M too", "2024-01-03T10:00:00+00:00", {"k.py": k})
    k = k.replace("BLOCK=1024, num_warps=4)", "BLOCK=1024, num_warps=8)")
    commit(r, "add: 8 warps, 2.1 ms -> 1.7 ms, -20% memory", "2024-01-04T10:00:00+00:00", {"k.py": k})
    k = k.replace(AUTOTUNE.replace('key=["N"]', 'key=["N", "M"]').replace(
        'num_warps=4)],', 'num_warps=4), triton.Config({"BLOCK": 256}, num_warps=8)],'), "")
    assert "autotune" not in k
    commit(r, "scale: drop autotune", "2024-01-05T10:00:00+00:00", {"k.py": k})
    git(r, "mv", "k.py", "ops_k.py")
    k = k.replace("e / tl.sum(e, 0)", "e / tl.sum(tl.exp2(x * 0.0) * e, 0)")
    commit(r, "move kernels", "2024-01-06T10:00:00+00:00", {"ops_k.py": k})
    commit(r, "remove copy kernel", "2024-01-07T10:00:00+00:00", {"other.py": None})
    commit(r, "a helper, no kernel: faster imports", "2024-01-08T10:00:00+00:00", {"util.py": "X = 1\n"})
    return r


def mine(repo: Path, store: Path, **kw):
    from skel.miner.history import mine_history
    from skel.store.history import HistoryStore

    return mine_history(repo, HistoryStore(store), name="demo", jobs=1, cache_root=store.parent / "cache", **kw)


@pytest.fixture(scope="module")
def mined(repo, tmp_path_factory):
    store = tmp_path_factory.mktemp("mined") / "store"
    return store, mine(repo, store)


def events_of(store: Path):
    from skel.store.history import HistoryStore

    return HistoryStore(store).events()


def test_events_introduced_refined_removed(mined):
    store, report = mined
    assert report.commits_read == 8 and report.commits_walked == 8
    got = {(e.message, e.kernel, e.technique, e.kind) for e in events_of(store)}
    assert ("softmax: exp2 with log2(e) folded (1.3x faster)", "softmax_kernel", "exp2-log2e-folding",
            "introduced") in got
    assert ("scale: autotune on M too", "scale_kernel", "autotune-configs", "refined") in got
    assert ("scale: drop autotune", "scale_kernel", "autotune-configs", "removed") in got
    assert ("move kernels", "softmax_kernel", "exp2-log2e-folding", "refined") in got, "a renamed file is followed"
    assert not any(m == "initial kernels" for m, *_ in got), "a new file is not an optimisation of a kernel"
    refined = next(e for e in events_of(store) if e.kind == "refined" and e.technique == "autotune-configs")
    assert "+ autotune key M" in refined.changed
    assert any(c.startswith("+ autotune config {'BLOCK':256},num_warps=8") for c in refined.changed)
    introduced = next(e for e in events_of(store) if e.kind == "introduced")
    assert introduced.numbers == ["1.3x faster"] and introduced.author == "Ada"
    assert introduced.date.startswith("2024-01-02") and introduced.before and introduced.after
    moved = next(e for e in events_of(store) if e.message == "move kernels")
    assert (moved.before_path, moved.path) == ("k.py", "ops_k.py")


def test_unexplained_optimisation_is_a_draft(mined):
    from skel.store.history import HistoryStore

    store, report = mined
    drafts = HistoryStore(store).drafts()
    assert report.drafts == len(drafts) == 1
    (d,) = drafts
    assert (d.kernel, d.review) == ("add_kernel", "pending")
    assert d.changed == ["+ launch num_warps=8", "- launch num_warps=4"]
    assert d.numbers == ["2.1 ms", "1.7 ms", "-20% memory"]
    assert "tracked launch/tile facts changed" in d.reason


def test_bad_files_are_skipped_not_fatal(mined):
    _, report = mined
    assert [(s.rel, s.reason) for s in report.skipped] == [("latin.py", "not UTF-8 (byte 5)")]
    assert report.commits_kernels == 7  # all but the helper's (its file holds no kernel)


def test_incremental_and_max_commits(repo, mined, tmp_path):
    store = tmp_path / "store"
    first = mine(repo, store, max_commits=3)
    assert first.more and first.commits_read == 3
    assert first.last_commit == first.tip and first.left == 5  # the newest 3 (`git log -n 3`); 5 older left
    second = mine(repo, store)
    assert second.commits_read == 5 and not second.more and second.older == 5 and second.start is None
    again = mine(repo, store)
    assert again.up_to_date and again.commits_read == 0
    # the same events as one run over the whole history, none twice
    ids = [e.id for e in events_of(store)]
    whole = {e.id for e in events_of(mined[0])}
    assert len(ids) == first.events.total() + second.events.total() == len(whole) >= 4
    assert set(ids) == whole


def test_new_commit_is_read_alone(repo, tmp_path):
    import shutil

    clone = tmp_path / "clone"
    shutil.copytree(repo, clone)
    store = tmp_path / "store"
    mine(clone, store)
    text = (clone / "ops_k.py").read_text().replace("add_kernel[(triton.cdiv(n, 1024),)]",
                                                      "add_kernel[lambda meta: (triton.cdiv(n, meta['BLOCK']),)]")
    commit(clone, "grid as a lambda", "2024-02-01T10:00:00+00:00", {"ops_k.py": text})
    report = mine(clone, store)
    assert report.commits_read == 1 and report.commits_walked == 1


def test_cli_drafts_review_and_history(mined):
    store, _ = mined
    runner = CliRunner()
    r = runner.invoke(cli, ["skeletons", "list", "--drafts", "--store", str(store)])
    assert r.exit_code == 0, r.output
    assert "add_kernel" in r.output and "to review" in r.output and "+ launch num_warps=8" in r.output
    data = json.loads(runner.invoke(cli, ["skeletons", "list", "--drafts", "--json", "--store", str(store)]).output)
    draft_id = data[0]["id"]
    r = runner.invoke(cli, ["skeletons", "draft", "accept", draft_id[:6], "--note", "warps per size", "--store",
                            str(store)])
    assert r.exit_code == 0 and "to write as a skeleton (not written yet)" in r.output
    data = json.loads(runner.invoke(cli, ["skeletons", "list", "--drafts", "--json", "--store", str(store)]).output)
    assert (data[0]["review"], data[0]["note"]) == ("accepted", "warps per size")
    r = runner.invoke(cli, ["skeletons", "draft", "reject", "zz", "--store", str(store)])
    assert r.exit_code == 2 and "at least 4 characters" in r.output
    r = runner.invoke(cli, ["skeletons", "draft", "reject", "ffffffff", "--store", str(store)])
    assert r.exit_code == 2 and "no history event or draft" in r.output
    r = runner.invoke(cli, ["history", "list", "--kind", "introduced", "--store", str(store)])
    assert r.exit_code == 0 and "exp2-log2e-folding" in r.output and "1.3x faster" in r.output


def test_cli_mine_history_and_rerun(repo, tmp_path):
    store = tmp_path / "store"
    runner = CliRunner()
    r = runner.invoke(cli, ["mine", "--history", str(repo), "--source", "demo", "--store", str(store), "-j", "1",
                            "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["events"]["introduced"] == 1
    r = runner.invoke(cli, ["mine", "--history", str(repo), "--source", "demo", "--store", str(store)])
    assert r.exit_code == 0 and "up to date" in r.output and "no new commit" in r.output
    r = runner.invoke(cli, ["mine", "--history", str(tmp_path / "nope"), "--store", str(store)])
    assert r.exit_code == 2 and "no such file or directory" in r.output
    r = runner.invoke(cli, ["mine", str(repo), "--since", "2024-01-01", "--store", str(store)])
    assert r.exit_code == 2 and "go with --history" in r.output


def test_bare_repository(repo, tmp_path):
    bare = tmp_path / "demo.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(bare)], check=True)
    report = mine(bare, tmp_path / "store")
    assert report.repo == "demo" and report.commits_read == 8 and report.events["introduced"] == 1


def test_evidence_line_in_show(mined):
    from skel import api

    store, _ = mined
    _, evidence = api.show("exp2-log2e-folding", store=str(store))
    assert evidence.history is not None
    line = evidence.history.line()
    assert line.startswith("introduced in 1 commit across 1 repository (latest: 2024-01-02 demo@")
    assert line.endswith("softmax: exp2 with log2(e) folded (1.3x faster))")
    from skel.skeletons.docs import render_skeleton
    from skel.skeletons.registry import get

    assert line in render_skeleton(get("exp2-log2e-folding"), "text", evidence.to_dict())


def test_export_is_refused_by_verify_until_filled(mined, tmp_path):
    store, _ = mined
    event = next(e for e in events_of(store) if e.kind == "introduced")
    runner = CliRunner()
    r = runner.invoke(cli, ["history", "export", event.id, "--out", str(tmp_path / "out"), "--store", str(store)])
    assert r.exit_code == 0, r.output
    (path,) = (tmp_path / "out").glob("*.py")
    text = path.read_text()
    assert "def before_softmax_kernel(" in text and "def after_softmax_kernel(" in text
    assert "tl.exp2((x - tl.max(x, 0)) * 1.4426950408889634)" in text.split("# ---- after")[1]
    assert "tl.exp(x - tl.max(x, 0))" in text.split("# ---- after")[0]
    r = runner.invoke(cli, ["verify", str(path), str(path), "--device", "cpu"])
    assert r.exit_code == 2
    assert "fill in SHAPES, DTYPES, TOLERANCES, make_inputs, make_outputs, reference, before, after" in r.output


def test_suggest_evidence_line_reads_history(mined, tmp_path):
    from skel import api
    from skel.retriever import render

    store, _ = mined
    kernel = tmp_path / "mine.py"
    # with a softmax scale, so exp2 folding fits it (a related technique beside full matches is
    # only named in a note)
    kernel.write_text(V1.split("@triton.autotune")[0].lstrip()
                      .replace("tl.exp(x - tl.max(x, 0))", "tl.exp((x - tl.max(x, 0)) * scale)")
                      .replace("(x_ptr, y_ptr, N, BLOCK", "(x_ptr, y_ptr, N, scale, BLOCK"))
    results = api.suggest(kernel, store=str(store), k=50)
    (s,) = [s for r in results for s in r.suggestions if s.id == "exp2-log2e-folding"]
    assert s.history.startswith("introduced in 1 commit across 1 repository (latest: 2024-01-02 demo@")
    assert f"; {s.history}" in render.text(results)
    others = [s for r in results for s in r.suggestions if s.id != "exp2-log2e-folding"]
    assert others and not any(o.history for o in others), "only techniques with history get the line"


def test_since_limits_the_first_run(repo, tmp_path):
    store = tmp_path / "store"
    report = mine(repo, store, since="2024-01-04T00:00:00+00:00")
    assert report.commits_read == report.commits_walked == 5
    assert {e.message for e in events_of(store)} == {"scale: drop autotune", "move kernels"}
    again = mine(repo, store, since="2023-01-01")
    assert again.up_to_date


def test_merge_is_read_against_its_first_parent(repo, tmp_path):
    import shutil

    clone = tmp_path / "clone"
    shutil.copytree(repo, clone)
    git(clone, "checkout", "-q", "-b", "side")
    text = (clone / "ops_k.py").read_text()
    commit(clone, "side: autotune add_kernel", "2024-03-01T10:00:00+00:00",
           {"ops_k.py": text.replace("@triton.jit\ndef add_kernel",
                                     '@triton.autotune(configs=[triton.Config({}, num_warps=4)], key=["N"])\n'
                                     "@triton.jit\ndef add_kernel")})
    git(clone, "checkout", "-q", "main")
    commit(clone, "main: a helper", "2024-03-02T10:00:00+00:00", {"util.py": "X = 2\n"})
    date = "2024-03-03T10:00:00+00:00"
    git(clone, "merge", "-q", "--no-ff", "side", "-m", "merge side", date=date)
    store = tmp_path / "store"
    mine(clone, store)
    got = [(e.message, e.kernel, e.technique, e.kind) for e in events_of(store) if e.date >= "2024-03"]
    assert got == [("merge side", "add_kernel", "autotune-configs", "introduced")], \
        "the side branch's commit is not walked; the merge brings its change, once"


def test_store_redo_keeps_reviews_and_never_leaves_temp_files(tmp_path):
    from skel.store.history import Draft, HistoryStore, RepoState

    hs = HistoryStore(tmp_path / "store")
    d = Draft(id="abcdef1234", repo="r", commit="c" * 40, date="2024-01-01", author="a", message="m", numbers=[],
              path="k.py", kernel="k", changed=["+ launch num_warps=8"], reason="tracked launch/tile facts changed")
    state = RepoState(repo="r", root=str(tmp_path), last_commit="c" * 40)
    hs.commit_batch([], [d], state)
    hs.review("abcd", "rejected", "a bug fix", "2024-02-01")
    redo = Draft(**{**d.to_dict(), "review": "pending", "note": ""})
    hs.commit_batch([], [redo], state)  # a batch read again after a crash
    (got,) = hs.drafts()
    assert (got.review, got.note, got.listed_as) == ("rejected", "a bug fix", "rejected")
    assert sorted(p.name for p in hs.dir.iterdir()) == ["drafts.jsonl", "state.json"]
