"""A Ctrl-C while `skel` is still starting (importing the command line) is one line and
exit 130, like a Ctrl-C once a command runs; before, it was a Python traceback from the
middle of an import (and a Ctrl-C in a command other than mine was "Aborted!", exit 1).
The moment is pinned with the test-only hook SKEL_FAULT_SLOW_START (skel/store/faults.py),
which the console script's entry (skel/entry.py) calls before it imports skel.cli."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import storecheck as sc


def _start(tmp_path, *args: str):
    marker = tmp_path / "starting"
    proc = subprocess.Popen([sys.executable, "-c", "from skel.entry import main; main()", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=sc.ROOT,
                            env=sc.env(tmp_path / "home", SKEL_FAULT_SLOW_START=str(marker)),
                            preexec_fn=sc._ctrl_c_back)
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    return proc


def test_ctrl_c_while_starting_exits_130_in_one_line(tmp_path):
    proc = _start(tmp_path, "skeletons", "list")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)  # the hook sleeps an hour: a signal not acted on fails here
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert err.strip().splitlines() == ["skel: interrupted while starting; nothing was done."]
    assert out == ""


def test_ctrl_c_during_a_command_exits_130_not_1(tmp_path):
    """Before, click turned it into "Aborted!" and exit 1, which skel uses for "no skeleton
    applies": a script would read an interrupted suggest as an answer."""
    marker = tmp_path / "suggesting"
    code = f"""
import sys, time
from skel import api
def slow(*a, **k):
    open({str(marker)!r}, "w").close()
    time.sleep(3600)
api.suggest = slow
sys.argv = ["skel", "suggest", {str(sc.ROOT / "tests" / "data" / "naive_softmax.py")!r}]
from skel.entry import main
main()
"""
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=sc.ROOT, env=sc.env(tmp_path / "home"), preexec_fn=sc._ctrl_c_back)
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == ["skel: interrupted"]


def test_the_entry_runs_the_command_line():
    r = subprocess.run([sys.executable, "-c", "from skel.entry import main; main()", "--version"],
                       capture_output=True, text=True, cwd=sc.ROOT, env=sc.env(sc.ROOT / "nonexistent-home"),
                       timeout=60)
    assert r.returncode == 0 and "0.1.0" in r.stdout, r.stderr


def test_the_console_script_is_the_entry():
    """`skel` must start through skel.entry: pointed at skel.cli directly, the Ctrl-C window
    opens again."""
    import re

    text = (sc.ROOT / "pyproject.toml").read_text()  # tomllib is 3.11+; skel runs on 3.10
    scripts = re.search(r"^\[project\.scripts\]\n(.*?)(?:^\[|\Z)", text, re.M | re.S)
    assert scripts and re.findall(r'^skel\s*=\s*"([^"]+)"', scripts.group(1), re.M) == ["skel.entry:main"]
