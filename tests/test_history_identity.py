"""History mining keyed by the repository, not its folder's name, and `skel history list
--technique` telling a mistyped id from one with no events (#37).

Before, the history state was keyed by the folder's name: mining a second bare mirror
named `repo` after a first one failed with "the last commit mined ... is not in the history
of HEAD (rewritten history?)", and every event read `repo@42ff02ac`. And `skel history
list --technique TYPO` answered "no history events (run `skel mine --history REPO`)", exit
0, on a store holding events.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_history import EXP, EXP2, OTHER, V1, commit, git

from skel.cli import cli


def _repo(path: Path, kernels: str, tag: str) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    commit(path, f"{tag}: first kernels", "2024-01-01T10:00:00+00:00", {"k.py": kernels, "other.py": OTHER})
    commit(path, f"{tag}: exp2 with log2(e) folded (1.3x faster)", "2024-01-02T10:00:00+00:00",
           {"k.py": kernels.replace(EXP, EXP2)})
    return path


def _mirror(src: Path, dest: Path, remote: str | None = None) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(src), str(dest)], check=True)
    subprocess.run(["git", "-C", str(dest), "remote", "remove", "origin"], check=True)
    if remote:
        subprocess.run(["git", "-C", str(dest), "remote", "add", "origin", remote], check=True)
    return dest


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> tuple[Path, Path]:
    """Two unrelated repositories (no common commit)."""
    base = tmp_path_factory.mktemp("identity")
    first = _repo(base / "one", V1, "one")
    second = _repo(base / "two", V1.replace("softmax_kernel", "row_softmax_kernel"), "two")
    return first, second


def _mine(path: Path, store: Path, *extra: str):
    return CliRunner().invoke(cli, ["mine", "--history", str(path), "--store", str(store), "-j", "1", "--json",
                                    *extra])


def test_two_mirrors_named_repo_are_two_histories(sources, tmp_path):
    store = tmp_path / "store"
    fla = _mirror(sources[0], tmp_path / "fla" / "repo")
    liger = _mirror(sources[1], tmp_path / "liger" / "repo")
    a = _mine(fla, store)
    assert a.exit_code == 0, a.output
    b = _mine(liger, store)
    assert b.exit_code == 0, b.output  # before: "the last commit mined ... is not in the history of HEAD"
    ra, rb = json.loads(a.output), json.loads(b.output)
    assert (ra["repo"], rb["repo"]) == ("fla", "liger")  # a folder named `repo`: the one above names it
    assert ra["commits_read"] == rb["commits_read"] == 2 and rb["start"] is None
    assert ra["identity"] != rb["identity"]
    # each continues where it stopped
    again = _mine(fla, store)
    assert again.exit_code == 0 and json.loads(again.output)["up_to_date"]
    r = CliRunner().invoke(cli, ["history", "list", "--store", str(store), "--json"])
    events = json.loads(r.output)
    assert sorted({e["repo"] for e in events}) == ["fla", "liger"]
    r = CliRunner().invoke(cli, ["history", "list", "--store", str(store)])
    assert "fla@" in r.output and "liger@" in r.output and "repo@" not in r.output


def test_a_remote_gives_owner_and_name(sources, tmp_path):
    store = tmp_path / "store"
    mirror = _mirror(sources[0], tmp_path / "m" / "repo", remote="https://github.com/fla-org/flash-linear-attention.git")
    r = _mine(mirror, store)
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    assert report["repo"] == "fla-org/flash-linear-attention"
    assert report["identity"] == "github.com/fla-org/flash-linear-attention"
    # another clone of the same remote elsewhere is the same repository: nothing new to read
    other = _mirror(sources[0], tmp_path / "elsewhere" / "fla.git",
                    remote="git@github.com:fla-org/flash-linear-attention")
    r = _mine(other, store)
    assert r.exit_code == 0 and json.loads(r.output)["up_to_date"], r.output


def test_same_folder_name_elsewhere_gets_a_label_of_its_own(sources, tmp_path):
    store = tmp_path / "store"
    a = json.loads(_mine(_mirror(sources[0], tmp_path / "x" / "kernels.git"), store).output)
    b = json.loads(_mine(_mirror(sources[1], tmp_path / "y" / "kernels.git"), store).output)
    assert (a["repo"], b["repo"]) == ("kernels", "y/kernels")


def test_a_source_name_held_by_another_repository_is_refused(sources, tmp_path):
    store = tmp_path / "store"
    assert _mine(sources[0], store, "--source", "demo").exit_code == 0
    r = _mine(sources[1], store, "--source", "demo")
    assert r.exit_code == 2
    (line,) = r.output.strip().splitlines()
    assert line.startswith("skel: error: the history store already has a repository named 'demo'")
    assert _mine(sources[0], store, "--source", "demo").exit_code == 0  # its own name: a re-run


def test_a_state_written_before_identities_is_taken_over(sources, tmp_path):
    """A store mined before identities were recorded: its state (keyed by name, no
    identity) is this repository's when it was read from the same folder."""
    store = tmp_path / "store"
    assert _mine(sources[0], store).exit_code == 0
    path = store / "history" / "state.json"
    states = json.loads(path.read_text())
    for v in states.values():
        del v["identity"]
    path.write_text(json.dumps(states))
    r = _mine(sources[0], store)
    assert r.exit_code == 0 and json.loads(r.output)["up_to_date"], r.output
    r = _mine(sources[1], store)  # another folder: another repository
    assert r.exit_code == 0 and json.loads(r.output)["commits_read"] == 2, r.output


# --- skel history list --technique --------------------------------------------------------

@pytest.fixture(scope="module")
def mined_store(sources, tmp_path_factory) -> Path:
    store = tmp_path_factory.mktemp("listed") / "store"
    assert _mine(sources[0], store).exit_code == 0
    return store


def test_an_unknown_technique_is_an_error_naming_the_close_one(mined_store):
    r = CliRunner().invoke(cli, ["history", "list", "--store", str(mined_store), "--technique", "exp2-log2-folding"])
    assert r.exit_code == 2
    (line,) = r.output.strip().splitlines()
    assert line.startswith("skel: error: ") and "did you mean exp2-log2e-folding" in line
    r = CliRunner().invoke(cli, ["history", "list", "--store", str(mined_store), "--technique", "zzzz", "--json"])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1


def test_a_known_technique_without_events_says_so(mined_store):
    from skel.skeletons.registry import all_skeletons

    events = json.loads(CliRunner().invoke(cli, ["history", "list", "--store", str(mined_store), "--json"]).output)
    assert events, "the store holds events"
    quiet = next(s.id for s in all_skeletons() if s.id not in {e["technique"] for e in events})
    r = CliRunner().invoke(cli, ["history", "list", "--store", str(mined_store), "--technique", quiet])
    assert r.exit_code == 0
    assert r.output.strip() == f"no events for technique {quiet}"
    r = CliRunner().invoke(cli, ["history", "list", "--store", str(mined_store), "--technique", "exp2-log2e-folding"])
    assert r.exit_code == 0 and "exp2-log2e-folding" in r.output and "one@" in r.output
