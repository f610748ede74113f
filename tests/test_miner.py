"""Mining: bad files never abort, re-mines are cheap and idempotent, interruptions resume."""

from __future__ import annotations

import os
import subprocess

import pytest

from conftest import write
from skel.miner.mine import mine
from skel.miner.sources import DirectorySource

GOOD = '''
import triton
import triton.language as tl


@triton.jit
def solve_kernel(a_ptr, b_ptr, c_ptr, BT: tl.constexpr):
    o = tl.arange(0, BT)
    a = tl.load(a_ptr + o[:, None] * BT + o[None, :]).to(tl.float32)
    b = tl.load(b_ptr + o[:, None] * BT + o[None, :]).to(tl.float32)
    tl.store(c_ptr + o[:, None] * BT + o[None, :], tl.dot(a, b, input_precision="tf32x3"))


def solve(a, b, c):
    solve_kernel[(1,)](a, b, c, BT=16, num_warps=4)
'''

SCALE = '''
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < N) * 2, mask=offs < N)
'''


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    write(root / "pkg" / "ops" / "solve.py", GOOD)
    write(root / "pkg" / "ops" / "scale.py", SCALE)
    write(root / "pkg" / "__init__.py", "")
    write(root / "tests" / "test_solve.py", "from pkg.ops.solve import solve\n\ndef test_it():\n    pass\n")
    return root


def _bad_files(root):
    write(root / "pkg" / "broken.py", "import triton\n@triton.jit\ndef k(:\n    pass\n")
    (root / "pkg" / "latin1.py").write_bytes(b"# caf\xe9\nimport triton\n")
    (root / "pkg" / "blob.py").write_bytes(b"triton jit\0\0\0")
    (root / "pkg" / "huge.py").write_text("# triton jit\n" + "x = 1\n" * 400_000)
    os.symlink(root / "pkg", root / "pkg" / "loop")  # a directory cycle
    os.symlink("self.py", root / "pkg" / "self.py")  # a file symlink pointing at itself


def test_mine_finds_kernels_with_provenance_tests_and_techniques(repo, kb, hash_embedder):
    report = mine(DirectorySource(repo, "demo", "1.0"), kb, embedder=hash_embedder, jobs=1)
    assert report.kernels == 2 and report.kernel_files == 2
    (rec,) = kb.kernels(where={"function": "solve_kernel"})
    assert (rec.source, rec.version, rec.file) == ("demo", "1.0", "pkg/ops/solve.py")
    assert rec.line_start == 5 and rec.line_end == 10
    assert "dot-input-precision-tf32x3" in rec.techniques
    assert rec.tests == ["tests/test_solve.py"]
    (other,) = kb.kernels(where={"function": "scale_kernel"})
    assert "dot-input-precision-tf32x3" not in other.techniques and other.tests == []
    assert kb.stats().of("dot-input-precision-tf32x3").kernels == 1


def test_bad_files_are_reported_and_skipped(repo, kb, hash_embedder):
    _bad_files(repo)
    report = mine(DirectorySource(repo, "demo"), kb, embedder=hash_embedder, jobs=1)
    reasons = {s.rel: s.reason for s in report.skipped}
    assert reasons["pkg/broken.py"].startswith("syntax error")
    assert reasons["pkg/latin1.py"].startswith("not UTF-8")
    assert reasons["pkg/blob.py"].startswith("binary")
    assert reasons["pkg/huge.py"].startswith("too large")
    assert reasons["pkg/self.py"] == "symlink loop"
    assert reasons["pkg/loop"].startswith("symlink loop")
    assert report.kernels == 2, "good files are still mined"


def test_remine_is_idempotent_and_cheap(repo, kb, hash_embedder):
    first = mine(DirectorySource(repo, "demo"), kb, embedder=hash_embedder, jobs=1)
    snap = sorted((r.id, r.file, r.line_start, tuple(r.techniques)) for r in kb.kernels())
    again = mine(DirectorySource(repo, "demo"), kb, embedder=hash_embedder, jobs=1)
    assert again.parsed == 0 and again.kernels_written == 0 and again.unchanged == first.files
    assert sorted((r.id, r.file, r.line_start, tuple(r.techniques)) for r in kb.kernels()) == snap


def test_changed_and_removed_files(repo, kb, hash_embedder):
    mine(DirectorySource(repo, "demo"), kb, embedder=hash_embedder, jobs=1)
    (repo / "pkg" / "ops" / "scale.py").unlink()
    path = repo / "pkg" / "ops" / "solve.py"
    path.write_text(path.read_text().replace('input_precision="tf32x3"', 'input_precision="ieee"'))
    report = mine(DirectorySource(repo, "demo"), kb, embedder=hash_embedder, jobs=1)
    assert report.removed == 1 and report.kernels == 1
    (rec,) = kb.kernels()
    assert rec.function == "solve_kernel" and "dot-input-precision-tf32x3" not in rec.techniques


def test_interrupted_mine_leaves_store_consistent_and_resumes(repo, kb, hash_embedder, monkeypatch):
    import skel.miner.mine as m

    for i in range(6):
        write(repo / "pkg" / f"extra_{i}.py", SCALE.replace("scale_kernel", f"scale_kernel_{i}"))
    monkeypatch.setattr(m, "BATCH", 2)

    # Ctrl-C half way through storing (embedding is done on its own thread during the
    # parse, so the interruption comes while a batch is written)
    add_many, calls = kb.add_many, []

    def crashing_add(records):
        calls.append(len(records))
        if len(calls) == 3:
            raise KeyboardInterrupt
        return add_many(records)

    monkeypatch.setattr(kb, "add_many", crashing_add)
    with pytest.raises(KeyboardInterrupt):
        mine(DirectorySource(repo, "demo"), kb, embedder=hash_embedder, jobs=1)
    monkeypatch.setattr(kb, "add_many", add_many)
    (src,) = kb.sources()
    assert src.state == "mining", "an interrupted source is marked as such"
    marked = kb.file_hashes("demo")
    recorded = {r.file for r in kb.kernels()}
    kernel_files = {f for f in marked if "extra_" in f or "/ops/" in f}
    assert marked and kernel_files <= recorded, "a file is marked only after its kernels are stored"
    assert len(marked) < 10, "the crash happened before every file was marked"
    report = mine(DirectorySource(repo, "demo"), kb, embedder=hash_embedder, jobs=1)
    assert report.kernels == 8 and kb.sources()[0].state == "complete"

    clean_kb = type(kb).open(str(repo.parent / "clean-store"))
    mine(DirectorySource(repo, "demo"), clean_kb, embedder=hash_embedder, jobs=1)
    key = lambda recs: sorted((r.id, r.file, r.function, tuple(r.techniques)) for r in recs)  # noqa: E731
    assert key(kb.kernels()) == key(clean_kb.kernels())


def test_facts_cache_by_content_hash(repo, tmp_path, hash_embedder):
    from skel.store.knowledge import KnowledgeBase

    cache = tmp_path / "cache"
    src = DirectorySource(repo, "demo")
    first = mine(src, KnowledgeBase.open(str(tmp_path / "a")), embedder=hash_embedder, jobs=1, cache_root=cache)
    second = mine(src, KnowledgeBase.open(str(tmp_path / "b")), embedder=hash_embedder, jobs=1, cache_root=cache)
    assert first.parsed == 2 and first.cached == 0
    assert second.parsed == 0 and second.cached == 2 and second.kernels == 2


def test_git_commit_is_the_version(repo, kb, hash_embedder):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    for cmd in (["git", "init", "-q"], ["git", "add", "."], ["git", "commit", "-qm", "x"]):
        subprocess.run(cmd, cwd=repo, check=True, env=env)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    report = mine(DirectorySource(repo), kb, embedder=hash_embedder, jobs=1)
    assert report.version == head and report.source == "repo"


def test_parallel_parse_matches_serial(repo, tmp_path, hash_embedder):
    from skel.store.knowledge import KnowledgeBase

    for i in range(8):
        write(repo / "pkg" / f"more_{i}.py", GOOD.replace("solve_kernel", f"solve_kernel_{i}"))
    a = KnowledgeBase.open(str(tmp_path / "a"))
    b = KnowledgeBase.open(str(tmp_path / "b"))
    mine(DirectorySource(repo, "demo"), a, embedder=hash_embedder, jobs=1)
    mine(DirectorySource(repo, "demo"), b, embedder=hash_embedder, jobs=2, cache_root=None)
    key = lambda kb: sorted((r.id, r.line_start, tuple(r.techniques)) for r in kb.kernels())  # noqa: E731
    assert key(a) == key(b) and len(key(a)) == 10


def test_catalog_change_retags_mined_kernels(repo, kb, hash_embedder, monkeypatch):
    """A new or edited skeleton must not leave old technique tags in the store."""
    import skel.skeletons.registry as reg

    mine(DirectorySource(repo, "demo"), kb, embedder=hash_embedder, jobs=1)
    monkeypatch.setattr(reg, "catalog_fingerprint", lambda: "a-different-catalog")
    report = mine(DirectorySource(repo, "demo"), kb, embedder=hash_embedder, jobs=1)
    assert report.unchanged == 0 and report.kernels_written == 2
    again = mine(DirectorySource(repo, "demo"), kb, embedder=hash_embedder, jobs=1)
    assert again.kernels_written == 0


def _age(root, seconds=100):
    # files as an installed package has them: older than the racy window of skel.miner.stamps
    t = __import__("time").time() - seconds
    for dirpath, _, names in os.walk(root):
        for n in names + [""]:
            os.utime(os.path.join(dirpath, n) if n else dirpath, (t, t))


def test_unchanged_remine_is_answered_from_stamps_without_the_store(repo, tmp_path, hash_embedder, monkeypatch):
    import skel.api as api
    from skel.miner import stamps

    store = str(tmp_path / "store")
    monkeypatch.setenv("SKEL_EMBEDDER", "hash")
    _age(repo)
    first = api.mine(str(repo), source="demo", version="1", store=store)
    full = api.mine(str(repo), source="demo", version="1", store=store)  # unchanged, the full path once
    assert full.parsed == 0 and full.unchanged == first.files

    def no_store(*a, **k):
        raise AssertionError("the store was opened")

    monkeypatch.setattr(api, "open_store", no_store)
    short = api.mine(str(repo), source="demo", version="1", store=store)
    keys = ("files", "kernel_files", "parsed", "cached", "unchanged", "removed", "kernels", "kernels_written",
            "techniques", "skipped")
    assert {k: short.to_dict()[k] for k in keys} == {k: full.to_dict()[k] for k in keys}
    # an edited file (a new modification time) takes the full path again
    path = repo / "pkg" / "ops" / "solve.py"
    path.write_text(path.read_text().replace('input_precision="tf32x3"', 'input_precision="ieee"'))
    _age(repo, 50)
    assert stamps.unchanged_report(store, DirectorySource(repo, "demo", "1")) is None
    monkeypatch.undo()
    monkeypatch.setenv("SKEL_EMBEDDER", "hash")
    changed = api.mine(str(repo), source="demo", version="1", store=store)
    assert changed.unchanged == changed.files - 1 and changed.kernels_written == 1  # parsed, or from the facts cache
    # a removed source is mined again in full, its stamps notwithstanding
    _age(repo, 40)
    api.mine(str(repo), source="demo", version="1", store=store)
    api.remove_source("demo", store=store)
    again = api.mine(str(repo), source="demo", version="1", store=store)
    assert again.kernels_written == again.kernels == 2
    # a file just written is not trusted to its stamp: no short cut, whatever the manifest says
    write(repo / "pkg" / "new.py", "x = 1\n")
    assert stamps.source_stamp(DirectorySource(repo, "demo", "1")) is None


def test_embedding_beside_the_parsers_gives_every_text_its_vector(hash_embedder):
    """The mine's background embedding: texts submitted while files are parsed go to the
    embedder's one-thread twin, what it has not started (or was never submitted) is
    embedded by the embedder itself, each text gets its own vector in order, and an
    error of the embedder surfaces when the vectors are asked for."""
    import threading
    import time

    from skel.miner.mine import Embedding

    gate, running = threading.Event(), threading.Event()

    class Twin:
        name = hash_embedder.name
        seen: list[str] = []

        def embed(self, texts):
            running.set()
            gate.wait(5)  # holds the thread, so later batches queue behind this one
            Twin.seen += texts
            return hash_embedder.embed(texts)

    class Full:
        name = hash_embedder.name
        seen: list[str] = []

        def sharing_cores(self):
            return Twin()

        def embed(self, texts):
            Full.seen += texts
            return hash_embedder.embed(texts)

    emb = Embedding(Full())
    try:
        emb.submit(["a b", "c d"])
        assert running.wait(5), "the thread took the first batch"
        emb.submit(["e f", "a b"])  # queued behind the first; "a b" only once
        threading.Timer(0.2, gate.set).start()
        texts = ["c d", "e f", "never submitted", "a b", "c d"]
        got = emb.get(texts)
        assert got == hash_embedder.embed(texts)
        assert Twin.seen == ["a b", "c d"], "the running batch finishes on the twin"
        assert sorted(Full.seen) == ["e f", "never submitted"], "the queued batch is embedded at full speed"
        emb.submit(["a b", "g h"])
        assert emb.get(["g h", "a b"]) == hash_embedder.embed(["g h", "a b"])
        every = Twin.seen + Full.seen
        assert every.count("a b") == 1 and every.count("g h") == 1, "a text is embedded once"
    finally:
        emb.close()

    # a write asks only for its own files' vectors: batches it does not need stay with
    # the thread, which embeds them meanwhile (the store's later batches find them ready)
    gate.clear()
    running.clear()
    Twin.seen, Full.seen = [], []
    emb = Embedding(Full())
    try:
        emb.submit(["first"])
        assert running.wait(5), "the thread took the first batch"
        emb.submit(["needed now"])
        emb.submit(["needed later"])
        assert emb.get(["needed now"]) == hash_embedder.embed(["needed now"])
        assert Full.seen == ["needed now"], "the queued batch a write needs is embedded at full speed"
        gate.set()
        deadline = time.monotonic() + 5
        while "needed later" not in Twin.seen and time.monotonic() < deadline:
            time.sleep(0.01)
        assert emb.get(["needed later", "first"]) == hash_embedder.embed(["needed later", "first"])
        assert Twin.seen == ["first", "needed later"], "a batch nobody asked for stays with the thread"
        assert Full.seen == ["needed now"]
    finally:
        emb.close()

    class Broken:
        name = "broken"

        def embed(self, texts):
            raise RuntimeError("no model")

    # what queues up while the thread is busy is embedded in one call, and each batch
    # still gets its own texts' vectors
    gate.clear()
    running.clear()
    Twin.seen, Full.seen = [], []
    calls: list[list[str]] = []

    class Counted(Twin):
        def embed(self, texts):
            calls.append(list(texts))
            return super().embed(texts)

    class FullCounted(Full):
        def sharing_cores(self):
            return Counted()

    emb = Embedding(FullCounted())
    try:
        emb.submit(["one"])
        assert running.wait(5), "the thread took the first batch"
        emb.submit(["two", "three"])
        emb.submit(["four"])
        gate.set()
        deadline = time.monotonic() + 5
        while len(Twin.seen) < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert calls == [["one"], ["two", "three", "four"]]
        assert emb.get(["four", "one", "three"]) == hash_embedder.embed(["four", "one", "three"])
        assert Full.seen == [], "every batch was the thread's"
    finally:
        emb.close()

    emb = Embedding(Broken())
    try:
        emb.submit(["x"])
        with pytest.raises(RuntimeError, match="no model"):
            emb.get(["x"])
    finally:
        emb.close()

    # an interrupted mine closes the embedding at once, whatever the thread is doing
    stuck = threading.Event()

    class Stuck:
        name = "stuck"

        def embed(self, texts):
            stuck.wait(30)
            return hash_embedder.embed(texts)

    emb = Embedding(Stuck())
    emb.submit(["x"])
    emb.submit(["y"])
    t = time.monotonic()
    emb.close()
    assert time.monotonic() - t < 1
    assert emb._thread.daemon, "a thread that never holds up the interpreter's exit"
    stuck.set()


def test_a_parser_worker_keeps_no_tree_between_files():
    """The data-flow view's answers hold their nodes: a worker drops them after each file,
    or it would carry every tree it has analysed."""
    from skel.kernels import flow
    from skel.kernels.triton import extract_file
    from skel.miner.mine import _extract, tag_lines

    source = (
        "import triton\nimport triton.language as tl\n\n@triton.jit\n"
        "def k(x_ptr, n, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)\n"
    )
    flow.forget()
    for k in extract_file(source, "k.py"):
        tag_lines(k)
    assert flow._MEMO, "tagging keeps answers per node (else this test shows nothing)"
    rel, value = _extract(("k.py", source, [], ("", "")))
    assert isinstance(value, list) and value[0]["facts"]["name"] == "k"
    assert not flow._MEMO
