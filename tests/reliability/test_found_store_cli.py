"""Regression tests for bugs found by trying skel as a new user would (issue #11): sources
that share a name, a read-only store, argument validation, a closed output pipe and the
progress display. Each test reproduces the reported failure first-hand; none needs a GPU,
a network or the real embedding model."""

from __future__ import annotations

import json
import subprocess

import pytest
from click.testing import CliRunner

from conftest import write
from skel.cli import cli
from skel.errors import UsageError

KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def {name}(a_ptr, b_ptr, c_ptr, BT: tl.constexpr):
    o = tl.arange(0, BT)
    a = tl.load(a_ptr + o[:, None] * BT + o[None, :]).to(tl.float32)
    b = tl.load(b_ptr + o[:, None] * BT + o[None, :]).to(tl.float32)
    tl.store(c_ptr + o[:, None] * BT + o[None, :], tl.dot(a, b))
'''


def _folder(root, n, stem="k"):
    for i in range(n):
        write(root / f"{stem}{i}.py", KERNEL.format(name=f"{stem}{i}_kernel"))
    return root


def _mine(path, kb, embedder, **kw):
    from skel.miner.mine import mine
    from skel.miner.sources import DirectorySource

    return mine(DirectorySource(path, kw.pop("name", None)), kb, embedder=embedder, jobs=1, **kw)


def _git(cwd, *args):
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(cwd), "PATH": "/usr/bin:/bin:/usr/local/bin"})


# --- 1. two folders with one name ------------------------------------------------------------

def test_a_second_folder_with_a_taken_name_is_refused_and_deletes_nothing(tmp_path, kb, hash_embedder):
    """Reported: mining b/ops after a/ops replaced a/ops's kernels (285 -> 31, "removed
    107", exit 0)."""
    a = _folder(tmp_path / "a" / "ops", 3)
    b = _folder(tmp_path / "b" / "ops", 1, stem="other")
    assert _mine(a, kb, hash_embedder).kernels == 3
    with pytest.raises(UsageError) as info:
        _mine(b, kb, hash_embedder)
    msg = str(info.value)
    assert "'ops'" in msg and str(a.resolve()) in msg and str(b.resolve()) in msg
    assert "--source NAME" in msg and "--replace" in msg and "(3 kernels)" in msg
    assert kb.count() == 3 and {r.file for r in kb.kernels()} == {"k0.py", "k1.py", "k2.py"}
    (src,) = kb.sources()
    assert (src.name, src.origin, src.state) == ("ops", str(a.resolve()), "complete")


def test_the_same_folder_however_spelled_is_the_same_source(tmp_path, kb, hash_embedder, monkeypatch):
    a = _folder(tmp_path / "a" / "ops", 2)
    (tmp_path / "link").symlink_to(tmp_path / "a")
    assert _mine(a, kb, hash_embedder).kernels == 2
    monkeypatch.chdir(tmp_path / "a")
    again = _mine("ops", kb, hash_embedder)  # relative
    assert again.unchanged == 2 and again.removed == 0
    via_link = _mine(tmp_path / "link" / "ops", kb, hash_embedder)
    assert via_link.unchanged == 2 and via_link.removed == 0 and kb.count() == 2


def test_replace_deletes_the_other_source_first_and_says_so(tmp_path, kb, hash_embedder):
    a = _folder(tmp_path / "a" / "ops", 3)
    b = _folder(tmp_path / "b" / "ops", 1, stem="other")
    _mine(a, kb, hash_embedder)
    report = _mine(b, kb, hash_embedder, replace=True)
    assert report.replaced == {"origin": str(a.resolve()), "root": str(a), "kernels": 3, "files": 3}
    assert report.kernels == 1 and kb.count() == 1 and kb.stats().total_kernels == 1
    (src,) = kb.sources()
    assert src.origin == str(b.resolve())
    assert _mine(b, kb, hash_embedder, replace=True).replaced is None  # same origin: nothing to replace


def test_clones_of_one_remote_are_one_source_and_no_credentials_are_stored(tmp_path, kb, hash_embedder):
    """Team members mine their own checkouts (any path, any protocol) into one shared
    store: the remote, not the folder, says which code it is."""
    from skel.miner.sources import DirectorySource, GitSource

    clones = []
    for where, url in (("x", "https://alice:s3cret@github.com/Org/Kern.git"), ("y", "git@github.com:Org/Kern")):
        repo = tmp_path / where / "kern"
        _folder(repo / "ops", 2)
        _git(repo, "init", "-q")
        _git(repo, "add", ".")
        _git(repo, "commit", "-qm", "k")
        _git(repo, "remote", "add", "origin", url)
        clones.append(repo)
    origins = {DirectorySource(c / "ops").origin for c in clones} | {GitSource(clones[0] / "ops", "HEAD").origin}
    assert origins == {"github.com/Org/Kern/ops"}
    _mine(clones[0] / "ops", kb, hash_embedder)
    assert _mine(clones[1] / "ops", kb, hash_embedder).replaced is None and kb.count() == 2
    stored = json.dumps([s.__dict__ for s in kb.sources()])
    assert "s3cret" not in stored and "alice" not in stored


def test_a_folder_without_a_remote_is_known_by_its_resolved_path(tmp_path, kb, hash_embedder):
    from skel.miner.sources import DirectorySource, GitSource

    repo = tmp_path / "r"
    _folder(repo / "ops", 1)
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "k")
    here = str((repo / "ops").resolve())
    assert DirectorySource(repo / "ops").origin == GitSource(repo / "ops", "HEAD").origin == here


def test_stores_mined_before_origins_keep_working(tmp_path, kb, hash_embedder):
    """A record written by an earlier skel has no origin: its root (the path given then)
    decides, and a re-mine records the origin."""
    a = _folder(tmp_path / "a" / "ops", 2)
    b = _folder(tmp_path / "b" / "ops", 1, stem="other")
    _mine(a, kb, hash_embedder)
    col = kb._col("sources")
    md = col.get(ids=["ops"], include=["metadatas"])["metadatas"][0]
    legacy = {k: v for k, v in md.items() if k != "origin"}
    col.delete(ids=["ops"])
    col.add(ids=["ops"], embeddings=[[1.0]], metadatas=[legacy])
    assert kb.source("ops").origin == ""
    with pytest.raises(UsageError, match="--replace"):
        _mine(b, kb, hash_embedder)
    assert kb.count() == 2
    assert _mine(a, kb, hash_embedder).unchanged == 2
    assert kb.source("ops").origin == str(a.resolve())


def test_sources_list_and_remove_on_the_command_line(tmp_path, kb, hash_embedder):
    a = _folder(tmp_path / "a" / "ops", 3)
    b = _folder(tmp_path / "b" / "ops", 1, stem="other")
    _mine(a, kb, hash_embedder)
    _mine(b, kb, hash_embedder, name="ops-b")
    store = kb.location
    runner = CliRunner()
    r = runner.invoke(cli, ["sources", "list", "--store", store, "--json"])
    assert r.exit_code == 0, r.output
    assert [(s["name"], s["origin"], s["counts"]["kernels"]) for s in json.loads(r.stdout)] == [
        ("ops", str(a.resolve()), 3), ("ops-b", str(b.resolve()), 1)]
    r = runner.invoke(cli, ["sources", "remove", "ops", "--store", store])
    assert r.exit_code == 0 and "removed source ops" in r.stdout and "3 kernels, 3 files" in r.stdout
    assert kb.count() == 1 and [s.name for s in kb.sources()] == ["ops-b"] and kb.stats().total_kernels == 1
    assert kb.file_hashes("ops") == {}
    r = runner.invoke(cli, ["sources", "remove", "ops", "--store", store])
    assert (r.exit_code, r.stderr) == (2, "skel: error: no source named 'ops' in the store (known: ops-b)\n")


def test_mine_refusal_on_the_command_line_is_one_line(tmp_path, kb, hash_embedder):
    a = _folder(tmp_path / "a" / "ops", 2)
    b = _folder(tmp_path / "b" / "ops", 1, stem="other")
    _mine(a, kb, hash_embedder)
    r = CliRunner().invoke(cli, ["mine", str(b), "--store", kb.location, "--no-progress"])
    assert r.exit_code == 2 and r.stdout == "" and r.stderr.count("\n") == 1
    assert r.stderr.startswith("skel: error: the store already has a source named 'ops'")
    assert kb.count() == 2
    r = CliRunner().invoke(cli, ["mine", str(b), "--store", kb.location, "--no-progress", "--replace"])
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith(f"replaced source ops mined from {a.resolve()}: deleted its 2 kernels (2 files)\n")


# --- 2. a store on a read-only filesystem ---------------------------------------------------

def _snapshot(store):
    import hashlib

    return {str(f.relative_to(store)): hashlib.sha1(f.read_bytes()).hexdigest()
            for f in sorted(store.rglob("*")) if f.is_file()}


@pytest.fixture
def mined(tmp_path, hash_embedder):
    from skel.store.knowledge import KnowledgeBase

    store = tmp_path / "store"
    kb = KnowledgeBase.open(str(store))
    for i in range(2):  # kernels that use the technique suggested for the query below
        write(tmp_path / "repo" / f"k{i}.py", KERNEL.format(name=f"k{i}").replace(
            "tl.dot(a, b)", 'tl.dot(a, b, input_precision="tf32x3")'))
    _mine(tmp_path / "repo", kb, hash_embedder, name="demo")
    del kb
    query = write(tmp_path / "q.py", KERNEL.format(name="mine_kernel"))
    return store, query


def test_a_read_only_store_is_read_from_a_copy_simulated(mined, monkeypatch):
    """Reported: `suggest` and `store info` on a read-only filesystem died with "attempt to
    write a readonly database". Simulated here (tests may run as root, where chmod blocks
    nothing): the store says it is not writable; the real mount is the next test."""
    from skel import api
    from skel.store import knowledge

    store, query = mined
    before = _snapshot(store)
    monkeypatch.setattr(knowledge, "_writable", lambda path: False)
    info = api.store_info(str(store))
    assert info.kernels == 2 and [s.name for s in info.sources] == ["demo"]
    assert info.note == f"the store at {store} is read-only: read from a temporary copy"
    (result,) = api.suggest(query, store=str(store))
    assert info.note in result.notes
    assert any(e.source == "demo" for s in result.suggestions for e in s.evidence)
    assert _snapshot(store) == before, "the read-only store itself was written"
    with pytest.raises(knowledge.StoreError, match="read-only"):
        api.remove_source("demo", store=str(store))
    with pytest.raises(knowledge.StoreError, match="read-only .*needs a writable --store"):
        api.mine(str(query.parent), store=str(store))
    assert _snapshot(store) == before


def _read_only_mount_works(tmp_path) -> bool:
    probe = tmp_path / "probe"
    probe.mkdir()
    r = subprocess.run(["unshare", "-rm", "sh", "-c", f"mount --bind {probe} {probe} && "
                        f"mount -o remount,ro,bind {probe} && ! touch {probe}/x 2>/dev/null"],
                       capture_output=True)
    return r.returncode == 0


def test_a_read_only_mount_is_readable_from_the_command_line(mined, tmp_path):
    """The real thing: the store bind-mounted read-only in a private mount namespace
    (``unshare -rm``; skipped where user namespaces are not allowed)."""
    import shlex
    import sys

    from conftest import ROOT

    if not _read_only_mount_works(tmp_path):
        pytest.skip("no read-only bind mount here (unshare -rm refused)")
    store, query = mined
    before = _snapshot(store)
    skel = f"{shlex.quote(sys.executable)} -m skel.cli"
    script = (f"mount --bind {store} {store} && mount -o remount,ro,bind {store} && "
              f"{skel} store info --store {store} && {skel} suggest {query} --store {store} --format json; "
              f"echo rc=$?; {skel} mine {query.parent} --store {store}; echo rc=$?")
    r = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, cwd=ROOT,
                       timeout=300)
    out = r.stdout
    assert out.startswith(f"store {store} (schema v1): 2 kernels\nnote: the store at {store} is read-only"), \
        out + r.stderr
    data = json.loads(out[out.index("{"):out.index("\nrc=")])
    assert any(f"the store at {store} is read-only" in n for k in data["kernels"] for n in k["notes"])
    assert "rc=0" in out and out.rstrip().endswith("rc=2")
    assert f"skel: error: store at {store} is read-only" in r.stderr and "readonly database" not in r.stderr
    assert _snapshot(store) == before


# --- 3. arguments --------------------------------------------------------------------------

@pytest.mark.parametrize("bad", ["banana", "3", "3.x", "v3.4", "3.4.0 beta", ""])
def test_a_triton_version_that_is_not_one_is_refused(bad):
    """Reported: `--triton banana` was accepted and silently changed the results."""
    from skel import api

    with pytest.raises(UsageError, match="expected a version such as 3.4"):
        api.parse_target(None, None, bad)


@pytest.mark.parametrize("good", ["3.4", "3.4.0", " 3.7.1 ", "3.4.0rc1", "3.5.0.post1", "3.6.0+git1234abcd"])
def test_triton_versions_as_pip_spells_them_are_accepted(good):
    from skel import api

    assert api.parse_target(None, None, good).triton == good.strip()


def test_triton_banana_on_the_command_line_is_one_line(tmp_path):
    k = write(tmp_path / "k.py", KERNEL.format(name="k"))
    r = CliRunner().invoke(cli, ["suggest", str(k), "--triton", "banana"])
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == "skel: error: --triton 'banana': expected a version such as 3.4 or 3.4.0\n"


@pytest.mark.parametrize("location,says", [
    ("localhost:8000", "looks like HOST:PORT: write http://localhost:8000 for a Chroma server"),
    ("10.0.0.7:8000", "looks like HOST:PORT: write http://10.0.0.7:8000"),
    ("ftp://x", "ftp:// is not supported"),
    ("s3://bucket/store", "s3:// is not supported"),
    ("http://127.0.0.1:abc", "the port is not a number"),
    ("http://127.0.0.1:0", "the port is not a number"),
    ("http:///store", "no host"),
])
def test_store_locations_that_are_not_folders_are_refused_and_create_nothing(tmp_path, monkeypatch, location, says):
    """Reported: `--store localhost:8000` made a local folder, `ftp://x` was taken as a path."""
    from skel import api
    from skel.store.knowledge import KnowledgeBase, StoreError

    monkeypatch.chdir(tmp_path)
    for attempt in (lambda: KnowledgeBase.open(location), lambda: api.open_store(location, create=False),
                    lambda: api.history_events(store=location)):
        with pytest.raises(StoreError, match=says.replace("(", r"\(").replace(".", r"\.")):
            attempt()
    r = CliRunner().invoke(cli, ["mine", str(_folder(tmp_path / "src", 1)), "--store", location, "--no-progress"])
    assert r.exit_code == 2 and says in r.stderr and r.stderr.count("\n") == 1
    r = CliRunner().invoke(cli, ["mine", "--history", str(tmp_path / "src"), "--store", location])
    assert r.exit_code == 2 and says in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"], "a folder was made for a non-folder location"


def test_a_folder_that_is_named_like_host_port_is_still_a_folder(tmp_path, monkeypatch, hash_embedder):
    from skel.store.knowledge import KnowledgeBase

    monkeypatch.chdir(tmp_path)
    (tmp_path / "localhost:8000").mkdir()
    assert KnowledgeBase.open("localhost:8000").count() == 0
    assert KnowledgeBase.open("./localhost:9000").count() == 0  # ./ makes any name a folder


def _serve(handler_body: bytes, status: int):
    """A loopback HTTP server that answers every request with ``status`` and the body."""
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the stdlib's name
            self.send_response(status)
            self.send_header("Content-Length", str(len(handler_body)))
            self.end_headers()
            self.wfile.write(handler_body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize("body,status,says", [
    (b'{"error": "InternalError", "message": ""}', 503, "InternalError with no message: is it a Chroma server"),
    (b"", 404, "Client error '404 Not Found'"),
    (b"", 500, "Server error '500 Internal Server Error'"),
    (b"<!DOCTYPE HTML><html><body>404</body></html>", 404, "it answered with a web page: is it a Chroma server"),
])
def test_a_server_that_is_not_chroma_gets_a_message_that_says_so(body, status, says):
    """Reported: an unreachable server gave `ValueError:` with an empty message."""
    from skel.store.knowledge import KnowledgeBase, StoreError

    server = _serve(body, status)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with pytest.raises(StoreError) as info:
            KnowledgeBase.open(url)
    finally:
        server.shutdown()
    msg = str(info.value)
    assert msg.startswith(f"cannot reach the Chroma server at {url}: ") and says in msg and "\n" not in msg


def test_no_server_listening_is_named_plainly():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = CliRunner().invoke(cli, ["store", "info", "--store", f"http://127.0.0.1:{port}"])
    assert r.exit_code == 2
    assert r.stderr.startswith(f"skel: error: cannot reach the Chroma server at http://127.0.0.1:{port}: ")
    assert not r.stderr.rstrip().endswith(":") and r.stderr.count("\n") == 1


@pytest.mark.parametrize("args,says", [
    (["suggest", "K", "-k", "0"], "Invalid value for '-k': 0 is not in the range 1<=x<=50."),
    (["suggest"], "Missing argument 'KERNEL_FILE'."),
    (["--bogus"], "No such option '--bogus'."),
    (["skeletons", "show", "online-softmax", "--format", "x"], "Invalid value for '--format'"),
])
def test_usage_errors_are_one_line_and_exit_2(tmp_path, args, says):
    """Reported: `-k 0` printed click's usage block instead of one line."""
    k = write(tmp_path / "k.py", KERNEL.format(name="k"))
    r = CliRunner().invoke(cli, [str(k) if a == "K" else a for a in args])
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.startswith("skel: error: ") and says in r.stderr and r.stderr.count("\n") == 1
    assert "Usage:" not in r.stderr and "--help`)" in r.stderr


def test_a_group_without_a_subcommand_still_shows_its_help():
    r = CliRunner().invoke(cli, ["skeletons"])
    assert "Browse the skeleton catalog." in r.output and "skel: error" not in r.output


def _closed_reader(args, tmp_path):
    """Run the CLI with its stdout a pipe whose reader has already gone (`| head` after
    the first line, at its most abrupt)."""
    import os
    import sys

    from conftest import ROOT

    read, write_end = os.pipe()
    os.close(read)
    try:
        return subprocess.run([sys.executable, "-m", "skel.cli", *args], stdout=write_end, stderr=subprocess.PIPE,
                              text=True, cwd=ROOT, timeout=300)
    finally:
        os.close(write_end)


def test_a_closed_stdout_pipe_ends_quietly_with_141(tmp_path):
    """Reported: `skel mine ... | head` exited 1 (then 2, "internal error: BrokenPipeError").
    The mine itself is complete: only its report had nowhere to go."""
    from skel.store.knowledge import KnowledgeBase

    src = _folder(tmp_path / "src", 3)
    r = _closed_reader(["mine", str(src), "--store", str(tmp_path / "store")], tmp_path)
    assert (r.returncode, r.stderr) == (141, "")
    kb = KnowledgeBase.open(str(tmp_path / "store"), create=False)
    assert kb.count() == 3 and kb.sources()[0].state == "complete"
    r = _closed_reader(["skeletons", "list"], tmp_path)
    assert (r.returncode, r.stderr) == (141, "")
    r = _closed_reader(["--help"], tmp_path)
    assert (r.returncode, r.stderr) == (141, "")


def test_a_broken_pipe_to_something_else_is_still_an_error(monkeypatch):
    """Only a closed *standard output* ends quietly: a pipe to a child process (git, a
    verifier) breaking is a failure and says so."""
    from skel import api

    def broken(*args, **kwargs):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(api, "list_skeletons", broken)
    r = CliRunner().invoke(cli, ["skeletons", "list"])
    assert r.exit_code == 2 and r.stderr.startswith("skel: internal error: BrokenPipeError")


def test_a_missing_store_named_explicitly_is_an_error_the_default_location_is_not(tmp_path):
    """Reported: an explicit --store to a missing folder failed where the default location
    answered from the catalog. Kept on purpose, and now said: a location the user names
    must exist (a typo or an unmounted share must not quietly lose the mined evidence),
    the default one is optional; naming the default location itself changes nothing."""
    from skel.store.knowledge import default_location

    k = write(tmp_path / "k.py", KERNEL.format(name="k"))
    plain = CliRunner().invoke(cli, ["suggest", str(k), "--format", "json"])
    assert plain.exit_code in (0, 1) and "no mined kernels yet" in plain.stdout
    named_default = CliRunner().invoke(cli, ["suggest", str(k), "--format", "json", "--store", default_location()])
    assert (named_default.exit_code, named_default.stdout) == (plain.exit_code, plain.stdout)
    missing = tmp_path / "typo"
    r = CliRunner().invoke(cli, ["suggest", str(k), "--store", str(missing)])
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr == (f"skel: error: no knowledge base at {missing}: mine into it first (`skel mine PATH --store "
                        f"{missing}`); without --store, suggest, show and list answer from the built-in catalog "
                        "alone\n")
    for args in (["skeletons", "list"], ["skeletons", "show", "online-softmax"], ["sources", "list"],
                 ["history", "list"], ["store", "info"]):
        r = CliRunner().invoke(cli, [*args, "--store", str(missing)])
        assert r.exit_code == 2 and f"no knowledge base at {missing}:" in r.stderr, args
    r = CliRunner().invoke(cli, ["store", "info"])
    assert r.stderr == f"skel: error: no knowledge base at {default_location()} yet: mine something first " \
                       "(`skel mine PATH`)\n"
    assert not missing.exists()


# --- 4. the progress display ---------------------------------------------------------------

class _Screen:
    """Just enough of a terminal to see what a person would: carriage return, newline,
    cursor show/hide (ignored), clear to end of line."""

    def __init__(self) -> None:
        self.lines = [""]
        self.col = 0

    def feed(self, text: str) -> None:
        import re

        for part in re.split(r"(\x1b\[[0-9;?]*[A-Za-z]|\r|\n)", text):
            if part == "\r":
                self.col = 0
            elif part == "\n":
                self.lines.append("")
                self.col = 0
            elif part.startswith("\x1b["):
                if part == "\x1b[K":
                    self.lines[-1] = self.lines[-1][:self.col]
                else:
                    assert part in ("\x1b[?25l", "\x1b[?25h"), f"unexpected escape {part!r}"
            elif part:
                line = self.lines[-1]
                self.lines[-1] = line[:self.col] + part + line[self.col + len(part):]
                self.col += len(part)

    @property
    def shown(self) -> list[str]:
        return [line.rstrip() for line in self.lines if line.strip()]


class _Tty:
    def __init__(self, screen: _Screen) -> None:
        self.screen = screen

    def write(self, text: str) -> int:
        self.screen.feed(text)
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return True


def test_each_stage_ends_its_line_so_no_stale_digits_show(monkeypatch):
    """Reported: `48/1077` shown for 48/107 (the storing bar drawn over the longer
    parsing line), and 15-25 s frozen without a label while the model loaded."""
    from skel.cli import MineProgress

    monkeypatch.setenv("COLUMNS", "100")
    screen = _Screen()
    progress = MineProgress(_Tty(screen), show=True)
    for done in range(0, 1078, 7):
        progress(min(done, 1077), 1077, f"pkg/file{done}.py")
    progress(1077, 1077, "pkg/last.py")
    progress(0, 0, "model")
    assert screen.shown[-1] == "embedding the kernels ..."
    assert screen.shown[-2].startswith("parsing") and screen.shown[-2].endswith("1077/1077")
    progress(0, 107, "store")
    progress(48, 107, "store")
    assert screen.shown[-1].startswith("storing") and screen.shown[-1].endswith("48/107"), screen.shown
    progress(96, 107, "store")
    progress(107, 107, "store")
    progress.close()
    assert [line.split()[0] for line in screen.shown] == ["parsing", "embedding", "storing"]
    assert screen.shown[-1].endswith("107/107") and screen.lines[-1] == ""


def test_the_miner_says_it_is_loading_the_model_before_storing(tmp_path, kb):
    from skel.miner.mine import mine
    from skel.miner.sources import DirectorySource

    calls = []
    mine(DirectorySource(_folder(tmp_path / "src", 3), "src"), kb, jobs=1,
         progress=lambda done, total, label: calls.append((done, total, label)))
    labels = [label for _, _, label in calls]
    first_store = labels.index("store")
    assert labels.index("model") == first_store - 1 and calls[first_store] == (0, 3, "store")
    assert all(label == "parse" or label.endswith(".py") for label in labels[:labels.index("model")])
    assert calls[-1] == (3, 3, "store")


def test_the_progress_seen_on_a_terminal(tmp_path):
    """End to end: `skel mine` with its stderr a pseudo-terminal, read back as a screen."""
    import os
    import pty
    import sys

    from conftest import ROOT

    src = _folder(tmp_path / "src", 30)
    master, slave = pty.openpty()
    env = dict(os.environ, COLUMNS="100")
    proc = subprocess.Popen([sys.executable, "-m", "skel.cli", "mine", str(src), "--store", str(tmp_path / "s"),
                             "-j", "1"], stdout=subprocess.PIPE, stderr=slave, cwd=ROOT, env=env)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the terminal's other side closed
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    proc.communicate(timeout=300)
    assert proc.returncode == 0
    screen = _Screen()
    screen.feed(out.decode())
    shown = screen.shown
    assert [line.split()[0] for line in shown] == ["parsing", "embedding", "storing"], shown
    assert shown[0].endswith("30/30") and shown[2].endswith("30/30")
