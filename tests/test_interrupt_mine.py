"""A Ctrl-C during `skel mine`, at each phase (walking, parsing in worker processes,
storing), as a terminal sends it: SIGINT to the whole process group, the parser workers
included. Every time: exactly one line on stderr, exit 130, and a store the same command
completes (#37). Before, the parsing phase printed a KeyboardInterrupt traceback per
worker under the mine's line, and the storing phase aborted ("terminate called without an
active exception", exit 134) when the embedding thread was inside the model's native code
as the interpreter shut down.

Each phase is pinned without timing guesses: a wrapper around the CLI writes a marker
file once the mine is where the test wants it, and holds it there (a walk that sleeps, a
file whose parse hangs through the test-only hook SKEL_FAULT_SLOW_FILE, an embedding
batch that never ends); the test sends the signal once the marker is there.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skel.skeletons.registry import fixture_files, fixture_name

ROOT = Path(__file__).resolve().parent.parent
LINE = "skel: interrupted; the store is consistent — run the same command again to finish."
FILES = 8

# Run as `python -c`: spawned parser workers then import nothing of it (no __main__ file).
WRAPPER = r"""
import os, sys, threading, time
marks, phase = os.environ["TEST_MARKS"], os.environ["TEST_PHASE"]

def mark(name):
    open(os.path.join(marks, name), "w").close()

if phase == "walk":
    from skel.miner import walk
    real_discover = walk.discover
    def discover(root):
        for n, item in enumerate(real_discover(root)):
            yield item
            if n == 2:  # in the middle of the walk
                mark("walk")
                time.sleep(3600)
    walk.discover = discover
elif phase == "parse":
    # every file parsed but slow.py, whose parse hangs in a worker (SKEL_FAULT_SLOW_FILE);
    # the other worker waits for a job that never comes
    import skel.miner.mine as m
    real_extract = m.extract_many
    def extract_many(files, cache, jobs, progress=None, **kw):
        def seen(done, total, label):
            if total and done == total - 1:
                mark("parse")
            if progress:
                progress(done, total, label)
        return real_extract(files, cache, jobs, seen, **kw)
    m.extract_many = extract_many
elif phase == "store":
    # The embedding thread is inside the model when the Ctrl-C comes (here it never
    # returns). With onnxruntime, the interpreter's teardown then runs the runtime's exit
    # handlers under that thread and the process aborts ("terminate called without an
    # active exception", 134): this exit handler does what they do, so a mine that still
    # tears the interpreter down after a Ctrl-C shows it.
    import atexit
    from skel.embed import HashEmbedder
    import skel.miner.mine as m
    busy = threading.Event()
    real_embed = HashEmbedder.embed
    def embed(self, texts):
        if threading.current_thread().name == "skel-embed":
            busy.set()
            threading.Event().wait()
        return real_embed(self, texts)
    HashEmbedder.embed = embed
    real_get = m.Embedding.get
    def get(self, texts):
        mark("store")  # the first batch's write waits for the thread's vectors
        return real_get(self, texts)
    m.Embedding.get = get
    def teardown():
        if busy.is_set():
            sys.stderr.write("terminate called without an active exception\n")
            sys.stderr.flush()
            os.abort()
    atexit.register(teardown)

sys.argv = ["skel"] + sys.argv[1:]
from skel.entry import main
main()
"""


def _tree(dest: Path) -> Path:
    files = sorted((fixture_name(f), f) for f in fixture_files(".py"))[:FILES]
    for i, (name, f) in enumerate(files):
        sub = dest / f"pkg{i % 2}"
        sub.mkdir(parents=True, exist_ok=True)
        shutil.copy(f, sub / name)
    shutil.copy(files[0][1], dest / "slow.py")  # a kernel file: it goes to the parser
    return dest


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    for k in ("SKEL_FAULT_KILL_AT", "SKEL_FAULT_SLOW_FILE", "SKEL_FAULT_SIGNAL"):
        env.pop(k, None)
    env.update({"SKEL_HOME": str(home), "SKEL_EMBEDDER": "hash", "PYTHONPATH": str(ROOT),
                "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}, **extra)
    return env


def _terminal_ctrl_c() -> None:
    """In the child: SIGINT as a terminal's foreground job has it (a background job, as in
    CI, gets it ignored, and an ignored signal stays ignored across exec)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _mine_args(tree: Path, store: Path) -> list[str]:
    return ["mine", str(tree), "--store", str(store), "--source", "demo", "--no-progress", "-j", "2"]


@pytest.mark.parametrize("phase", ["walk", "parse", "store"])
def test_ctrl_c_at_each_phase_is_one_line_exit_130_and_a_rerun_completes(tmp_path, phase):
    tree, store, home, marks = _tree(tmp_path / "tree"), tmp_path / "store", tmp_path / "home", tmp_path / "marks"
    marks.mkdir()
    env = _env(home, TEST_MARKS=str(marks), TEST_PHASE=phase)
    if phase == "parse":
        env["SKEL_FAULT_SLOW_FILE"] = "slow.py"
    # its own session: the signal goes to the mine's process group, as a terminal's Ctrl-C does
    proc = subprocess.Popen([sys.executable, "-c", WRAPPER, *_mine_args(tree, store)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env, start_new_session=True,
                            preexec_fn=_terminal_ctrl_c)
    try:
        deadline = time.monotonic() + 240
        while not (marks / phase).exists():
            assert time.monotonic() < deadline and proc.poll() is None, proc.communicate(timeout=60)
            time.sleep(0.05)
        if phase == "parse":
            time.sleep(0.5)  # the slow file's worker is inside its parse; the other waits for a job
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)  # every hold lasts an hour: a mine that ignored it fails here
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert (proc.returncode, err.splitlines()) == (130, [LINE])
    assert out == ""

    again = subprocess.run([sys.executable, "-m", "skel.cli", *_mine_args(tree, store), "--json"],
                           capture_output=True, text=True, cwd=ROOT, env=_env(home), timeout=300)
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["files"] == FILES + 1 and report["skipped"] == []
    info = subprocess.run([sys.executable, "-m", "skel.cli", "store", "info", "--store", str(store), "--json"],
                          capture_output=True, text=True, cwd=ROOT, env=_env(home), timeout=120)
    sources = json.loads(info.stdout)["sources"]
    assert [(s["name"], s["state"]) for s in sources] == [("demo", "complete")]
    assert json.loads(info.stdout)["kernels"] == report["kernels"] > 0
