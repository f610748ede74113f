"""Faults of the store, the fast seeded part (the long runs: python -m benchmarks.reliability.reliability faults).

A mine killed (SIGKILL, SIGINT) at exact store writes resumes to a store equal to a clean
mine; a second writer is refused with the first one named; a full disk is reported and the
next mine completes; damaged, foreign-schema and foreign-model stores are refused in one
line with nothing changed. Kill points use the test-only hook in skel/store/faults.py.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import storecheck as sc

from skel.errors import StoreError

TREE_FILES = 8


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """(tree, home with a warm facts cache, snapshot of a clean mine of the tree)."""
    base = tmp_path_factory.mktemp("faults")
    tree = sc.make_tree(base / "tree", TREE_FILES)
    home = base / "home"
    r = sc.run_mine(tree, str(base / "clean"), home)
    assert r.returncode == 0, r.stderr
    snap = sc.snapshot(str(base / "clean"), home)
    assert snap["kernels"] and snap["sources"][0][1] == "complete"
    return tree, home, snap


# A mine of one batch makes 9 writes: schema, source "mining", embedder, delete the batch's
# old kernels, add kernels, mark files (the commit marker), statistics, examples, source
# "complete". "5:5" fires 5 ms into the kernel write, while chroma is writing it.
@pytest.mark.parametrize("point", ["5:5", "6", "8"])
def test_sigkill_at_a_store_write_resumes_to_a_clean_store(clean, tmp_path, point):
    tree, home, snap = clean
    store = str(tmp_path / "store")
    killed = sc.run_mine(tree, store, home, SKEL_FAULT_KILL_AT=point)
    assert killed.returncode == -signal.SIGKILL
    again = sc.run_mine(tree, store, home)
    assert again.returncode == 0, again.stderr
    assert sc.problems(sc.snapshot(store, home), snap, sc.tree_files(tree)) == []


def test_sigint_inside_a_mine_exits_130_and_resumes(clean, tmp_path):
    tree, home, snap = clean
    store = str(tmp_path / "store")
    r = sc.run_mine(tree, store, home, SKEL_FAULT_KILL_AT="5", SKEL_FAULT_SIGNAL="INT")
    assert r.returncode == 130
    assert r.stderr.strip().splitlines() == [
        "skel: interrupted; the store is consistent — run the same command again to finish."]
    assert sc.run_mine(tree, store, home).returncode == 0
    assert sc.problems(sc.snapshot(store, home), snap, sc.tree_files(tree)) == []


def test_a_resume_keeps_the_kernels_the_interrupted_mine_wrote(clean, tmp_path, monkeypatch):
    """Before, the resume deleted them and added them again under the same ids; chroma 1.5.9
    can then leave one unreachable by query() (chroma-core/chroma#7758): the faults
    benchmark saw 'index disagrees: indexed 171 of 172' after kills 20 ms into that write."""
    from skel.store.knowledge import KnowledgeBase

    tree, home, snap = clean
    store = tmp_path / "store"
    killed = sc.run_mine(tree, str(store), home, SKEL_FAULT_KILL_AT="6")  # kernels written, files not marked
    assert killed.returncode == -signal.SIGKILL
    monkeypatch.setenv("SKEL_HOME", str(home))
    added, deleted = [], []
    real_add, real_delete = KnowledgeBase.add_many, KnowledgeBase.delete_kernels
    monkeypatch.setattr(KnowledgeBase, "add_many", lambda kb, rs: (added.extend(r.id for r in rs), real_add(kb, rs)))
    monkeypatch.setattr(KnowledgeBase, "delete_kernels", lambda kb, w: (deleted.append(w), real_delete(kb, w)))
    _mine_in_process(tree, store)
    assert added == [] and deleted == []
    assert sc.problems(sc.snapshot(str(store), home), snap, sc.tree_files(tree)) == []


# --- one writer at a time ------------------------------------------------------------------

def test_a_second_writer_is_refused_naming_the_first(clean, tmp_path):
    from skel.store.lock import WriterLock

    tree, home, snap = clean
    store = tmp_path / "store"
    store.mkdir()
    with WriterLock(store):
        r = sc.run_mine(tree, str(store), home)
    assert r.returncode == 2
    (line,) = r.stderr.strip().splitlines()
    assert f"pid {os.getpid()}" in line and "being written by another skel process" in line
    assert sc.run_mine(tree, str(store), home).returncode == 0  # released: the next one runs


def test_a_dead_writers_lock_file_does_not_block(tmp_path):
    from skel.store.lock import LOCK_NAME, WriterLock

    # what a SIGKILLed mine leaves: the file with its pid, but no lock held
    (tmp_path / LOCK_NAME).write_text(json.dumps({"pid": 999999, "host": "x", "since": 0, "command": "skel mine"}))
    with WriterLock(tmp_path):
        assert json.loads((tmp_path / LOCK_NAME).read_text())["pid"] == os.getpid()


def test_a_waiting_writer_gets_the_lock_when_it_is_released(tmp_path):
    from skel.store.lock import WriterLock

    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom skel.store.lock import WriterLock\n"
                               f"with WriterLock({str(tmp_path)!r}):\n print('held', flush=True); time.sleep(1.5)"],
                              stdout=subprocess.PIPE, text=True, env=sc.env(tmp_path), cwd=sc.ROOT)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    with pytest.raises(StoreError, match="being written by"):
        with WriterLock(tmp_path):
            pass
    with WriterLock(tmp_path, wait=30):
        pass
    holder.wait(timeout=30)


# --- a full disk ---------------------------------------------------------------------------

def _mine_in_process(tree: Path, store: Path):
    from skel.embed import HashEmbedder
    from skel.miner.mine import mine
    from skel.miner.sources import DirectorySource
    from skel.store.knowledge import KnowledgeBase

    kb = KnowledgeBase.open(str(store))
    return kb, mine(DirectorySource(str(tree)), kb, jobs=1, embedder=HashEmbedder())


def test_a_full_disk_mid_mine_is_one_clear_error_and_the_next_mine_completes(clean, tmp_path, monkeypatch):
    """ENOSPC simulated at the kernel write (the tmpfs variant is below, when mounting is allowed)."""
    from skel.store.knowledge import KnowledgeBase

    tree, _home, snap = clean
    real = KnowledgeBase._write
    writes = {"n": 0}

    def full_at_fifth(self, op, **kwargs):
        writes["n"] += 1
        if writes["n"] == 5:
            def no_space(**_kw):
                raise OSError(errno.ENOSPC, "No space left on device")
            return real(self, no_space, **kwargs)
        return real(self, op, **kwargs)

    monkeypatch.setattr(KnowledgeBase, "_write", full_at_fifth)
    with pytest.raises(StoreError, match="the disk holding it is full.*run the same command again"):
        _mine_in_process(tree, tmp_path / "store")
    monkeypatch.setattr(KnowledgeBase, "_write", real)
    kb, report = _mine_in_process(tree, tmp_path / "store")
    assert report.kernels == len(snap["kernels"])
    assert [s.state for s in kb.sources()] == ["complete"]
    assert kb.stats().total_kernels == kb.count() == len(snap["kernels"])


def test_a_full_tmpfs_then_room(clean, tmp_path):
    tree, home, snap = clean
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(mnt)],
                      capture_output=True).returncode != 0:
        pytest.skip("mounting a tmpfs is not permitted here (the simulated ENOSPC test covers the code)")
    try:
        store = str(mnt / "store")
        full = sc.run_mine(tree, store, home)
        assert full.returncode == 2
        (line,) = full.stderr.strip().splitlines()
        assert "the disk holding it is full" in line
        subprocess.run(["mount", "-o", "remount,size=64m", str(mnt)], check=True)
        assert sc.run_mine(tree, store, home).returncode == 0
        assert sc.problems(sc.snapshot(store, home), snap, sc.tree_files(tree)) == []
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


# --- damaged and foreign stores ------------------------------------------------------------

def _digest(folder: Path) -> str:
    h = hashlib.sha1()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()


def _garble(db: Path) -> None:
    import random

    r = random.Random(11)
    data = bytearray(db.read_bytes())
    for _ in range(50):
        at = r.randrange(len(data) - 64)
        data[at:at + 64] = r.randbytes(64)
    db.write_bytes(bytes(data))


DAMAGE = {
    "truncated": lambda db: db.write_bytes(db.read_bytes()[: db.stat().st_size // 3]),
    "garbled": _garble,
    "emptied": lambda db: db.write_bytes(b""),
    "deleted": lambda db: db.unlink(),
    "not sqlite": lambda db: db.write_bytes(b"\0" * 8192),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_store_is_refused_and_left_alone(clean, tmp_path, damage):
    from skel.store.knowledge import KnowledgeBase

    tree, home, _snap = clean
    store = tmp_path / "store"
    shutil.copytree(Path(tree).parent / "clean", store)
    DAMAGE[damage](store / "chroma.sqlite3")
    before = _digest(store)
    for create in (True, False):
        with pytest.raises(StoreError, match=r"is damaged: .*nothing was changed"):
            KnowledgeBase.open(str(store), create=create)
    assert _digest(store) == before


def test_a_garbled_schema_is_damage_not_a_decoding_error(tmp_path):
    """Before, SQLite's error quoted the garbled schema bytes, Python failed to decode it, and
    the store was reported as 'cannot open store ...: UnicodeDecodeError' (found by
    python -m benchmarks.reliability.reliability faults); through the stamps' short cut it escaped unhandled."""
    import sqlite3

    from skel.store.knowledge import check_intact

    db = tmp_path / "chroma.sqlite3"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE kernels(x TEXT)")
    con.commit()
    con.close()
    data = db.read_bytes()
    assert data.count(b"CREATE TABLE kernels") == 1
    db.write_bytes(data.replace(b"CREATE TABLE kernels", b"CREATE \x81ABLE kernels"))  # same length
    with pytest.raises(StoreError, match=r"is damaged: chroma.sqlite3: its schema is garbled"):
        check_intact(str(tmp_path))


def test_cli_reports_a_damaged_store_in_one_line(clean, tmp_path):
    """Before the check, a garbled database made chroma abort the process (exit 134, no message)."""
    tree, home, _snap = clean
    store = tmp_path / "store"
    shutil.copytree(Path(tree).parent / "clean", store)
    _garble(store / "chroma.sqlite3")
    # suggest, not mine: an unchanged tree's re-mine is answered from its stamps without
    # opening the store at all (skel/miner/stamps.py)
    r = subprocess.run([sys.executable, "-m", "skel.cli", "suggest", str(sc.ROOT / "tests/data/naive_softmax.py"),
                        "--store", str(store)], capture_output=True, text=True, env=sc.env(home), cwd=sc.ROOT,
                       timeout=120)
    assert r.returncode == 2
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith(f"skel: error: the store at {store} is damaged")


def test_an_unchanged_remine_of_a_damaged_store_is_refused_not_reported_unchanged(clean, tmp_path):
    """Before, the re-mine was answered from the file stamps alone: exit 0, "unchanged", on a
    store whose database was garbled or gone."""
    from skel.store.knowledge import mined_manifest

    tree, home, _snap = clean
    for name, damage in sorted(DAMAGE.items()):
        store = tmp_path / name.replace(" ", "")
        shutil.copytree(Path(tree).parent / "clean", store)
        assert mined_manifest(str(store), "tree").exists()  # the short cut is there to take
        damage(store / "chroma.sqlite3")
        before = _digest(store)
        r = sc.run_mine(tree, str(store), home)
        assert r.returncode == 2, (name, r.stdout, r.stderr)
        (line,) = r.stderr.strip().splitlines()
        assert line.startswith(f"skel: error: the store at {store} is damaged"), name
        assert _digest(store) == before, name


def test_another_schema_version_is_refused(tmp_path):
    from skel.store.knowledge import SCHEMA_VERSION, KnowledgeBase

    kb = KnowledgeBase.open(str(tmp_path / "store"))
    kb._col("meta").upsert(ids=["schema"], embeddings=[[1.0]], metadatas=[{"version": SCHEMA_VERSION + 1}])
    with pytest.raises(StoreError, match=rf"schema v{SCHEMA_VERSION + 1}; this skel reads v{SCHEMA_VERSION}"):
        KnowledgeBase.open(str(tmp_path / "store"))


def test_a_mine_with_another_model_changes_nothing(clean, tmp_path):
    """Before, a mine whose files were all unchanged never compared the model, and one with
    changed files failed only after marking the source `mining`."""
    from skel.miner.mine import mine
    from skel.miner.sources import DirectorySource

    tree = shutil.copytree(clean[0], tmp_path / "tree")
    kb, _ = _mine_in_process(tree, tmp_path / "store")
    before = [(s.state, s.started) for s in kb.sources()]
    edited = sorted(tree.rglob("*.py"))[0]
    edited.write_text(edited.read_text() + "\n# edited\n")  # work to do: an unchanged tree writes nothing anyway

    class OtherModel:
        name = "another-model"

        def embed(self, texts):
            raise AssertionError("never reached")

    with pytest.raises(StoreError, match="holds 'hash-test' embeddings; this run uses 'another-model'"):
        mine(DirectorySource(str(tree)), kb, jobs=1, embedder=OtherModel())  # type: ignore[arg-type]
    assert [(s.state, s.started) for s in kb.sources()] == before


# --- a Chroma server -----------------------------------------------------------------------

def _serve(path: Path, port: int) -> subprocess.Popen:
    import socket
    import time

    chroma = Path(sys.executable).parent / "chroma"
    if not chroma.exists():
        pytest.skip("chromadb's `chroma` command is not installed")
    proc = subprocess.Popen([str(chroma), "run", "--path", str(path), "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("localhost", port), timeout=0.5):
                return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    pytest.fail("the chroma server did not start")


def test_a_lost_server_is_retried_then_reported_in_one_line(tmp_path, monkeypatch):
    import socket
    import time

    from skel.store import knowledge
    from skel.store.knowledge import KnowledgeBase

    monkeypatch.setattr(knowledge, "SERVER_RETRY_DELAYS", (0.2, 0.4))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = _serve(tmp_path / "srv", port)
    restarted: list[subprocess.Popen] = []
    try:
        kb = KnowledgeBase.open(f"http://localhost:{port}")
        kb.mark_files("src", {"a.py": "h1"})
        srv.kill()
        srv.wait()
        t = time.monotonic()
        with pytest.raises(StoreError, match=r"stopped answering .*3 tries over 0.6s.*stays consistent"):
            kb.file_hashes("src")
        assert time.monotonic() - t < 5  # bounded
        with pytest.raises(StoreError, match="stopped answering"):
            kb.mark_files("src", {"b.py": "h2"})  # writes too, through the same funnel
        # a new client (each `skel suggest`): was `ValueError: Could not connect ...` at once
        with pytest.raises(StoreError, match=rf"cannot reach the Chroma server at http://localhost:{port}: "
                                             r"ConnectError: .*\(3 tries over 0.6s\); is it running\?"):
            KnowledgeBase.open(f"http://localhost:{port}")
        # back within the retries: the call succeeds, nothing lost
        import threading

        restart = threading.Timer(0.3, lambda: restarted.append(_serve(tmp_path / "srv", port)))
        restart.start()
        monkeypatch.setattr(knowledge, "SERVER_RETRY_DELAYS", (0.5, 1.0, 2.0, 4.0, 8.0))
        assert kb.file_hashes("src") == {"a.py": "h1"}
        restart.join()
    finally:
        for p in (srv, *restarted):
            p.kill()
