"""Candidate techniques (issue #38): the drafts history mining could not explain, grouped by
their normalised kernel-model edit and ranked by spread.

Two throwaway repositories are built here and mined with `skel mine --history`: both make
the same change no skeleton explains (a normalised row kept in registers instead of being
stored and loaded back), both apply a change a skeleton does explain (exp2 with log2(e)
folded), and the first alone adds a barrier in three commits. The groups must put the two
repositories' change together, never list the explained one, and rank the change seen in two
repositories above the one seen three times in one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_history import EXP, EXP2, V1, commit, git

from skel.cli import cli

# a row normalised, stored, loaded back and scaled: the reload is the waste
NORM = '''
import triton
import triton.language as tl


@triton.jit
def {name}(x_ptr, y_ptr, w_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(x_ptr + row * N + offs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / N
    tl.store(y_ptr + row * N + offs, x - mean, mask=mask)
    y = tl.load(y_ptr + row * N + offs, mask=mask, other=0.0)
    w = tl.load(w_ptr + offs, mask=mask)
    tl.store(y_ptr + row * N + offs, y * w, mask=mask)
'''
# the change no skeleton explains: the weight vector becomes one scalar loaded without a mask.
# (The store and reload above is `row-in-registers`'s subject: removing it is explained, no candidate.)
STORE_RELOAD = '''    w = tl.load(w_ptr + offs, mask=mask)
'''
IN_REGISTERS = '''    w = tl.load(w_ptr)
'''
BARRIER_BEFORE = "    mean = tl.sum(x, axis=0) / N\n"
BARRIER_AFTER = "    tl.debug_barrier()\n    mean = tl.sum(x, axis=0) / N\n"


def _norm(name: str) -> str:
    return NORM.replace("{name}", name)


def _repo(root: Path, name: str, kernels: list[str], remote: str | None = None) -> tuple[Path, dict[str, str]]:
    r = root / name
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    if remote:
        git(r, "remote", "add", "origin", remote)
    files = {f"{k}.py": _norm(k) for k in kernels} | {"softmax.py": V1}
    shas = {"initial": commit(r, "initial kernels", "2024-01-01T10:00:00+00:00", files)}
    return r, shas


@pytest.fixture(scope="module")
def mined(tmp_path_factory):
    """Two repositories' histories in one store; the commits of each case by name."""
    from skel.miner.history import mine_history
    from skel.store.history import HistoryStore

    root = tmp_path_factory.mktemp("cand")
    # alpha's remote is on GitHub: its label is acme/alpha and its changes get links; beta has none
    alpha, a = _repo(root, "alpha", ["norm_kernel", "k1", "k2", "k3"], remote="https://github.com/acme/alpha.git")
    beta, b = _repo(root, "beta", ["rms_fwd"])
    # the same change, no skeleton for it, in both repositories (other kernel names, other words)
    a["registers"] = commit(alpha, "norm: one scalar weight, no masked vector load (1.4x faster)",
                            "2024-02-01T10:00:00+00:00",
                            {"norm_kernel.py": _norm("norm_kernel").replace(STORE_RELOAD, IN_REGISTERS)})
    b["registers"] = commit(beta, "rms_fwd: scalar weight, 25% faster", "2024-03-01T10:00:00+00:00",
                            {"rms_fwd.py": _norm("rms_fwd").replace(STORE_RELOAD, IN_REGISTERS)})
    # a change a skeleton explains (exp2-log2e-folding), in both repositories
    for r, shas, day in ((alpha, a, "02"), (beta, b, "03")):
        shas["exp2"] = commit(r, "softmax: exp2 with log2(e) folded (1.3x faster)", f"2024-{day}-02T10:00:00+00:00",
                              {"softmax.py": V1.replace(EXP, EXP2)})
    # a barrier added three times in one repository
    a["barriers"] = ",".join(
        commit(alpha, f"{k}: a barrier before the reduction", f"2024-04-0{n}T10:00:00+00:00",
               {f"{k}.py": _norm(k).replace(BARRIER_BEFORE, BARRIER_AFTER)})
        for n, k in enumerate(["k1", "k2", "k3"], 1))
    store = root / "store"
    hs = HistoryStore(store)
    for r in (alpha, beta):
        mine_history(r, hs, jobs=1, cache_root=root / "cache")
    return store, a, b


def _groups(store: Path, *args: str) -> dict:
    r = CliRunner().invoke(cli, ["skeletons", "candidates", "--json", "--store", str(store), *args])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def _commits(cluster: dict) -> set[str]:
    return {i["commit"] for i in cluster["instances"]}


def test_the_same_change_in_two_repositories_is_one_group(mined):
    store, a, b = mined
    found = _groups(store, "--min-repos", "1")
    (group,) = [c for c in found["clusters"] if a["registers"] in _commits(c)]
    assert _commits(group) == {a["registers"], b["registers"]}, "both repositories' change, nothing else"
    assert group["repos"] == ["acme/alpha", "beta"] and group["commits"] == 2
    assert group["key"] == "fewer call tl.load(mask)"
    shared = {s["token"] for s in group["shared"]}
    assert "message: masking" in shared  # alpha's message names the mask: a token the group shares
    assert sorted(group["numbers"]) == ["1.4x faster", "25% faster"] and group["stated"] == 2
    kernels = {(i["repo"], i["kernel"], i["path"]) for i in group["instances"]}
    assert kernels == {("acme/alpha", "norm_kernel", "norm_kernel.py"), ("beta", "rms_fwd", "rms_fwd.py")}


def test_an_explained_change_is_not_a_candidate(mined):
    from skel.store.history import HistoryStore

    store, a, b = mined
    events = HistoryStore(store).events()
    explained = {e.commit for e in events if e.technique == "exp2-log2e-folding" and e.kind == "introduced"}
    assert explained == {a["exp2"], b["exp2"]}, "the skeleton explains it in both repositories"
    found = _groups(store, "--min-repos", "1")
    listed = {c for g in found["clusters"] for c in _commits(g)}
    assert not listed & explained, "seen in two repositories, but a skeleton explains it: no candidate"
    drafted = {d.commit for d in HistoryStore(store).drafts()}
    assert a["registers"] in drafted and not drafted & explained


def test_spread_outranks_repetition(mined):
    store, a, b = mined
    found = _groups(store, "--min-repos", "1")
    keys = [c["key"] for c in found["clusters"]]
    assert keys[0] == "fewer call tl.load(mask)"
    (barrier,) = [c for c in found["clusters"] if c["key"] == "+ call tl.debug_barrier"]
    assert _commits(barrier) == set(a["barriers"].split(",")) and barrier["repos"] == ["acme/alpha"]
    assert found["clusters"][0]["score"] > barrier["score"], "two repositories beat three commits in one"
    # --min-repos 2 keeps the change seen in two repositories only
    two = _groups(store)
    assert [c["key"] for c in two["clusters"]] == [keys[0]] and two["below_min_repos"] == len(keys) - 1
    assert _groups(store, "--min-repos", "1", "--limit", "1")["clusters"][0]["key"] == keys[0]


def test_links_and_readable_table(mined):
    store, a, b = mined
    found = _groups(store)
    links = {i["repo"]: i["link"] for i in found["clusters"][0]["instances"]}
    assert links["acme/alpha"] == f"https://github.com/acme/alpha/blob/{a['registers']}/norm_kernel.py#L5"
    assert links["beta"] is None, "no remote: no page to point at"
    r = CliRunner().invoke(cli, ["skeletons", "candidates", "--store", str(store), "--min-repos", "1"])
    assert r.exit_code == 0, r.output
    assert "score = 2 x repositories" in r.output and "acme/alpha, beta" in r.output
    assert f"acme/alpha@{a['registers'][:8]} norm_kernel.py:5 norm_kernel: norm: one scalar weight" in r.output
    assert f"https://github.com/acme/alpha/blob/{a['registers']}/norm_kernel.py#L5" in r.output
    assert "+ call tl.debug_barrier" in r.output
    r = CliRunner().invoke(cli, ["skeletons", "candidates", "--store", str(store)])
    assert "are in fewer than 2 repositories: --min-repos 1 lists them" in r.output
    assert "+ call tl.debug_barrier" not in r.output
    r = CliRunner().invoke(cli, ["skeletons", "candidates", "--help"])
    assert r.exit_code == 0 and "score = 2 x repositories" in r.output and "skel mine --history" in r.output


def test_empty_store_says_what_to_do(tmp_path):
    r = CliRunner().invoke(cli, ["skeletons", "candidates", "--store", str(tmp_path)])
    assert r.exit_code == 0 and "skel mine --history REPO" in r.output
    r = CliRunner().invoke(cli, ["skeletons", "candidates", "--store", str(tmp_path), "--min-repos", "0"])
    assert r.exit_code == 2


# --- grouping rules on drafts written directly -------------------------------------------

def _draft(repo: str, commit: str, kernel: str, edit: list[str], message: str = "change", numbers=(), **kw):
    from skel.store.history import Draft, record_id

    return Draft(id=record_id(repo, commit, kernel), repo=repo, commit=commit * 40 if len(commit) == 1 else commit,
                 date="2024-01-01", author="a", message=message, numbers=list(numbers), path="k.py", kernel=kernel,
                 edit=edit, **kw)


def test_rules_on_drafts():
    from skel.miner.candidates import group
    from skel.store.history import HistoryEvent

    drafts = [
        _draft("r1", "a", "k", ["+ call tl.range(num_stages)"]),
        _draft("r2", "b", "k", ["+ call tl.range(num_stages)"]),
        _draft("r3", "b", "k", ["+ call tl.range(num_stages)"]),  # the same commit from a fork: once
        _draft("r1", "c", "k", ["+ call tl.range(num_stages)"], review="rejected"),
        _draft("r1", "d", "k", ["launch num_warps up"]),  # an event explains this kernel's change
        _draft("r1", "e", "k", ["launch num_warps up"], message="Apply clang-format"),  # reformatting only
        # the same spread and commits; the one whose messages state numbers ranks first
        _draft("r1", "f", "k", ["+ call tl.cumsum"]), _draft("r2", "g", "k", ["+ call tl.cumsum"]),
        _draft("r1", "h", "k", ["- call tl.where"], numbers=["1.2x"]),
        _draft("r2", "i", "k", ["- call tl.where"], numbers=["10% faster"]),
        # no code edit in common: grouped by the message's keyword, after the edits
        _draft("r1", "j", "k", [], message="Vectorize the loads"), _draft("r2", "l", "k", ["kernel longer"],
                                                                           message="vectorized stores"),
        _draft("r1", "m", "k", ["+ call tl.sort"]),  # alone: in no group
    ]
    event = HistoryEvent(id="x", repo="r1", commit="d" * 40, date="2024-01-01", author="a", message="m",
                         numbers=[], path="k.py", kernel="k", technique="autotune-configs", kind="introduced")
    found = group(drafts, [event])
    assert (found.drafts, found.rejected, found.explained, found.repeated, found.housekeeping) == (13, 1, 1, 1, 1)
    assert [(c.key, c.by, c.commits, len(c.repos)) for c in found.clusters] == [
        ("- call tl.where", "edit", 2, 2), ("+ call tl.cumsum", "edit", 2, 2),
        ("+ call tl.range(num_stages)", "edit", 2, 2), ("message: vectorize", "message", 2, 2)]
    assert found.clusters[2].repos == ["r1", "r2"], "the fork's copy of commit b is not a third repository"
    assert found.ungrouped == 1 and found.unexplained == 9


def test_generic_tokens_key_no_group():
    from skel.miner.candidates import group

    drafts = [_draft(f"r{n}", c, "k", ["kernel longer", "more parameters"]) for n, c in enumerate("abcd")]
    assert group(drafts, []).clusters == []


def test_old_drafts_without_an_edit_use_their_tracked_facts():
    from skel.miner.candidates import edit_of, group
    from skel.store.history import Draft

    old = Draft.from_dict({"id": "1", "repo": "r", "commit": "a" * 40, "date": "2024", "author": "a",
                           "message": "m", "numbers": [], "path": "k.py", "kernel": "k",
                           "changed": ["+ launch num_warps=8", "- launch num_warps=4",
                                       "+ autotune config {'BLOCK':256},num_warps=8 (x2)"]})
    assert old.edit is None
    assert edit_of(old) == ["+ launch num_warps", "- launch num_warps", "+ autotune config"]
    assert edit_of(_draft("r", "a", "k", [])) == [], "mined with edits: an empty edit stays empty"
    assert group([old, Draft.from_dict({**old.to_dict(), "id": "2", "repo": "s", "commit": "b" * 40})],
                 []).clusters[0].key == "+ autotune config"


def test_score_weighs_spread_then_claims_and_numbers():
    from skel.miner.candidates import score

    assert score(3, 2) > score(2, 7), "one more repository outweighs three times the commits"
    assert score(2, 2) < score(2, 2, claimed=2) < score(2, 2, claimed=2, stated=2)
