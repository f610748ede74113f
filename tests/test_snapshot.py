"""The read snapshot (skel/store/snapshot.py): a new `skel suggest` process answers from it
without importing chromadb, with the same suggestions as the store itself, and only while
it is the store: a write, a crashed write, a replaced or damaged database, a half-written
snapshot each send the reader back to chroma."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

from skel import api
from skel.store import snapshot
from skel.store.evidence import Verification
from skel.skeletons.registry import fixture_file
from skel.store.knowledge import KnowledgeBase

SOFTMAX = fixture_file("online_softmax.py")
KERNELS = ["online_softmax.py", "split_k_reduction.py", "grouped_l2_swizzle.py", "persistent_kernel.py",
           "exp2_log2e_folding.py", "autotune_configs.py"]


@pytest.fixture
def store(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in KERNELS:
        shutil.copy(fixture_file(name), tree / name)
    location = str(tmp_path / "store")
    api.mine(str(tree), source="fixtures", version="1", jobs=1, store=location)
    return location


def _ranked(results) -> list:
    return [(r.kernel, [(s.id, s.kind, [(e.file, e.line) for e in s.evidence]) for s in r.suggestions])
            for r in results]


def _scores(results) -> list[float]:
    return [s.score for r in results for s in r.suggestions]


def _from_store(path: Path, location: str):
    """The same ranking, read from chroma (the snapshot path bypassed)."""
    from skel.retriever.suggest import suggest as rank

    return rank(path, KnowledgeBase.open(location, create=False))


def test_mine_leaves_a_snapshot_and_suggest_reads_it(store):
    snap = snapshot.open_fresh(store)
    assert isinstance(snap, snapshot.SnapshotKB)
    assert snap.count() == KnowledgeBase.open(store, create=False).count() > 10
    assert isinstance(api._ranking_store(store), snapshot.SnapshotKB)


@pytest.mark.parametrize("name", KERNELS)
def test_same_suggestions_as_the_store(store, name):
    path = fixture_file(name)
    from_snapshot = api.suggest(path, store=store)
    assert isinstance(api._ranking_store(store), snapshot.SnapshotKB)
    from_store = _from_store(path, store)
    assert _ranked(from_snapshot) == _ranked(from_store)
    # distances are float32 sums in another order (numpy, the index): equal to rounding
    assert _scores(from_snapshot) == pytest.approx(_scores(from_store), abs=1e-4)
    assert any(r.suggestions for r in from_snapshot)


def test_a_write_makes_it_stale_and_the_next_suggest_renews_it(store):
    before = snapshot.open_fresh(store)
    kb = KnowledgeBase.open(store, create=False)
    kb.add_verification(Verification(skeleton="online-softmax", kernel="x.py::k", verdict="correct",
                                     date="2026-01-01T00:00:00+00:00", device="cpu", triton="3.7.1"))
    assert snapshot.open_fresh(store) is None  # the store changed: not the store any more
    api.suggest(SOFTMAX, store=store)  # read from chroma, snapshot rewritten
    after = snapshot.open_fresh(store)
    assert after is not None and after.token != before.token
    runs = after.evidence_by_skeleton()["online-softmax"]
    assert any(r.kernel == "x.py::k" for r in runs)


def test_a_crashed_write_leaves_it_unused(store):
    snapshot.mark_dirty(store)  # what a write killed between its two marks leaves
    assert snapshot.open_fresh(store) is None
    kb = KnowledgeBase.open(store, create=False)
    assert snapshot.write(kb) is None  # nor is a new one taken while dirty
    assert api.suggest(SOFTMAX, store=store)  # answered from chroma


def test_a_replaced_database_or_a_broken_snapshot_is_not_used(store, tmp_path):
    db = Path(store) / "chroma.sqlite3"
    copy = tmp_path / "copy.sqlite3"
    shutil.copy(db, copy)
    copy.replace(db)  # same content, another file: a restored backup
    assert snapshot.open_fresh(store) is None
    kb = KnowledgeBase.open(store, create=False)
    assert snapshot.write(kb) is not None
    token = snapshot.generation(store)
    json_file = Path(store) / snapshot.FOLDER / f"snapshot-{token}.json"
    json_file.write_text(json_file.read_text()[:1000])  # half-written
    snapshot._LOADED.clear()
    assert snapshot.open_fresh(store) is None
    # valid JSON naming this database, but not a whole snapshot (no records, no statistics)
    json_file.write_text(json.dumps({"format": snapshot.FORMAT, "token": token,
                                     "db": list(snapshot._db_identity(store))}))
    assert snapshot.open_fresh(store) is None
    json_file.unlink()
    assert snapshot.open_fresh(store) is None
    assert api.suggest(SOFTMAX, store=store)


def test_a_damaged_database_is_refused_even_with_a_snapshot(store):
    assert snapshot.open_fresh(store) is not None
    db = Path(store) / "chroma.sqlite3"
    data = bytearray(db.read_bytes())
    for at in range(4096, len(data) - 4096, len(data) // 20):  # garbled in place: same file, same size
        data[at:at + 64] = bytes(64)
    db.write_bytes(bytes(data))
    snapshot._LOADED.clear()
    r = subprocess.run([sys.executable, "-m", "skel.cli", "suggest", str(SOFTMAX),
                        "--store", store], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and "is damaged" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_cold_suggest_does_not_import_chromadb(store):
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "skel.cli", "suggest",
                        str(SOFTMAX), "--store", store, "--format", "json"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    imported = {line.split("|")[-1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")}
    assert "chromadb" not in imported and "skel.store.snapshot" in imported
    assert '"suggestions"' in r.stdout
