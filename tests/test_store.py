"""The knowledge base: schema versions, corrupt stores, and a real Chroma server."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import write
from skel.store.evidence import ShapeResult, Verification
from skel.store.knowledge import KnowledgeBase, StoreError


def test_schema_version_is_recorded_and_checked(tmp_path):
    kb = KnowledgeBase.open(str(tmp_path / "s"))
    kb._col("meta").upsert(ids=["schema"], embeddings=[[1.0]], metadatas=[{"version": 999}])
    with pytest.raises(StoreError, match="schema v999"):
        KnowledgeBase.open(str(tmp_path / "s"))


def test_missing_store_is_not_created_for_reading(tmp_path):
    with pytest.raises(StoreError, match="no knowledge base"):
        KnowledgeBase.open(str(tmp_path / "absent"), create=False)
    assert not (tmp_path / "absent").exists()


def test_store_path_that_is_a_file(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(StoreError, match="is a file"):
        KnowledgeBase.open(str(f))


def test_corrupt_store(tmp_path):
    d = tmp_path / "bad"
    d.mkdir()
    (d / "chroma.sqlite3").write_bytes(b"garbage" * 1000)
    with pytest.raises(StoreError):
        KnowledgeBase.open(str(d))


def _run(skeleton="online-softmax", **kw):
    base = dict(skeleton=skeleton, kernel="examples/x.py::k", verdict="faster", subject="example",
                date="2026-12-01", device="NVIDIA H200", cc=90, backend="cuda", triton="3.6.0",
                speedup=1.9, spread=0.05, noise=0.02, shapes=["M=1,N=2"], dtypes=["float32"],
                max_error={"out0": 1e-6}, per_shape=[ShapeResult("M=1,N=2", "float32", 1.9, 0.05)])
    base.update(kw)
    return Verification(**base)


def test_verification_round_trip(kb):
    rec = _run()
    kb.add_verification(rec)
    (got,) = kb.verifications("online-softmax")
    assert got == rec


def test_a_rerun_replaces_the_earlier_record(kb):
    kb.add_verification(_run(speedup=1.2))
    kb.add_verification(_run(speedup=1.3))
    assert [r.speedup for r in kb.verifications()] == [1.3]


def test_verification_reads_records_with_unknown_keys(kb):
    """What is on disk is flat metadata: a writer's extra keys are ignored."""
    md = _run().to_metadata() | {"note": "from a newer writer"}
    kb._col("verifications").upsert(ids=["new"], embeddings=[[1.0]], metadatas=[md])
    (got,) = kb.verifications("online-softmax")
    assert got.speedup == 1.9 and got.per_shape[0].shape == "M=1,N=2"


def test_a_bad_verdict_is_refused():
    with pytest.raises(ValueError, match="unknown verdict"):
        _run(verdict="great")


def test_stats_are_typed_and_keep_their_on_disk_shape(tmp_path, kb, hash_embedder):
    import json

    from skel.miner.mine import mine
    from skel.miner.sources import DirectorySource

    from test_cli import FP32_DOT

    repo = tmp_path / "repo"
    write(repo / "k.py", FP32_DOT.replace("tl.dot(a, b)", 'tl.dot(a, b, input_precision="tf32x3")'))
    write(repo / "t.py", FP32_DOT.replace("solve_kernel", "plain_kernel"))
    mine(DirectorySource(repo, name="demo"), kb, embedder=hash_embedder, jobs=1)
    stats = kb.stats()
    assert stats.total_kernels == 2
    tf32 = stats.of("dot-input-precision-tf32x3")
    assert (tf32.kernels, tf32.sources, tf32.applicable) == (1, ["demo"], 1)
    assert stats.of("no-such-skeleton").applicable is None and stats.of("no-such-skeleton").kernels == 0
    raw = json.loads(kb._col("meta").get(ids=["stats"], include=["metadatas"])["metadatas"][0]["stats"])
    assert raw["_total"] == {"kernels": 2}
    assert raw["dot-input-precision-tf32x3"] == {"kernels": 1, "sources": ["demo"], "applicable": 1}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _chroma_binary() -> str | None:
    here = Path(sys.executable).parent / "chroma"
    return str(here) if here.exists() else shutil.which("chroma")


@pytest.fixture
def chroma_server(tmp_path):
    binary = _chroma_binary()
    if binary is None:
        pytest.skip("the `chroma` server command (installed with chromadb) is not on PATH")
    port = _free_port()
    proc = subprocess.Popen([binary, "run", "--path", str(tmp_path / "server-data"), "--host", "127.0.0.1",
                             "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            try:
                KnowledgeBase.open(url)
                break
            except StoreError as exc:
                if time.time() > deadline or proc.poll() is not None:
                    raise RuntimeError("chroma server did not start within 60 s") from exc
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_shared_server_store_behaves_like_local(tmp_path, chroma_server, hash_embedder):
    """A team shares one knowledge base through a Chroma server on loopback."""
    from skel.miner.mine import mine
    from skel.miner.sources import DirectorySource
    from skel.retriever.suggest import suggest

    from test_cli import FP32_DOT

    repo = tmp_path / "repo"
    write(repo / "k.py", FP32_DOT.replace("tl.dot(a, b)", 'tl.dot(a, b, input_precision="tf32x3")'))
    remote = KnowledgeBase.open(chroma_server)
    local = KnowledgeBase.open(str(tmp_path / "local"))
    for kb in (remote, local):
        report = mine(DirectorySource(repo, "demo"), kb, embedder=hash_embedder, jobs=1)
        assert report.kernels == 1
    again = mine(DirectorySource(repo, "demo"), remote, embedder=hash_embedder, jobs=1)
    assert again.parsed == 0 and again.kernels_written == 0

    query = write(tmp_path / "q.py", FP32_DOT)
    a = suggest(query, remote, embedder=hash_embedder)[0].to_dict()
    b = suggest(query, local, embedder=hash_embedder)[0].to_dict()
    assert a["suggestions"] == b["suggestions"]
    assert a["suggestions"][0]["evidence"][0]["file"] == "k.py"


def test_unreachable_server_is_a_clear_error():
    with pytest.raises(StoreError, match="cannot reach the Chroma server at http"):
        KnowledgeBase.open(f"http://127.0.0.1:{_free_port()}")


def test_evidence_by_skeleton_groups_every_record(kb):
    kb.add_verification(_run(kernel="a"))
    kb.add_verification(_run(kernel="b"))
    kb.add_verification(_run("split-k-reduction", verdict="slower", speedup=0.9))
    grouped = kb.evidence_by_skeleton()
    assert len(grouped["online-softmax"]) >= 2 and grouped["split-k-reduction"][-1].verdict == "slower"
