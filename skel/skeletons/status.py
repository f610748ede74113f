"""A skeleton's status, computed from its verification evidence — never written by hand.

For a target environment (backend, compute capability, Triton version and, when given, a
GPU name), only runs made there count (a run on sm_90 says nothing about sm_80; with a GPU
name, a run on an H200 says nothing about an H100, although both are sm_90). From those:

- ``refuted``      — the latest run of some pair gave wrong results or failed to launch, or
                     the skeleton's own example is slower there (a wrong template is a bug
                     to fix, and until it is fixed, users are told);
- ``validated``    — same results and a speedup beyond the noise floor of at least
                     ``VALIDATED_MIN`` on at least one kernel *other than* the skeleton's own
                     example (a suite kernel or a replayed real before/after pair);
- ``demonstrated`` — such a speedup only on its own example;
  for a skeleton that pays in correctness or accuracy (``Skeleton.pays_in``), ``validated`` and
  ``demonstrated`` mean the same of *what it pays in*: a GPU run where the before is wrong and
  the after right ("fixes ..."), or where the after's error against float64 is at least 10x
  below the before's ("reduces the error ..."); its speed ratio is then its stated cost;
- ``no-effect``    — every timed run landed inside the noise floor;
- ``stale``        — it has runs on this hardware, but none on the Triton the user has
                     (major.minor), so the compiler that made it pay is not the one in use;
- ``draft``        — no run in this environment.

The one-line summary is what ``skel suggest`` shows per suggestion ("1.42× on NVIDIA H200,
Triton 3.6: 3 kernels"; "slower on NVIDIA H200 at M=4096,N=32768"); ``summarize`` counts a
listing's statuses and names the evidence they rest on (the last line of `skel skeletons list`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable

from skel.skeletons.base import Status, Target

if TYPE_CHECKING:
    from skel.store.evidence import Verification

VALIDATED_MIN = 1.05  # the bar for "it pays", beyond the measured noise floor
TIMED = ("faster", "slower", "no-effect")


def _minor(version: str | None) -> str | None:
    if not version:
        return None
    parts = version.split(".")
    return ".".join(parts[:2])


def gpu_matches(device: str | None, gpu: str | None) -> bool:
    """Is ``device`` ("NVIDIA H100 80GB HBM3") the GPU named ``gpu`` ("H100", "h100")? A
    case-insensitive substring match; no name matches any device, a run without a device none."""
    if not gpu:
        return True
    return device is not None and gpu.strip().lower() in device.lower()


def in_environment(rec: "Verification", target: Target) -> bool:
    """Does this run speak for the target? Unknown target facts do not exclude a run; a
    GPU name, when the target gives one, does: the run must have been made on that GPU."""
    if rec.backend == "cpu":
        return False  # the interpreter checks correctness, it says nothing about speed
    if target.backend is not None and rec.backend is not None and rec.backend != target.backend:
        return False
    if target.cc is not None and rec.cc is not None and rec.cc != target.cc:
        return False
    if target.gpu and not gpu_matches(rec.device, target.gpu):
        return False
    return True


@dataclass
class StatusReport:
    status: Status
    line: str  # one line for people: what the evidence says
    basis: Status | None = None  # for STALE: what the evidence said on the Triton it ran on
    speedup: float | None = None  # geomean of the kernel-time runs beyond the bar (what the line shows)
    expected: float | None = None  # geomean of *every* kernel-time run, slower ones included (ranks)
    kernels: int = 0  # distinct kernels with a speedup beyond noise
    warnings: list[str] = field(default_factory=list)  # slower shapes, wrong results, staleness
    records: list["Verification"] = field(default_factory=list)
    paid_in: str = "speed"  # "correctness"/"accuracy" when a fix's GPU run decided the status

    @property
    def speed_basis(self) -> Status | None:
        """The basis as speed sees it: a correctness or accuracy fix shown on a GPU measured no
        speedup, so the ranking's speed evidence reads it as unmeasured (draft)."""
        return Status.DRAFT if self.paid_in != "speed" else self.basis

    def to_dict(self) -> dict:
        return {"status": self.status.value, "basis": self.basis.value if self.basis else None,
                "line": self.line, "speedup": self.speedup, "expected": self.expected, "kernels": self.kernels,
                "warnings": self.warnings,
                "records": [r.to_dict() for r in self.records]}


def _where(rec: "Verification") -> str:
    bits = [rec.device or "?"]
    if rec.triton:
        bits.append(f"Triton {_minor(rec.triton)}")
    return ", ".join(bits)


def _geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def _gain(faster: list["Verification"], speed: float | None) -> str:
    if speed is not None:
        return f"{speed:.2f}x"
    best = max(faster, key=lambda r: r.speedup or 0)
    return f"{best.speedup or 0:.2f}x less {best.measure} time (not kernel time)"


def status_of(records: list["Verification"], target: Target | None = None, *,
              triton_bound: bool = True, pays_in: str = "speed") -> StatusReport:
    """The status on ``target`` from the runs. ``triton_bound``: the technique is compiled by
    Triton, so runs on another Triton version make it stale; a CUDA C++ technique (built by
    nvcc) is not, and its runs never go stale for a Triton version."""
    target = target or Target()
    mine = [r for r in records if in_environment(r, target)]
    # status is per (architecture, backend, Triton): where runs on the target's Triton exist,
    # they alone decide; runs on other versions speak only when there are none (then stale)
    want_minor = _minor(target.triton) if triton_bound and target.triton else None
    if want_minor and any(_minor(r.triton) == want_minor for r in mine if r.triton):
        mine = [r for r in mine if r.triton and _minor(r.triton) == want_minor]
    cpu_ok = [r for r in records if r.backend == "cpu" and r.correct]
    if not mine:
        line = "not verified on a GPU" + (" (correct under the CPU interpreter)" if cpu_ok else "")
        others = sorted({_where(r) for r in records if r.backend != "cpu"})
        if others:
            line = f"not verified here; runs exist on {'; '.join(others)}"
        return StatusReport(Status.DRAFT, line, Status.DRAFT, records=records)

    warnings: list[str] = []
    paid_in = "speed"
    broken = [r for r in mine if r.verdict in ("wrong", "failed")]
    for r in broken:
        what = "wrong results" if r.verdict == "wrong" else "fails to launch"
        warnings.append(f"{what} on {_where(r)} ({r.subject} {r.kernel}): {r.detail}".rstrip(": "))
    for r in mine:
        for s in r.per_shape:
            margin = max(r.noise or 0.0, s.spread or 0.0, 0.02)
            if s.speedup is not None and r.verdict in TIMED and s.speedup < 1.0 - margin:
                warnings.append(f"slower on {_where(r)} at {s.shape} ({s.speedup:.2f}x, {r.kernel})")

    faster = [r for r in mine if r.verdict == "faster" and (r.speedup or 0) >= VALIDATED_MIN]
    other = [r for r in faster if r.subject != "example"]
    own = [r for r in faster if r.subject == "example"]
    own_slower = [r for r in mine if r.subject == "example" and r.verdict == "slower"]
    # a kernel-time (or launch-latency) ratio is what a user's kernel feels; a compile-time
    # ratio over a sequence of new shapes is real but another axis, and ranks no kernel up
    speed = _geomean([r.speedup for r in faster if r.speedup and r.measure in ("kernel", "launch")])
    # what applying it is expected to give: every timed kernel run counts, a slower one too
    expected = _geomean([r.speedup for r in mine if r.speedup and r.verdict in TIMED
                         and r.measure in ("kernel", "launch")])
    kernels = len({r.kernel for r in faster})
    # every machine the counted runs came from, not the first one's alone
    where = " and ".join(sorted({_where(r) for r in (other or own or mine)}))

    # what a correctness or accuracy fix pays in, shown on a GPU (benchmarks.evidence.verify_catalog
    # writes these details: the before wrong where the after is right, or its error cut >= 10x)
    shown = [r for r in mine if r.verdict == "correct" and r.detail.startswith(("fixes", "reduces the error"))]
    if pays_in != "speed" and not broken and shown:
        r = next((r for r in shown if r.subject != "example"), shown[0])
        status = Status.VALIDATED if r.subject != "example" else Status.DEMONSTRATED
        cost = ""
        if r.speedup:
            cost = f"; costs {r.speedup:.2f}x" if r.speedup < 0.98 else "; no measurable speed cost"
        on = "on its own example only" if r.subject == "example" else f"on {r.kernel}"
        line = f"{r.detail} on {_where(r)}, {on}{cost}"
        paid_in = pays_in
    elif pays_in != "speed" and not broken and not faster and any(r.verdict in TIMED for r in mine):
        # an accuracy or correctness fix is judged by the error it removes, not by speed: a
        # correct run that is slower or flat states its cost, and refutes nothing
        status = Status.DRAFT
        r = min((r for r in mine if r.verdict in TIMED), key=lambda r: r.speedup or 0)
        cost = f"costs {r.speedup:.2f}x" if r.speedup and r.speedup < 1 else "no measurable speed cost"
        on = "its own example" if r.subject == "example" else r.kernel
        line = f"correct on {_where(r)}, {cost} on {on}; it pays in {pays_in}, which these runs do not measure"
    elif broken or (own_slower and not other and pays_in == "speed"):
        status = Status.REFUTED
        if broken:
            line = warnings[0]
        else:
            r = own_slower[0]
            line = f"its own example is slower on {_where(r)} ({r.speedup or 0:.2f}x)"
    elif other:
        status = Status.VALIDATED
        line = f"{_gain(faster, speed)} on {where}: {kernels} kernel{'s' if kernels != 1 else ''}"
    elif own:
        status = Status.DEMONSTRATED
        line = f"{_gain(faster, speed)} on {where}, on its own example only"
    elif any(r.verdict in ("no-effect", "no-op") for r in mine) and not any(r.verdict == "slower" for r in mine):
        status = Status.NO_EFFECT
        noop = next((r for r in mine if r.verdict == "no-op"), None)
        line = (f"compiles to the same machine code as the original on {_where(noop)}" if noop
                else f"no measurable effect on {where}")
    elif any(r.verdict == "slower" for r in mine):
        status = Status.REFUTED
        r = next(r for r in mine if r.verdict == "slower")
        line = f"slower on {_where(r)} ({r.speedup or 0:.2f}x, {r.kernel})"
    elif any(r.verdict == "faster" for r in mine):
        status = Status.DRAFT
        r = max((r for r in mine if r.verdict == "faster"), key=lambda r: r.speedup or 0)
        line = f"{r.speedup or 0:.3f}x on {_where(r)}: beyond the noise, under the {VALIDATED_MIN}x bar"
    else:
        status = Status.DRAFT
        fix = next((r for r in mine if r.verdict == "correct" and r.detail.startswith("fixes")), None)
        line = f"{fix.detail} on {_where(fix)}" if fix else f"correct on {where}; not timed"

    basis = status
    tried = {_minor(r.triton) for r in mine if r.triton}
    want = _minor(target.triton)
    if triton_bound and want and tried and want not in tried and status is not Status.REFUTED:
        versions = ", ".join(sorted(t for t in tried if t))
        warnings.append(f"verified on Triton {versions}; the target has {target.triton}")
        line = f"{status.value} on Triton {versions} (target {target.triton}): {line}"
        status = Status.STALE
    return StatusReport(status, line, basis, speed, expected, kernels, warnings, mine, paid_in)


def evidence_score(report: StatusReport) -> float:
    """The ranking's ``evidence`` component in [0, 1]: measured speedups lift a skeleton,
    refuted and no-effect ones sink, unverified ones sit in between. Stale evidence counts
    at 80 % (another Triton may compile it differently)."""
    basis = report.speed_basis or report.status
    # the expected speedup over every kernel it was timed on, not its best one: a technique
    # that paid 2x on its own example and lost on two suite kernels expects about nothing
    mean = report.expected if report.expected is not None else report.speedup
    gain = min(1.0, math.log(mean) / math.log(2.0)) if mean and mean > 1 else 0.0
    score = {Status.VALIDATED: 0.5 + 0.5 * gain, Status.DEMONSTRATED: 0.3 + 0.4 * gain,
             Status.DRAFT: 0.25, Status.NO_EFFECT: 0.0, Status.REFUTED: 0.0}.get(basis, 0.25)
    return score * (0.8 if report.status is Status.STALE else 1.0)



@dataclass
class StatusSummary:
    """A listing's statuses counted, and the evidence they rest on: which GPUs and Triton
    versions the runs that decided them came from. Counted from the very reports the
    listing shows, so the two cannot disagree."""

    target: Target
    triton_installed: bool  # the target's Triton is the installed one (not given by hand)
    counts: dict[str, int]  # every status, in ``Status`` order, zeros included
    total: int
    paying: int  # validated + demonstrated
    evidence: dict[str, list[str]]  # device -> Triton versions (major.minor) of the runs that counted
    elsewhere: list[str]  # devices with runs that did not count here (another GPU, arch or backend)
    line: str

    def to_dict(self) -> dict:
        t = self.target
        return {"target": {"backend": t.backend, "cc": t.cc, "triton": t.triton, "gpu": t.gpu},
                "triton_installed": self.triton_installed, "counts": self.counts, "total": self.total,
                "validated_or_demonstrated": self.paying,
                "share": round(self.paying / self.total, 4) if self.total else 0.0,
                "evidence": self.evidence, "elsewhere": self.elsewhere, "line": self.line}


def _target_words(target: Target, triton_installed: bool) -> str:
    bits = [b for b in (target.backend, f"sm_{target.cc}" if target.cc else None) if b]
    if target.triton:
        bits.append(f"Triton {target.triton}" + (" (installed)" if triton_installed else ""))
    else:
        bits.append("any Triton")
    bits.append(f"GPU {target.gpu}" if target.gpu else "any GPU")
    return ", ".join(bits)


def summarize(reports: list[StatusReport], target: Target, *, triton_installed: bool = False,
              runs: Iterable["Verification"] = ()) -> StatusSummary:
    """Count ``reports`` (one per listed skeleton, computed for ``target``) by status and say
    where the runs that decided them were made; ``runs``: every run the reports were computed
    from, to name the GPUs whose runs did not count (another GPU than ``target.gpu``)."""
    counts = {s.value: 0 for s in Status}
    for r in reports:
        counts[r.status.value] += 1
    total = len(reports)
    paying = counts[Status.VALIDATED.value] + counts[Status.DEMONSTRATED.value]
    found: dict[str, set[str]] = {}
    for rep in reports:
        for rec in rep.records:
            if in_environment(rec, target) and rec.device:
                minor = _minor(rec.triton)
                found.setdefault(rec.device, set()).update([minor] if minor else [])
    evidence = {d: sorted(v, key=lambda m: tuple(int(x) for x in m.split(".") if x.isdigit()))
                for d, v in sorted(found.items())}
    elsewhere = sorted({r.device for r in runs if r.device and r.backend != "cpu" and r.device not in evidence})
    if evidence:
        where = "evidence from " + ", ".join(d + (f" on Triton {' and '.join(v)}" if v else "")
                                             for d, v in evidence.items())
    else:
        what = f"a GPU named {target.gpu!r}" if target.gpu else "this target"
        where = f"no run measured on {what}" + (f"; runs exist on {', '.join(elsewhere)}" if elsewhere else "")
    share = f"{round(100 * paying / total)}%" if total else "0%"
    line = (f"status for {_target_words(target, triton_installed)} ({where}): "
            + ", ".join(f"{k} {v}" for k, v in counts.items())
            + f" — {paying} of {total} ({share}) validated or demonstrated")
    return StatusSummary(target, triton_installed, counts, total, paying, evidence, elsewhere, line)
