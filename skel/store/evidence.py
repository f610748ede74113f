"""Verification evidence: one typed record per run of ``skel verify`` (or of a skeleton's
example pair), stored in the knowledge base and shipped with the package.

A record says what ran (skeleton, kernel, shapes, dtypes), where (device, compute
capability, torch/Triton/driver versions), what came out (max error per output, speedup
median and spread, the noise floor measured in the same run, the timing method) and the
verdict. Statuses (``validated``, ``refuted`` ...) are computed from these records, never
written by hand.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from dataclasses import asdict, dataclass, field, fields
from typing import Any

#: What a run can conclude, from the first stage that decides it:
VERDICTS = (
    "not-applied",  # the candidate does not parse, or does not show the skeleton's technique
    "no-op",  # the candidate compiles to the same machine code as the original
    "failed",  # the candidate does not compile or launch (message in ``detail``)
    "wrong",  # different results from the reference (or a cheat caught)
    "tests-failed",  # the project's own tests fail with the candidate
    "correct",  # same results; not timed (no GPU, or a check-only run)
    "slower",  # same results, slower beyond the noise floor
    "no-effect",  # same results, difference inside the noise floor
    "faster",  # same results, faster beyond the noise floor
)
SUBJECTS = ("example", "suite", "replay", "user")


@dataclass
class ShapeResult:
    """One shape and dtype of a timed run."""

    shape: str  # "M=4096,N=32768"
    dtype: str
    speedup: float | None = None  # original time / candidate time (median)
    spread: float | None = None  # half the interquartile range of the ratio
    original_ms: float | None = None
    candidate_ms: float | None = None
    max_error: float | None = None
    note: str = ""


@dataclass
class Verification:
    skeleton: str  # skeleton id; "" for a user's change not tied to one
    kernel: str  # "repo/path.py::function", or "file:<sha1 of the original file>"
    verdict: str  # one of VERDICTS
    subject: str = "user"  # one of SUBJECTS: the skeleton's own example, a suite kernel, a replayed pair
    date: str = ""  # ISO 8601
    device: str | None = None  # "NVIDIA H200", "cpu (TRITON_INTERPRET=1)"
    cc: int | None = None  # compute capability as an int (90)
    backend: str | None = None  # "cuda" | "rocm" | "cpu"
    torch: str | None = None
    triton: str | None = None
    driver: str | None = None
    shapes: list[str] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=list)
    max_error: dict[str, float] = field(default_factory=dict)  # per output, worst over shapes
    speedup: float | None = None  # geometric mean over the timed shapes
    spread: float | None = None
    noise: float | None = None  # the original timed against itself in the same run
    timing: str | None = None  # how it was timed ("interleaved do_bench, L2 flushed", "compile count")
    per_shape: list[ShapeResult] = field(default_factory=list)
    detail: str = ""  # one line: what decided the verdict
    measure: str = "kernel"  # kernel time ratio, or a launch-side measure (compile, launch, first-call)
    notes: list[str] = field(default_factory=list)  # what could not be checked, and why

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}; one of {', '.join(VERDICTS)}")
        if self.subject not in SUBJECTS:
            raise ValueError(f"unknown subject {self.subject!r}; one of {', '.join(SUBJECTS)}")
        self.per_shape = [s if isinstance(s, ShapeResult) else ShapeResult(**s) for s in self.per_shape]

    @property
    def correct(self) -> bool:
        return self.verdict in ("correct", "slower", "no-effect", "faster")

    @property
    def key(self) -> str:
        """One record per (skeleton, kernel, subject, device, triton): a rerun replaces it."""
        return "|".join([self.skeleton, self.kernel, self.subject, self.device or "", self.triton or ""])

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Verification":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})

    # chroma metadata is flat and holds no nulls: nested values travel as JSON
    def to_metadata(self) -> dict[str, Any]:
        md: dict[str, Any] = {}
        for k, v in self.to_dict().items():
            if v is None:
                continue
            md[k] = json.dumps(v) if isinstance(v, (list, dict)) else v
        return md

    @classmethod
    def from_metadata(cls, md: dict[str, Any]) -> "Verification":
        d: dict[str, Any] = {}
        for f in fields(cls):
            if f.name not in md:
                continue
            v = md[f.name]
            if f.name in ("shapes", "dtypes", "max_error", "per_shape", "notes") and isinstance(v, str):
                v = json.loads(v)
            d[f.name] = v
        return cls(**d)


#: Runs made on the GPU machine by ``benchmarks/evidence/verify_catalog.py`` and
#: ``benchmarks/evidence/verify_suite``, shipped so a new user sees statuses without a GPU.
SHIPPED = Path(__file__).resolve().parent.parent / "data" / "verifications.jsonl"


@lru_cache(maxsize=4)
def shipped_verifications(path: Path = SHIPPED) -> tuple[Verification, ...]:
    if not path.is_file():
        return ()
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                out.append(Verification.from_dict(json.loads(line)))
            except (ValueError, TypeError) as exc:  # a damaged data file must say where
                raise ValueError(f"{path}:{n}: not a verification record: {exc}") from exc
    return tuple(out)


def merge_evidence(*groups: "list[Verification] | tuple[Verification, ...]") -> dict[str, list[Verification]]:
    """Group runs by skeleton; a later group's run replaces an earlier one with the same key."""
    by_key: dict[str, Verification] = {}
    for group in groups:
        for rec in group:
            by_key[rec.key] = rec
    out: dict[str, list[Verification]] = {}
    for rec in by_key.values():
        out.setdefault(rec.skeleton, []).append(rec)
    return out


# --- hand-checked track record -----------------------------------------------------------
#
# Verification says whether a skeleton's *template* is right and fast. It does not say
# whether skel was right to *suggest* it for somebody's kernel. That is what the hand-checked
# precision draws measure: people reading real sglang and vLLM kernels judged every
# suggestion of skel's top 5s (`benchmarks/retrieval/precision.json`). Their verdicts, counted
# per skeleton, ship with the package (`precision.py track-record` writes the file) so a
# reader can weigh a suggestion by how often it held up on kernels skel was not tuned on.

TRACK_RECORD = SHIPPED.parent / "track_record.json"


@dataclass(frozen=True)
class TrackRecord:
    """How often people judged a skeleton's suggestions right on real kernels (verdicts
    ``correct`` / ``incorrect``; ``unclear`` ones are counted apart and in neither)."""

    correct: int
    incorrect: int
    unclear: int
    packages: tuple[str, ...]  # where the judged kernels come from ("sglang==0.5.14", ...)

    @property
    def judged(self) -> int:
        return self.correct + self.incorrect

    @property
    def rate(self) -> float | None:
        return self.correct / self.judged if self.judged else None

    def line(self) -> str:
        """"judged right in 42 of 147 of its suggestions on sglang==0.5.14, vllm==0.33.0 kernels
        (29%; every ranking so far)": the verdicts are on what skel suggested when each draw was
        ranked, so suggestions a later rule stopped making still count."""
        if not self.judged:
            return f"{self.unclear} of its suggestion(s) judged, none decided either way"
        return (f"judged right in {self.correct} of {self.judged} of its suggestions on {', '.join(self.packages)} "
                f"kernels ({self.rate:.0%}; every ranking so far)")

    def to_dict(self) -> dict[str, Any]:
        return {"correct": self.correct, "incorrect": self.incorrect, "unclear": self.unclear,
                "judged": self.judged, "rate": None if self.rate is None else round(self.rate, 3),
                "packages": list(self.packages), "line": self.line()}


@lru_cache(maxsize=4)
def track_records(path: Path = TRACK_RECORD) -> dict[str, TrackRecord]:
    """Each skeleton's hand-checked record (none for a skeleton never judged); empty when the
    file is not there. A damaged file raises ValueError naming it."""
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        packages = tuple(data["packages"])
        return {sid: TrackRecord(int(c["correct"]), int(c["incorrect"]), int(c["unclear"]), packages)
                for sid, c in data["skeletons"].items()}
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ValueError(f"{path}: not a track record file: {exc!r}") from exc


def track_record_of(skeleton_id: str) -> dict[str, Any] | None:
    """A skeleton's shipped record as the answers carry it (``TrackRecord.to_dict``), or None
    when people never judged one of its suggestions."""
    record = track_records().get(skeleton_id)
    return record.to_dict() if record is not None else None
