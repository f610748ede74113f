"""History output a person reads (issue #37): numbers of a pasted test run are no claims,
--max-commits reads the newest commits and the next run the older ones, and a fix or a
revert makes no draft."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_history import V1, commit, git

from skel.cli import cli
from skel.miner import changes

PYTEST_LOG = """Fix flaky rms_norm test

tests/ops/test_rms_norm.py::test_correctness[dtype0-2-128] PASSED        [  6%]
tests/ops/test_rms_norm.py::test_correctness[dtype1-2-128] PASSED        [ 12%]
tests/ops/test_rms_norm.py::test_correctness[dtype2-2-128] FAILED        [ 18%]
tests/ops/test_swiglu.py ......F.                                        [ 25%]
[ 31%] Building CXX object csrc/CMakeFiles/ops.dir/ops.cpp.o
 45%|####5     | 45/100 [00:02<00:01, 20.1it/s]
collected 16 items
========================= 15 passed, 1 failed in 3.21s =========================
"""


def test_numbers_of_a_pasted_pytest_log_are_not_claims():
    assert changes.numbers(PYTEST_LOG) == []
    claims = PYTEST_LOG + "\nrms_norm backward: 1.7x faster, 30% less memory, 2.1 ms -> 1.6 ms; max error down 5%\n"
    assert changes.numbers(claims) == ["1.7x faster", "30% less memory", "2.1 ms", "1.6 ms", "5%"]
    # a claim is kept wherever it stands; only progress marks and test-run lines go
    assert changes.numbers("fused: 25% less memory [ 6%] [ 12%] then") == ["25% less memory"]


@pytest.mark.parametrize("message, why", [
    ("Fix rope for qwen2", "a fix"),
    ("fix: nan in bf16 rms_norm", "a fix"),
    ("fix(rope): wrong stride", "a fix"),
    ("rms_norm: fix nan with bf16", "a fix"),
    ("[Bugfix] cross entropy ignore_index", "a fix"),
    ("Bugfix for fused linear cross entropy", "a fix"),
    ("Fixes #123: memory leak", "a fix"),
    ('Revert "rms_norm: 1.3x faster with 8 warps"', "a revert"),
    ("Fix slow rms_norm backward: 1.7x faster", ""),  # a fix that claims a speed-up is kept
    ("fix: speedup swiglu on long sequences", ""),
    ("Optimise fused linear cross entropy", ""),
    ("Fixture for the kernels' tests", ""),
    ("Prefix sums in one pass", ""),
])
def test_fix_or_revert_is_read_as_such(message, why):
    assert changes.fix_not_optimisation(message) == why


def mine(repo: Path, store: Path, **kw):
    from skel.miner.history import mine_history
    from skel.store.history import HistoryStore

    return mine_history(repo, HistoryStore(store), name="demo", jobs=1, cache_root=store.parent / "cache", **kw)


WARPS = "BLOCK=1024, num_warps={}"


@pytest.fixture(scope="module")
def warps_repo(tmp_path_factory) -> Path:
    """Six commits, each changing only add()'s num_warps (a tracked launch fact: a draft
    candidate unless its message reads as a fix)."""
    r = tmp_path_factory.mktemp("readable") / "warps"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    k = V1.replace(WARPS.format(4), WARPS.format(1))
    commit(r, "initial kernels", "2024-01-01T10:00:00+00:00", {"k.py": k})
    messages = ["add: 2 warps", "Fix add for odd sizes", "fix: add launch crash",
                "Revert \"add: 8 warps (1.3x faster)\"", "Fix add being slow: 1.5x faster",
                "[Bugfix] add on small inputs\n\n" + PYTEST_LOG]
    for n, msg in enumerate(messages, 2):
        k = k.replace(WARPS.format(n - 1), WARPS.format(n))
        commit(r, msg, f"2024-01-0{n}T10:00:00+00:00", {"k.py": k})
    return r


def test_a_fix_makes_no_draft_unless_it_claims_a_speedup(warps_repo, tmp_path):
    from skel.store.history import HistoryStore

    store = tmp_path / "store"
    mine(warps_repo, store)
    drafts = HistoryStore(store).drafts()
    assert sorted(d.message for d in drafts) == ["Fix add being slow: 1.5x faster", "add: 2 warps"]
    assert {d.message: d.numbers for d in drafts}["Fix add being slow: 1.5x faster"] == ["1.5x faster"]


def subjects(store: Path) -> list[str]:
    from skel.store.history import HistoryStore

    return sorted({d.message for d in HistoryStore(store).drafts()} | {e.message for e in HistoryStore(store).events()})


def test_max_commits_reads_the_newest_and_the_next_run_the_older(warps_repo, tmp_path):
    """`--max-commits N` is `git log -n N`: the newest N; the rest is read by the next runs."""
    store = tmp_path / "store"
    tip = git(warps_repo, "rev-parse", "HEAD")
    first = mine(warps_repo, store, max_commits=2)
    assert first.more and first.commits_read == 2 and first.last_commit == tip
    assert subjects(store) == ["Fix add being slow: 1.5x faster"]  # the newest two: that one and a bugfix
    assert first.listed == 7 and first.left == 5
    second = mine(warps_repo, store, max_commits=3)  # the newest 3 of the 5 older ones
    assert second.commits_read == 3 and second.older == 3 and second.left == 2 and second.more
    assert subjects(store) == ["Fix add being slow: 1.5x faster"]  # a fix, a fix, a revert: no draft
    third = mine(warps_repo, store)
    assert third.commits_read == 2 and third.older == 2 and not third.more
    assert subjects(store) == ["Fix add being slow: 1.5x faster", "add: 2 warps"]
    assert mine(warps_repo, store).up_to_date
    # the same records as one run over the whole history
    whole = tmp_path / "whole"
    mine(warps_repo, whole)
    assert subjects(whole) == subjects(store)


def test_max_commits_leaves_older_ranges_across_new_commits(warps_repo, tmp_path):
    """New commits after a limited run: the next limited run reads the newest of both (new
    ones first), and what is left in between is read later — nothing twice, nothing lost."""
    import shutil

    from skel.store.history import HistoryStore

    clone = tmp_path / "clone"
    shutil.copytree(warps_repo, clone)
    store = tmp_path / "store"
    mine(clone, store, max_commits=2)
    text = (clone / "k.py").read_text()
    for n in (8, 9, 10):
        text = text.replace(WARPS.format(n - 1), WARPS.format(n))
        commit(clone, f"add: {n} warps", f"2024-02-0{n - 7}T10:00:00+00:00", {"k.py": text})
    second = mine(clone, store, max_commits=2)  # the newest 2 of the 3 new ones
    assert second.commits_read == 2 and second.older == 0 and second.left == 6
    unread = HistoryStore(store).state("demo").unread  # the 5 oldest, and the oldest new one
    first_new = git(clone, "rev-parse", "HEAD~2")
    assert len(unread) == 2 and unread[0][0] == "" and unread[1] == [git(clone, "rev-parse", "HEAD~3"), first_new]
    third = mine(clone, store, max_commits=2)  # that new one and the newest older one
    assert third.commits_read == 2 and third.older == 2 and third.left == 4
    fourth = mine(clone, store)
    assert fourth.commits_read == 4 and not fourth.more and not HistoryStore(store).state("demo").unread
    assert HistoryStore(store).state("demo").commits == 10
    whole = tmp_path / "whole"
    mine(clone, whole)
    assert subjects(whole) == subjects(store)


def test_cli_says_the_newest_were_read_and_older_are_left(warps_repo, tmp_path):
    runner = CliRunner()
    r = runner.invoke(cli, ["mine", "--help"])
    assert "newest N commits" in r.output
    args = ["mine", "--history", str(warps_repo), "--source", "demo", "--store", str(tmp_path / "s"), "-j", "1"]
    r = runner.invoke(cli, [*args, "--max-commits", "2"])
    assert r.exit_code == 0, r.output
    assert "read the newest 2 of 7 commits (--max-commits); 5 older ones are left: run again to read them" in r.output
    r = runner.invoke(cli, args)
    assert r.exit_code == 0, r.output
    assert "(5 older commits an earlier --max-commits run left)" in r.output and "older ones are left" not in r.output
    r = runner.invoke(cli, [*args, "--json"])
    assert json.loads(r.output)["up_to_date"]
