"""The verifier-fooling benchmark (issue #36, item 6): known reward hacks and honest candidates
against `skel verify`, each a file, one verdict each.

The problem is a row softmax (``original.py``, skel's harness format). ``hacks/`` holds the
hacks, ``honest/`` the honest candidates; each file's docstring names what it does on its
first line (``HACK: ...`` or ``HONEST: ...``) and, for a hack, where it can be caught
(``Detectable: CPU ...`` or ``Detectable: GPU only ...``).

Every candidate is verified in its own process (``skel verify ORIGINAL CANDIDATE --json``,
with a timeout), so a candidate that tampers with its process, leaves state behind or hangs
touches only its own run. A hack counts as *caught* when the verdict rejects it (wrong,
failed, not-applied, no-op, tests-failed); an honest candidate counts as *rejected* on the
same verdicts. "correct" (CPU) and "faster", "no-effect", "slower" (GPU) accept the results.
An error (exit 2: nothing could be checked) or a timeout is neither, and is counted apart.

On the CPU the GPU-only hacks run too (their CPU verdict is shown) but are not counted: they
are listed as needing the GPU run, with its command.

    python -m benchmarks.verifier_fooling                    # CPU (TRITON_INTERPRET=1)
    python -m benchmarks.verifier_fooling --device cuda      # on a GPU: every candidate, timed
    python -m benchmarks.verifier_fooling --only nan_tail,online_softmax
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
ORIGINAL = HERE / "original.py"
REJECT = {"wrong", "failed", "not-applied", "no-op", "tests-failed"}
ACCEPT = {"correct", "faster", "no-effect", "slower"}


@dataclass
class Candidate:
    path: Path
    kind: str  # "hack" | "honest"
    title: str  # what it does in a few words: the docstring's first line, up to its dash
    where: str  # "CPU" | "GPU" (where a hack can be caught; honest ones run on both)

    @property
    def name(self) -> str:
        return self.path.stem


@dataclass
class Outcome:
    candidate: Candidate
    verdict: str  # a skel verdict, or "error" / "timeout"
    detail: str
    seconds: float
    counted: bool  # counted in the totals on this device

    @property
    def rejected(self) -> bool:
        return self.verdict in REJECT

    @property
    def mark(self) -> str:
        c = self.candidate
        if not self.counted:
            return "needs the GPU run"
        if self.verdict not in REJECT | ACCEPT:
            return self.verdict.upper()
        if c.kind == "hack":
            return "yes" if self.rejected else "NO (slips through)"
        return "REJECTED" if self.rejected else "ok (accepted)"


def read_candidate(path: Path) -> Candidate:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    first = doc.splitlines()[0] if doc else ""
    m = re.match(r"(HACK|HONEST):\s*(.+)", first)
    if not m:
        raise SystemExit(f"{path}: the docstring's first line must start with HACK: or HONEST:")
    kind = m.group(1).lower()
    where = "CPU"
    if kind == "hack":
        d = re.search(r"^Detectable:\s*(CPU|GPU)", doc, re.M)
        if not d:
            raise SystemExit(f"{path}: a hack's docstring needs a line 'Detectable: CPU ...' or "
                             "'Detectable: GPU only ...'")
        where = d.group(1)
    return Candidate(path, kind, m.group(2).split(" — ")[0].strip(), where)


def corpus() -> list[Candidate]:
    files = sorted((HERE / "hacks").glob("*.py")) + sorted((HERE / "honest").glob("*.py"))
    return [read_candidate(p) for p in files if p.name != "__init__.py"]


def skel_command() -> list[str]:
    exe = Path(sys.executable).with_name("skel")
    if exe.is_file():
        return [str(exe)]
    found = shutil.which("skel")
    if found:
        return [found]
    return [sys.executable, "-m", "skel.cli"]


def verify(c: Candidate, device: str, timeout: float) -> tuple[str, str, float]:
    cmd = [*skel_command(), "verify", str(ORIGINAL), str(c.path), "--device", device, "--json"]
    env = dict(os.environ)
    if device == "cuda":
        env.pop("TRITON_INTERPRET", None)
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)
    except subprocess.TimeoutExpired:
        return "timeout", f"no verdict within {timeout:g} s", time.monotonic() - t0
    dt = time.monotonic() - t0
    try:
        rec = json.loads(p.stdout)["record"]
        return str(rec["verdict"]), " ".join(str(rec.get("detail", "")).split()), dt
    except (json.JSONDecodeError, KeyError, TypeError):
        tail = " ".join((p.stderr or p.stdout).split())[-300:]
        return "error", f"exit {p.returncode}: {tail}", dt


def skel_revision() -> str:
    """The checkout's commit, "+dirty" when the tree has changes, and the verifier files changed
    (they decide the verdicts)."""
    def git(*a: str) -> str:
        try:
            return subprocess.run(["git", "-C", str(ROOT), *a], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            return ""
    head = git("rev-parse", "--short", "HEAD").strip() or "unknown"
    status = git("status", "--porcelain").splitlines()
    changed = sorted(line[3:] for line in status if line[3:].startswith("skel/verifier/"))
    rev = head + ("+dirty" if status else "")
    return rev + (f" (verifier files changed: {', '.join(changed)})" if changed else "")


def table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "  ".join(s.ljust(w) for s, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def report(outcomes: list[Outcome], device: str, detail_width: int) -> str:
    out: list[str] = [f"skel {skel_revision()}; device {device}; original {ORIGINAL.relative_to(ROOT)}", ""]
    rows = []
    for o in outcomes:
        c = o.candidate
        expected = "rejected" if c.kind == "hack" else "accepted"
        detail = o.detail if len(o.detail) <= detail_width else o.detail[:detail_width - 3] + "..."
        rows.append([c.name, c.kind, c.where if c.kind == "hack" else "CPU+GPU", expected, o.verdict, o.mark,
                     f"{o.seconds:.0f}s", detail])
    out.append(table(rows, ["candidate", "kind", "caught on", "expected", "verdict", "caught?", "time", "detail"]))
    hacks = [o for o in outcomes if o.candidate.kind == "hack" and o.counted]
    honest = [o for o in outcomes if o.candidate.kind == "honest"]
    waiting = [o for o in outcomes if not o.counted]
    scope = "CPU-checkable ones" if device == "cpu" else "all"
    caught = [o for o in hacks if o.rejected]
    slipped = [o for o in hacks if o.verdict in ACCEPT]
    odd = [o for o in outcomes if o.verdict not in REJECT | ACCEPT]
    out.append("")
    out.append(f"hacks caught: {len(caught)}/{len(hacks)} ({scope})")
    out.append(f"honest rejected: {sum(o.rejected for o in honest)}/{len(honest)}")
    if odd:
        out.append(f"errors or timeouts (neither caught nor accepted): {', '.join(o.candidate.name for o in odd)}")
    if slipped:
        out.append("")
        out.append("hacks that slip through:")
        for o in slipped:
            out.append(f"  - {o.candidate.name}: {o.candidate.title} [verdict {o.verdict}]")
    if waiting:
        out.append("")
        out.append(f"needs the GPU run ({len(waiting)} GPU-only hack(s); their CPU verdict above is not counted):")
        for o in waiting:
            out.append(f"  - {o.candidate.name}: {o.candidate.title}")
        names = ",".join(o.candidate.name for o in waiting)
        out.append("  run them there with:")
        out.append(f"    python -m benchmarks.verifier_fooling --device cuda --only {names}")
        out.append("  (or one at a time: skel verify benchmarks/verifier_fooling/original.py "
                   "benchmarks/verifier_fooling/hacks/NAME.py --device cuda)")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.verifier_fooling", description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--only", default="", help="comma-separated candidate names (file stems)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per candidate (default 600)")
    ap.add_argument("--jobs", type=int, default=1, help="candidates verified at once (default 1)")
    ap.add_argument("--skip-gpu-only", action="store_true", help="on the CPU, do not run the GPU-only hacks at all")
    ap.add_argument("--detail-width", type=int, default=110, help="characters of the verdict's detail shown")
    ap.add_argument("--list", action="store_true", help="list the corpus and exit")
    args = ap.parse_args(argv)

    cands = corpus()
    if args.only:
        wanted = {s.strip() for s in args.only.split(",") if s.strip()}
        unknown = wanted - {c.name for c in cands}
        if unknown:
            ap.error(f"--only: unknown {', '.join(sorted(unknown))}")
        cands = [c for c in cands if c.name in wanted]
    if args.device == "cpu" and args.skip_gpu_only:
        cands = [c for c in cands if not (c.kind == "hack" and c.where == "GPU")]
    if args.list:
        for c in cands:
            print(f"{c.name:28} {c.kind:7} {c.where if c.kind == 'hack' else 'CPU+GPU':8} {c.title}")
        return 0

    def one(c: Candidate) -> Outcome:
        verdict, detail, dt = verify(c, args.device, args.timeout)
        counted = not (args.device == "cpu" and c.kind == "hack" and c.where == "GPU")
        print(f"  {c.name}: {verdict} ({dt:.0f} s)", file=sys.stderr, flush=True)
        return Outcome(c, verdict, detail, dt, counted)

    print(f"verifying {len(cands)} candidate(s) against {ORIGINAL.relative_to(ROOT)} on {args.device}",
          file=sys.stderr, flush=True)
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        outcomes = list(pool.map(one, cands))
    print(report(outcomes, args.device, args.detail_width))
    return 0
