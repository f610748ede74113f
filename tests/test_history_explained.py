"""benchmarks/history/explained.py: which optimisation commits some skeleton explains."""

from __future__ import annotations

from benchmarks.history.explained import counts, main
from skel.store.history import Draft, HistoryEvent, HistoryStore, RepoState


def _change(cls, ident, repo, commit, message, **kw):
    return cls(id=ident, repo=repo, commit=commit, date="2025-01-01T00:00:00Z", author="a", message=message,
               numbers=[], path="k.py", kernel="k", **kw)


def test_only_an_introduced_technique_explains_an_optimisation_commit(tmp_path):
    hs = HistoryStore(tmp_path)
    events = [
        _change(HistoryEvent, "e1", "o/a", "c1", "faster softmax: online", technique="online-softmax",
                kind="introduced"),
        # refined: a kernel that uses a technique changed some related line — no explanation
        _change(HistoryEvent, "e2", "o/a", "c2", "optimize the launch", technique="autotune-configs",
                kind="refined"),
        _change(HistoryEvent, "e3", "o/a", "c4", "add a feature", technique="autotune-configs", kind="introduced"),
    ]
    drafts = [_change(Draft, "d1", "o/a", "c3", "speed up the scan by 1.3x"),
              _change(Draft, "d2", "o/b", "c9", "perf: fuse the two passes")]
    hs.commit_batch(events, drafts, RepoState(repo="o/a", root=str(tmp_path), last_commit="c4"))
    rows = {r[0]: r[1:] for r in counts(tmp_path, None)}
    # o/a: c1, c2, c3 claim an optimisation (c4's message does not); only c1 is explained;
    # every commit with an event or a draft is kernel-changing, and c1 and c4 introduce something
    assert rows["o/a"] == (3, 1, 4, 2)
    assert rows["o/b"] == (1, 0, 1, 0)
    assert [r[0] for r in counts(tmp_path, ["o/b"])] == ["o/b"]


def test_a_missing_store_is_a_clear_error(tmp_path, capsys):
    assert main(["--store", str(tmp_path / "none")]) == 2
    assert "no history store" in capsys.readouterr().err
