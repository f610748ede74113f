"""Reliability figures: what skel survives, measured. One script, one section per area.

    python -m benchmarks.reliability.reliability fuzz [--files 10000] [--seed N] [--jobs 2]
                                                      [--parts extract,mine,suggest]
    python -m benchmarks.reliability.reliability faults [--seed 0] [--files 24]
    python -m benchmarks.reliability.reliability load [--clients 8] [--requests 200]

faults — `skel mine` of a tree of real kernel files (the catalog's fixtures), in child
processes, with SKEL_EMBEDDER=hash:
- SIGKILL at every store write of a mine, before it and 3 ms / 20 ms into it (the hook in
  skel/store/faults.py), and at seeded random moments with a cold facts cache; after each,
  the same mine again, and the store compared with a clean mine (kernels: ids, files,
  functions, lines, techniques; no duplicates, no orphans, vector index = records, file
  hashes, statistics, source state);
- SIGINT at every store write and at random moments: exit 130, then the same check;
- two mines at once into one local store (one must be refused, naming the other);
- a full disk (a 600 KiB tmpfs, then remounted with room; skipped when mounting is not
  permitted);
- damaged stores (truncated, garbled, emptied, deleted, not SQLite) under `skel suggest`
  (also with a read snapshot of the database, damaged in place after it), an unchanged
  re-mine (answered from file stamps) and a mine with one file changed: one line, exit 2,
  not a byte changed;
- a Chroma server (`chroma run`) killed mid-mine and mid-suggest, restarted; two mines
  against one server at once.

load — a Chroma server holding the mined tree; N client processes, each with the store
open (as `skel serve` keeps it), ranking the same kernel R times (`suggest_for`: the
catalog assessment plus every store read of a suggestion). Latency p50/p99, errors, wrong
answers (a ranking that differs from the one computed before the load), and the server's
RSS sampled every 0.5 s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.reliability import reliability_fuzz
from tests.reliability import storecheck as sc

ROOT = Path(__file__).resolve().parents[2]

CHROMA = str(Path(sys.executable).parent / "chroma")
KERNEL = ROOT / "tests" / "data" / "naive_softmax.py"


def table(header: list[str], rows: list[list]) -> str:
    from skel.tables import table as render

    return render(header, rows)


# --- faults --------------------------------------------------------------------------------

def _resume_check(tree, store, home, clean, files) -> list[str]:
    r = sc.run_mine(tree, store, home)
    if r.returncode != 0:
        return [f"resume failed ({r.returncode}): {r.stderr.strip()[-200:]}"]
    return sc.problems(sc.snapshot(store, home), clean, files)


def faults(args) -> None:
    rnd = random.Random(args.seed)
    base = Path(tempfile.mkdtemp(prefix="skel-faults-"))
    tree = sc.make_tree(base / "tree", args.files)
    home = base / "home"  # warm facts cache: the kill lands in the store phase
    assert sc.run_mine(tree, str(base / "clean"), home).returncode == 0
    clean = sc.snapshot(str(base / "clean"), home)
    files = sc.tree_files(tree)
    rows = []
    n_writes = 9

    def record(what, tried, survived, failures):
        rows.append([what, tried, survived, "; ".join(sorted(set(failures)))[:90] or "-"])
        print(f"  {what}: {survived}/{tried}", file=sys.stderr, flush=True)

    # SIGKILL at (and inside) every store write
    tried = ok = 0
    fails: list[str] = []
    for n in range(1, n_writes + 1):
        for ms in ("", ":3", ":20"):
            store = str(base / f"w{n}{ms.replace(':', '_')}")
            k = sc.run_mine(tree, store, home, SKEL_FAULT_KILL_AT=f"{n}{ms}")
            tried += 1
            p = _resume_check(tree, store, home, clean, files)
            if k.returncode not in (-9, 0):
                p.append(f"killed run exited {k.returncode}")
            ok += not p
            fails += p
            shutil.rmtree(store, ignore_errors=True)
    record("SIGKILL at each store write (before, +3 ms, +20 ms)", tried, ok, fails)

    # SIGKILL at random moments, cold cache (parse and store phases)
    tried = ok = 0
    fails = []
    for i in range(args.random_kills):
        store, h = str(base / f"r{i}"), base / f"rh{i}"
        rc, _ = sc.mine_killed_after(tree, store, h, rnd.uniform(0.3, 6.0))
        tried += 1
        p = _resume_check(tree, store, h, clean, files)
        ok += not p
        fails += p
    record(f"SIGKILL at random moments (seed {args.seed}, cold cache)", tried, ok, fails)

    # SIGINT at each write and at random moments
    tried = ok = 0
    fails = []
    for n in range(2, n_writes + 1):
        store = str(base / f"i{n}")
        r = sc.run_mine(tree, store, home, SKEL_FAULT_KILL_AT=str(n), SKEL_FAULT_SIGNAL="INT")
        p = _resume_check(tree, store, home, clean, files)
        if r.returncode != 130:
            p.append(f"SIGINT exit {r.returncode}")
        tried += 1
        ok += not p
        fails += p
    for i in range(args.random_kills // 2):
        store, h = str(base / f"ri{i}"), base / f"rih{i}"
        rc, _ = sc.mine_killed_after(tree, store, h, rnd.uniform(0.5, 6.0), signal.SIGINT)
        p = _resume_check(tree, store, h, clean, files)
        if rc not in (130, 0):
            p.append(f"SIGINT exit {rc}")
        tried += 1
        ok += not p
        fails += p
    record("SIGINT at each write + random moments (exit 130)", tried, ok, fails)

    # two local writers at once
    tried = ok = 0
    fails = []
    for i in range(3):
        store = str(base / f"c{i}")
        procs = [subprocess.Popen(sc.mine_cmd(tree, store), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=sc.env(home), cwd=sc.ROOT) for _ in range(2)]
        outs = [(p.wait(timeout=300), p.communicate()[1]) for p in procs]
        rcs = sorted(rc for rc, _ in outs)
        p = sc.problems(sc.snapshot(store, home), clean, files)
        refused = [e for rc, e in outs if rc == 2]
        if rcs not in ([0, 0], [0, 2]) or any("being written by another skel process" not in e for e in refused):
            p.append(f"exits {rcs}")
        tried += 1
        ok += not p
        fails += p
    record("two mines at once into one local store (second refused)", tried, ok, fails)

    # full disk
    mnt = base / "tiny"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(mnt)],
                      capture_output=True).returncode == 0:
        try:
            r = sc.run_mine(tree, str(mnt / "s"), home)
            p = [] if r.returncode == 2 and "disk holding it is full" in r.stderr else [f"full: {r.returncode}"]
            subprocess.run(["mount", "-o", "remount,size=64m", str(mnt)], check=True)
            p += _resume_check(tree, str(mnt / "s"), home, clean, files)
            record("full disk (600 KiB tmpfs), then room", 1, int(not p), p)
        finally:
            subprocess.run(["umount", str(mnt)], capture_output=True)
    else:
        rows.append(["full disk (tmpfs)", 0, 0, "mount not permitted: see tests/reliability (simulated)"])

    damaged_stores(base, tree, home, rnd, record)
    rows += server_faults(base, tree, home, clean, files)
    print(table(["fault", "tried", "survived", "failures"], rows))
    shutil.rmtree(base, ignore_errors=True)


def damaged_stores(base: Path, tree: Path, home: Path, rnd: random.Random, record) -> None:
    """Damaged stores under `skel suggest` (reads the store), the unchanged re-mine (answered
    from the file stamps, which must check the store first) and a mine of the tree with one
    file changed (the full path: opens the store to write)."""
    from skel.store.knowledge import mined_manifest

    damages = {
        "truncated": lambda db: db.write_bytes(db.read_bytes()[: db.stat().st_size // 3]),
        "garbled": lambda db: _garble(db, rnd),
        "emptied": lambda db: db.write_bytes(b""),
        "deleted": lambda db: db.unlink(),
        "not sqlite": lambda db: db.write_bytes(b"\0" * 8192),
    }
    edited = sorted(tree.rglob("*.py"))[0]

    def suggest(store: str) -> list[str]:
        return [sys.executable, "-m", "skel.cli", "suggest", str(KERNEL), "--store", store]

    cases = [  # (what, command, file to edit, run a suggest before the damage)
        ("suggest", suggest, None, False),
        # the suggest before leaves a read snapshot of this very database (skel/store/snapshot.py),
        # damaged in place after it: the snapshot must not answer for a damaged store
        ("suggest with a read snapshot", suggest, None, True),
        ("unchanged re-mine (stamps)", lambda store: sc.mine_cmd(tree, store), None, False),
        ("mine, one file changed", lambda store: sc.mine_cmd(tree, store), edited, False),
    ]
    for n, (case, cmd, edit, prime) in enumerate(cases):
        tried = ok = 0
        fails = []
        for name, damage in damages.items():
            store = base / f"d{n}-{name.replace(' ', '')}"
            shutil.copytree(base / "clean", store)
            # the short cuts must be there to take, or the rows measure the full path
            stamped = mined_manifest(str(store), tree.name).exists()
            if prime:
                p = subprocess.run(cmd(str(store)), capture_output=True, text=True, env=sc.env(home), cwd=sc.ROOT,
                                   timeout=300)
                stamped = stamped and p.returncode == 0 and (store / "skel-read" / "generation").exists()
            damage(store / "chroma.sqlite3")
            before = _digest(store)
            old, st = (edit.read_bytes(), edit.stat()) if edit else (b"", None)
            try:
                if edit:
                    edit.write_bytes(old + b"\n# edited\n")
                r = subprocess.run(cmd(str(store)), capture_output=True, text=True, env=sc.env(home), cwd=sc.ROOT,
                                   timeout=300)
            finally:
                if edit and st:  # the tree as it was, stamps included: later rows mine it
                    edit.write_bytes(old)
                    os.utime(edit, ns=(st.st_atime_ns, st.st_mtime_ns))
            lines = r.stderr.strip().splitlines()
            tried += 1
            good = (r.returncode == 2 and len(lines) == 1 and f"the store at {store} is damaged" in lines[0]
                    and _digest(store) == before and stamped)
            ok += good
            fails += [] if good else [f"{name}: {r.returncode} {lines[-1:]}" + ("" if stamped else " (not set up)")]
            shutil.rmtree(store, ignore_errors=True)
        record(f"damaged store, {case}: one line, exit 2, unchanged", tried, ok, fails)


def _garble(db: Path, rnd: random.Random) -> None:
    data = bytearray(db.read_bytes())
    for _ in range(50):
        at = rnd.randrange(len(data) - 64)
        data[at:at + 64] = rnd.randbytes(64)
    db.write_bytes(bytes(data))


def _digest(folder: Path) -> str:
    import hashlib

    h = hashlib.sha1()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()


# --- a Chroma server ---------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, path: Path, port: int | None = None) -> None:
        self.path, self.port = path, port or _free_port()
        self.url = f"http://localhost:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self) -> "Server":
        self.proc = subprocess.Popen([CHROMA, "run", "--path", str(self.path), "--port", str(self.port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("localhost", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("chroma server did not start")

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def rss_mib(self) -> float:
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0


def server_faults(base: Path, tree: Path, home: Path, clean: dict, files: set[str]) -> list[list]:
    rows = []
    # killed mid-mine (cold cache: the mine is parsing or writing), restarted, mined again
    srv = Server(base / "srv").start()
    h = base / "sh"
    m = subprocess.Popen(sc.mine_cmd(tree, srv.url), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=sc.env(h), cwd=sc.ROOT)
    time.sleep(3.0)
    srv.kill()
    t = time.monotonic()
    _, err = m.communicate(timeout=300)
    waited = time.monotonic() - t
    lines = err.strip().splitlines()
    p = [] if m.returncode == 2 and len(lines) == 1 and "stopped answering" in lines[0] else [f"{m.returncode}"]
    srv.start()
    p += _resume_check(tree, srv.url, h, clean, files)
    rows.append(["server killed mid-mine: error, restart, mine again", 1, int(not p),
                 "; ".join(p) or f"error after {waited:.1f}s: {lines[-1][:60] if lines else ''}"])

    # killed mid-suggest: down for good -> one line; back within the retries -> no error
    code = ("import sys, time\nfrom skel import api\nfor i in range(40):\n"
            f" api.suggest({str(KERNEL)!r}, store=sys.argv[1]); time.sleep(0.1)\nprint('done')")
    for restart in (False, True):
        c = subprocess.Popen([sys.executable, "-c", code, srv.url], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=sc.env(h), cwd=sc.ROOT)
        time.sleep(4.0)
        srv.kill()
        if restart:
            time.sleep(1.0)
            srv.start()
        out, err = c.communicate(timeout=300)
        if restart:
            good = c.returncode == 0 and out.strip() == "done"
            what = "server restarted mid-suggest loop: retried, no error"
        else:
            last = err.strip().splitlines()[-1]
            good = c.returncode != 0 and ("stopped answering" in last or "cannot reach the Chroma server" in last)
            what = "server killed mid-suggest: bounded retries, one error"
            srv.start()
        rows.append([what, 1, int(good), "-" if good else (err.strip().splitlines() or ["?"])[-1][:90]])
    p = sc.problems(sc.snapshot(srv.url, h), clean, files)
    rows.append(["server store after the kills equals a clean mine", 1, int(not p), "; ".join(p) or "-"])
    srv.kill()

    # two mines at once against one server: same tree (same source), then another tree too
    srv2 = Server(base / "srv2").start()
    tree2 = base / "tree2"
    shutil.copytree(tree, tree2)
    procs = [subprocess.Popen(sc.mine_cmd(t, srv2.url), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=sc.env(home), cwd=sc.ROOT) for t in (tree, tree, tree2)]
    rcs = [p.wait(timeout=300) for p in procs]
    snap = sc.snapshot(srv2.url, home)
    only_tree = dict(snap, kernels=[k for k in snap["kernels"] if k[1] == "tree"],
                     files=[f for f in snap["files"] if f[0] == "tree"],
                     sources=[s for s in snap["sources"] if s[0] == "tree"])
    p = [f"exits {rcs}"] if rcs != [0, 0, 0] else []
    p += [x for x in sc.problems(only_tree, clean, files) if "statistics" not in x and "index" not in x]
    if snap["count"] != 2 * len(clean["kernels"]) or snap["stats"]["_total"]["kernels"] != snap["count"]:
        p.append(f"count {snap['count']}, stats {snap['stats']['_total']}")
    if sorted(s[1] for s in snap["sources"]) != ["complete", "complete"]:
        p.append(f"sources {snap['sources']}")
    rows.append(["three mines at once against one server (2 same source)", 1, int(not p), "; ".join(p) or "-"])
    srv2.kill()
    return rows


# --- load ----------------------------------------------------------------------------------

_CLIENT = r"""
import json, sys, time
from skel.retriever.suggest import load_kernels, suggest_for
from skel.store.knowledge import KnowledgeBase
url, n, kernel = sys.argv[1], int(sys.argv[2]), sys.argv[3]
kb = KnowledgeBase.open(url, create=False)
(kf,) = load_kernels(kernel)
expect = json.loads(sys.argv[4])
print("ready", flush=True)
sys.stdin.readline()
lat, errors, wrong = [], [], 0
for _ in range(n):
    t = time.perf_counter()
    try:
        r = suggest_for(kf, kb)
        got = json.loads(json.dumps([(s.id, [str(e) for e in s.evidence]) for s in r.suggestions]))
        wrong += got != expect
    except Exception as exc:
        errors.append(f"{type(exc).__name__}: {exc}"[:200])
    lat.append(time.perf_counter() - t)
print(json.dumps({"lat": lat, "errors": errors, "wrong": wrong}))
"""

_REFERENCE = r"""
import json, sys
from skel.retriever.suggest import load_kernels, suggest_for
from skel.store.knowledge import KnowledgeBase
(kf,) = load_kernels(sys.argv[3])
r = suggest_for(kf, KnowledgeBase.open(sys.argv[1], create=False))
print(json.dumps([(s.id, [str(e) for e in s.evidence]) for s in r.suggestions]))
"""


def load(args) -> None:
    base = Path(tempfile.mkdtemp(prefix="skel-load-"))
    tree = sc.make_tree(base / "tree", args.files)
    home = base / "home"
    srv = Server(base / "srv").start()
    try:
        r = sc.run_mine(tree, srv.url, home)
        assert r.returncode == 0, r.stderr
        env = sc.env(home)
        ref = subprocess.run([sys.executable, "-c", _REFERENCE, srv.url, "0", str(KERNEL)], capture_output=True,
                             text=True, env=env, cwd=ROOT, check=True).stdout.strip()
        clients = [subprocess.Popen([sys.executable, "-c", _CLIENT, srv.url, str(args.requests), str(KERNEL), ref],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    env=env, cwd=ROOT) for _ in range(args.clients)]
        for c in clients:
            assert c.stdout is not None and c.stdout.readline().strip() == "ready"
        rss = [srv.rss_mib()]
        t0 = time.monotonic()
        for c in clients:
            assert c.stdin is not None
            c.stdin.write("go\n")
            c.stdin.flush()
        while any(c.poll() is None for c in clients):
            time.sleep(0.5)
            rss.append(srv.rss_mib())
        wall = time.monotonic() - t0
        results = []
        for c in clients:
            out, err = c.communicate()
            if c.returncode != 0:
                raise SystemExit(f"client failed: {err.strip()[-300:]}")
            results.append(json.loads(out.strip().splitlines()[-1]))
        lat = sorted(x for r in results for x in r["lat"])
        errors = [e for r in results for e in r["errors"]]
        wrong = sum(r["wrong"] for r in results)
        q = statistics.quantiles(lat, n=100, method="inclusive")
        third = max(1, len(rss) // 3)
        print(table(["clients", "requests", "errors", "wrong", "p50 ms", "p99 ms", "max ms", "req/s",
                     "server RSS MiB: before / first third / last third / peak"],
                    [[args.clients, len(lat), len(errors), wrong, f"{q[49] * 1000:.0f}", f"{q[98] * 1000:.0f}",
                      f"{lat[-1] * 1000:.0f}", f"{len(lat) / wall:.1f}",
                      f"{rss[0]:.0f} / {statistics.mean(rss[1:third + 1]):.0f} / "
                      f"{statistics.mean(rss[-third:]):.0f} / {max(rss):.0f}"]]))
        if errors:
            print("errors:", *sorted(set(errors))[:5], sep="\n  ")
    finally:
        srv.kill()
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="section", required=True)
    f = sub.add_parser("faults")
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--files", type=int, default=24)
    f.add_argument("--random-kills", type=int, default=6)
    ld = sub.add_parser("load")
    ld.add_argument("--clients", type=int, default=8)
    ld.add_argument("--requests", type=int, default=200)
    ld.add_argument("--files", type=int, default=24)
    reliability_fuzz.add_parser(sub)
    args = ap.parse_args()
    if args.section == "fuzz":
        sys.exit(reliability_fuzz.run(args))
    os.environ.setdefault("SKEL_EMBEDDER", "hash")
    # a shell's background job ignores SIGINT, and children inherit that: give them Ctrl-C back
    signal.signal(signal.SIGINT, signal.default_int_handler)
    {"faults": faults, "load": load}[args.section](args)


if __name__ == "__main__":
    main()
