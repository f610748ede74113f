"""What a skeleton is: an optimisation technique with the conditions under which it
applies, a before → after template, documentation under fixed headings, a status and
evidence.

Each skeleton lives in its own folder, ``skel/skeletons/catalog/<id>/`` (see ``registry``).
Its ``skeleton.py`` docstring *is* its documentation, under these headings (the registry
refuses a skeleton that lacks one)::

    ## What it does
    ## Why it is faster
    ## Applies when
    ## Does not apply when
    ## References

The example section is generated from ``before``/``after``; evidence comes from the
store (mined occurrences, verification runs) and is never written by hand.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import TYPE_CHECKING, Callable

from skel.errors import SkeletonError
from skel.skeletons.conditions import ALWAYS, Condition, Hit

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts
    from skel.kernels.workload import Workload

DOC_HEADINGS = ("What it does", "Why it is faster", "Applies when", "Does not apply when", "References")
ID_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


class Category(str, Enum):
    TUNING = "tuning and specialization"
    MEMORY = "memory access"
    ARITHMETIC = "arithmetic and precision"
    DECOMPOSITION = "decomposition and scheduling"
    FUSION = "fusion and recomputation"
    HOST = "host and runtime"


class Status(str, Enum):
    """Computed from verification evidence by ``skel.skeletons.status``, never written in a module."""

    VALIDATED = "validated"  # pays beyond noise on a kernel other than its own example, here
    DEMONSTRATED = "demonstrated"  # pays on its own example only
    NO_EFFECT = "no-effect"  # every timed run inside the noise floor
    REFUTED = "refuted"  # wrong, fails to launch, or slower, here
    STALE = "stale"  # verified here, but on another Triton version than the target's
    DRAFT = "draft"  # no run in this environment


BOUNDS = ("memory", "compute", "latency", "occupancy")
#: what a skeleton's application buys (``Skeleton.pays_in``)
PAYS_IN = ("speed", "accuracy", "correctness")

#: what ``python -m skel.skeletons.new`` leaves wherever a person must write something: a
#: skeleton still holding it is refused, so a scaffold never ships by accident
SCAFFOLD_MARKER = "FILL IN"

#: conditions every launched kernel meets: they point at a line of the kernel but say nothing
#: about a technique, so they are no foothold for a near miss or a related suggestion
GENERIC_CONDITIONS = frozenset({"kernel-entry"})


def foothold(hits: list[Hit]) -> bool:
    """Does one of a skeleton's own conditions hold on a line of the kernel?"""
    return any(h.lines and h.condition not in GENERIC_CONDITIONS for h in hits)


#: the languages extractors exist for (skel.kernels.extract)
LANGUAGES = {"triton", "cuda"}


def version_tuple(v: str) -> tuple[int, ...]:
    """`3.6.0+git1` -> (3, 6, 0): the numeric parts, for comparing Triton versions."""
    parts = []
    for piece in v.split("."):
        m = re.match(r"\d+", piece)
        if not m:
            break
        parts.append(int(m.group(0)))
    return tuple(parts)


def version_in(version: str, spec: str) -> bool:
    """``version_in("3.7.1", ">=3.0,<3.9")``: a small, dependency-free range check."""
    v = version_tuple(version)
    for clause in filter(None, (c.strip() for c in spec.split(","))):
        m = re.match(r"(>=|<=|==|!=|>|<)\s*([\d.]+)", clause)
        if not m:
            raise ValueError(f"bad version clause {clause!r} in {spec!r}")
        op, other = m.group(1), version_tuple(m.group(2))
        n = max(len(v), len(other))
        a, b = v + (0,) * (n - len(v)), other + (0,) * (n - len(other))
        ok = {">=": a >= b, "<=": a <= b, "==": a == b, "!=": a != b, ">": a > b, "<": a < b}[op]
        if not ok:
            return False
    return True


@dataclass(frozen=True)
class Target:
    """Where the user's kernel will run. Unknown fields never block a suggestion; they
    turn into caveats instead."""

    backend: str | None = None  # "cuda" | "rocm"
    cc: int | None = None  # compute capability as an int: 80, 90, 100
    triton: str | None = None  # "3.7.1"
    # a GPU name, matched as a case-insensitive substring of a run's device ("H100", "H200"):
    # H100 and H200 are both sm_90, so cc alone cannot tell their evidence apart. None: any GPU
    gpu: str | None = None

    def describe(self) -> str:
        parts = [self.backend or "backend ?", f"sm_{self.cc}" if self.cc else "arch ?",
                 f"triton {self.triton}" if self.triton else "triton ?"]
        if self.gpu:
            parts.append(f"GPU {self.gpu}")
        return ", ".join(parts)


@dataclass(frozen=True)
class KnownBad:
    """A combination where the technique is known to break or regress."""

    reason: str
    backend: str | None = None
    triton: str | None = None  # version range, e.g. "<3.4"
    max_cc: int | None = None  # applies to archs at or below this cc


#: The default: a technique of Triton itself, seen on CUDA and ROCm kernels. On another
#: backend (Ascend NPU, Cambricon MLU ...) it is not excluded — skel's evidence simply does
#: not cover it, which becomes a caveat. Hardware features list their backends explicitly.
GENERIC_BACKENDS = ("cuda", "rocm")


@dataclass(frozen=True)
class Env:
    backends: tuple[str, ...] = GENERIC_BACKENDS
    min_cc: int | None = None
    # the newest architecture that has it (WGMMA exists on sm_90 only; sm_100 has UMMA)
    max_cc: int | None = None
    triton: str | None = None  # version range the technique needs
    known_bad: tuple[KnownBad, ...] = ()
    # the backend must be known to be one of ``backends`` (given with --backend, or read off
    # the kernel: an AMD path, an `if _is_hip:` branch, an `aiter` import). Hardware that
    # only one vendor has (AMD's XCDs) is never suggested on a guess: most Triton kernels
    # run on CUDA, where the advice would be wrong, not merely unchecked.
    backend_required: bool = False

    def check(self, t: Target) -> tuple[bool, list[str]]:
        """(compatible, notes). Unknown target facts give notes, not failures (except a
        ``backend_required`` backend)."""
        notes: list[str] = []
        ok = True
        if t.backend is None:
            if self.backend_required:
                ok = False
                notes.append(f"only on {'/'.join(self.backends)}: the kernel does not say it runs there "
                             "(pass --backend)")
            elif set(self.backends) != {"cuda", "rocm"}:
                notes.append(f"needs {'/'.join(self.backends)} (backend not given)")
        elif t.backend not in self.backends:
            if self.backends == GENERIC_BACKENDS and t.backend not in GENERIC_BACKENDS:
                notes.append(f"evidence comes from CUDA/ROCm kernels; not checked on {t.backend}")
            else:
                ok = False
                notes.append(f"not available on {t.backend}")
        if self.min_cc:
            if t.cc is None:
                notes.append(f"needs sm_{self.min_cc}+ (arch not given)")
            elif t.cc < self.min_cc:
                ok = False
                notes.append(f"needs sm_{self.min_cc}+, target is sm_{t.cc}")
        if self.max_cc:
            if t.cc is None:
                notes.append(f"exists up to sm_{self.max_cc} only (arch not given)")
            elif t.cc > self.max_cc:
                ok = False
                notes.append(f"exists up to sm_{self.max_cc} only, target is sm_{t.cc}")
        if self.triton:
            if t.triton is None:
                notes.append(f"needs triton {self.triton} (version unknown)")
            elif not version_in(t.triton, self.triton):
                ok = False
                notes.append(f"needs triton {self.triton}, target has {t.triton}")
        for bad in self.known_bad:
            hits = [
                bad.backend is None or t.backend == bad.backend,
                bad.triton is None or (t.triton is not None and version_in(t.triton, bad.triton)),
                bad.max_cc is None or (t.cc is not None and t.cc <= bad.max_cc),
            ]
            if all(hits) and (bad.backend or bad.triton or bad.max_cc):
                ok = False
                notes.append(f"known bad: {bad.reason}")
        return ok, notes


@dataclass
class Assessment:
    """How one skeleton relates to one kernel, graded.

    - ``match``: the technique is absent, every precondition holds, the environment fits;
    - ``refine``: the technique is present but a ``refine`` condition of the skeleton
      fails (``refine`` lists what is missing), so it is incomplete here;
    - ``near-miss``: absent, and exactly one precondition fails, a *soft* one (a literal
      detail such as "a loop" or "a `tl.dot`"), with the rest of the evidence in place
      (``missing`` names it);
    - ``None``: not suggested on structure — present and complete, a hard precondition
      fails, more than one fails, or the environment rules it out.
    """

    skeleton: "Skeleton"
    kernel: str
    present: list[Hit] | None  # the technique is already there (never suggested as new)
    matched: list[Hit]  # preconditions that hold, with lines
    failed: list[str]  # preconditions that do not hold
    env_ok: bool
    env_notes: list[str]
    missing: list[str] = field(default_factory=list)  # the one soft precondition a near miss lacks
    refine: list[str] = field(default_factory=list)  # refine conditions failing while present
    # a failed precondition is a hard negation ("no `**config` launch"): the kernel has what
    # the skeleton says rules the technique out, so no channel may suggest it
    ruled_out: bool = False
    # the skeleton's subject (``Skeleton.subject``: the operation it rewrites) is in the
    # kernel; False when it is missing (exp2 folding for a kernel with no `exp`)
    subject_holds: bool = True

    @property
    def applies(self) -> bool:
        return self.present is None and not self.failed and self.env_ok

    @property
    def kind(self) -> str | None:
        if not self.env_ok:
            return None
        if self.present is not None:
            return "refine" if self.refine else None
        if not self.failed:
            return "match"
        return "near-miss" if self.missing else None


#: what a payoff condition concluded (``Payoff.state``)
PAYS, DOES_NOT_PAY, UNKNOWN = "pays", "does-not-pay", "unknown"


@dataclass(frozen=True)
class Payoff:
    """Whether a technique pays for a kernel at the sizes it runs at (``Skeleton.payoff``):
    ``pays`` or ``does-not-pay`` with the sizes and the arithmetic that decided it, or
    ``unknown`` with the condition it waits on and ``needs``, the flag that would decide it
    (a *conditional* suggestion: "pays if an offset passes 2**31 — give --shape x_ptr=ROWSxCOLS")."""

    state: str
    reason: str
    needs: str = ""

    def to_dict(self) -> dict:
        return {"state": self.state, "reason": self.reason, "needs": self.needs}


@dataclass
class Skeleton:
    id: str
    title: str
    summary: str
    category: Category
    doc: str
    present: Condition
    preconditions: list[Condition]
    # The shown before/after template, derived from catalog/<id>/example.py on first use
    # (the registry sets it): parsing 34 example files costs ~60 ms that `skel suggest`
    # only pays for the suggestions it shows.
    template_source: Callable[[], tuple[str, str]] | None = field(default=None, repr=False, compare=False)
    env: Env = field(default_factory=Env)
    helps: tuple[str, ...] = ()  # profile bounds it addresses: memory / compute / latency / occupancy
    # Conditions a *complete* use of the technique satisfies (configs that vary num_warps
    # as well as BLOCK, log2(e) folded into the scale ...): when the technique is present
    # and one fails, the skeleton is suggested as a refinement naming what is missing.
    refine: list[Condition] = field(default_factory=list)
    module: str = ""
    # Regexes naming the technique in prose. A sentence of the authors' notes (comments and
    # docstrings of the kernel, its helpers, its launcher, its module) that matches one of
    # them *and* a negative word ("num_stages > 1 miscompiles on MI300", "do not autotune:
    # in-place") rules the technique out for that kernel. Empty: derived from the id's words
    # (`num-stages-pipelining` -> "num stages", "stages pipelining"); set it where those
    # words are ambiguous or not how people write about the technique.
    ruled_out_by: tuple[str, ...] = ()
    # Regexes matching the technique's own code, commented out in the authors' notes (`#
    # @triton.autotune(...)` left above a kernel launched with fixed settings): the authors
    # tried it and took it out, which rules it out as firmly as a sentence would.
    ruled_out_code: tuple[str, ...] = ()
    # the languages of the units it is judged on (``KernelFacts.language``): "triton",
    # "cuda". A unit of another language is never assessed: its conditions are written
    # against facts that language's extractor fills.
    languages: tuple[str, ...] = ("triton",)
    # The operation the technique rewrites, one of ``preconditions`` (the same object), never
    # generic (``kernel-entry``) nor a negation (``~dot``): `natural-exp` for exp2 folding,
    # `tuned-block-sets-grid` for a grid lambda. A technique whose subject is missing from a
    # kernel is not related to it, whatever words they share. Required (``validate``).
    subject: Condition | None = None
    # What applying it buys: "speed" (judged by timing), or "accuracy" / "correctness" (an
    # error removed, a crash or a wrong answer prevented, at some cost in speed). A slower
    # run does not refute an accuracy or correctness fix; wrong results or a failed launch
    # refute any skeleton (``skel.retriever.suggest``: evidence decides).
    pays_in: str = "speed"
    # When the technique pays, over the kernel's sizes (``skel.kernels.workload``): None when
    # it does not depend on them (or nobody has stated how yet). A suggestion needs its
    # preconditions *and* its payoff; an unknown payoff makes it a conditional entry, listed
    # apart with the sizes that would decide it, never counted as a suggestion.
    payoff: Callable[["KernelFacts", "Workload"], Payoff] | None = field(default=None, repr=False, compare=False)

    @property
    def before(self) -> str:
        return self.template_source()[0] if self.template_source else ""

    @property
    def after(self) -> str:
        return self.template_source()[1] if self.template_source else ""

    def assess(self, k: "KernelFacts", target: Target | None = None) -> Assessment:
        if k.language not in self.languages:
            return Assessment(self, k.name, None, [], [f"a {'/'.join(self.languages)} unit"], False,
                              [f"written for {'/'.join(self.languages)}, not {k.language}"])
        present = self.present.check(k)
        matched: list[Hit] = []
        failed: list[Condition] = []
        for cond in self.preconditions:
            hits = cond.check(k)
            if hits is None:
                failed.append(cond)
            else:
                matched.extend(hits)
        env_ok, notes = self.env.check(target or Target())
        if k.folded:
            present = None if present is None else [_in_helper(h, k) for h in present]
            matched = [_in_helper(h, k) for h in matched]
        subject = self.subject
        a = Assessment(self, k.name, present, matched, [c.describe for c in failed], env_ok, notes,
                       ruled_out=any(c.name.startswith("~") and not c.soft for c in failed),
                       subject_holds=subject is None or all(c is not subject for c in failed))
        if present is not None:
            a.refine = [c.describe for c in self.refine if not c.holds(k)]
        elif len(failed) == 1 and failed[0].soft:
            miss = failed[0]
            if miss.relaxed is not None:
                relaxed = miss.relaxed.check(k)
                worth = relaxed is not None
                a.matched.extend(relaxed or [])
            else:
                # the rest of the evidence must point at the kernel: a near miss whose only
                # holding conditions are negations ("no `tl.dot`") or that it is a launched
                # kernel says nothing about it
                worth = foothold(matched)
            if worth:
                a.missing = [miss.describe]
        return a

    def detect(self, k: "KernelFacts") -> tuple[list[Hit] | None, bool]:
        """What a mine records of a kernel and no more: the technique's hits when it is
        present, else whether the skeleton applies in the default environment, or on the
        backend the kernel is written for when its file or importers say so (``assess``'s
        ``present`` and ``applies``, as ``skel suggest`` judges it). A mine grades every
        kernel against every skeleton and never shows a near miss, so this stops at the
        first precondition that fails and skips the refinements; ``assess`` grades them all, for suggestions."""
        if k.language not in self.languages:
            return None, False
        present = self.present.check(k)
        if present is not None:
            return ([_in_helper(h, k) for h in present] if k.folded else present), False
        if not self.env.check(Target(backend=k.backend_hint or None))[0]:
            return None, False
        return None, all(cond.check(k) is not None for cond in self.preconditions)

    def section(self, heading: str) -> str:
        return doc_sections(self.doc).get(heading, "")

    def keywords(self) -> re.Pattern[str]:
        """How prose names the technique: ``ruled_out_by``, else pairs of the id's words."""
        words = self.ruled_out_by or _id_phrases(self.id)
        return re.compile("|".join(f"(?:{w})" for w in words), re.I)

    def ruled_out(self, k: "KernelFacts") -> tuple[int, str] | None:
        """(line, the authors' sentence) when the kernel's notes rule the technique out."""
        if not k.notes:
            return None
        for note in k.notes:
            for rx in self.ruled_out_code:
                m = re.search(rx, note["text"])
                if m:
                    return note["line"], f"commented out by the authors: `# {note['text'][m.start():][:60]}`"
        words = self.keywords()
        for note in k.notes:
            for sentence in _SENTENCE.split(note["text"]):
                if words.search(sentence) and NEGATIVE.search(sentence):
                    return note["line"], sentence.strip()
        return None


#: Words with which authors rule a technique out in a comment or a docstring.
NEGATIVE = re.compile(
    r"miscompil\w*|\bslower\b|\bwrong\b|\bhang(s|ing)?\b|\bbreak(s|ing)?\b|\bbroken\b|\bavoid\w*|"
    r"\bdon'?t\b|\bdo not\b|\bnot supported\b|\bunsupported\b|\bdisabl\w*|\bbug(s|gy)?\b|\bincorrect\w*|"
    r"less accurate|\binaccura\w*|\bcrash\w*|\bregress\w*|\bno (speed ?up|benefit|gain)\b|"
    # a decision stated as a fact: "kernels aren't autotuned", "never pipelined here"
    r"\b(?:is|are|was|were)n'?t\b|\bnever\b|\btoo small to benefit\b", re.I)
_SENTENCE = re.compile(r"(?<=[.!?;])\s+")
#: id words too generic to name a technique on their own in a pair
_FILLER = {"and", "of", "per", "the"}


def _id_phrases(sid: str) -> tuple[str, ...]:
    """`num-stages-pipelining` -> ("num[\\s_-]*stages", "stages[\\s_-]*pipelining"): adjacent
    pairs of the id's words, as written in prose or code (spaces, underscores, hyphens)."""
    words = [w for w in sid.split("-") if w not in _FILLER]
    if len(words) == 1:
        return (rf"\b{words[0]}\b",)
    return tuple(rf"\b{a}[\s_-]*{b}\b" for a, b in zip(words, words[1:]))


def _in_helper(h: Hit, k: "KernelFacts") -> Hit:
    """A hit whose lines lie in a device helper folded into the kernel names the helper:
    the lines are the helper's, not the kernel's."""
    helpers = sorted({name for line in h.lines if (name := k.helper_at(line))})
    if not helpers:
        return h
    where = ", ".join(f"`{n}`" for n in helpers)
    if k.kind == "binding":
        return replace(h, detail=f"{h.detail} [in the function {where} the binding calls]")
    kind = "`__device__` function" if k.language == "cuda" else "`@triton.jit` helper"
    return replace(h, detail=f"{h.detail} [in the {kind} {where} the kernel calls]")


def doc_sections(doc: str) -> dict[str, str]:
    out: dict[str, str] = {}
    current = None
    buf: list[str] = []
    for line in (doc or "").splitlines():
        m = re.match(r"^##\s+(.*?)\s*$", line)
        if m:
            if current:
                out[current] = "\n".join(buf).strip()
            current, buf = m.group(1), []
        elif current:
            buf.append(line)
    if current:
        out[current] = "\n".join(buf).strip()
    return out


def validate(s: Skeleton) -> None:
    """Refuse incomplete skeletons loudly, naming what is missing."""
    problems = []
    if not ID_RE.match(s.id or ""):
        problems.append(f"id {s.id!r} is not kebab-case")
    if s.template_source is None:
        problems.append("no runnable example pair (skel/skeletons/catalog/<id>/example.py) to show as its template")
    for attr in ("title", "summary"):
        if not (getattr(s, attr) or "").strip():
            problems.append(f"missing {attr}")
    if len(s.summary or "") > 120:
        problems.append("summary longer than 120 characters")
    if not isinstance(s.category, Category):
        problems.append("category is not a Category")
    if not s.languages or not set(s.languages) <= LANGUAGES:
        problems.append(f"languages {s.languages!r} must be a non-empty subset of {sorted(LANGUAGES)}")
    if not s.preconditions:
        problems.append("no preconditions (use conditions.ALWAYS only if it truly applies to any kernel)")
    if s.present is None or s.present is ALWAYS:
        problems.append("missing `present` condition (how to tell the technique is already used)")
    if not all(isinstance(c, Condition) for c in (*s.preconditions, *s.refine)):
        problems.append("preconditions and refine conditions must be Condition values")
    if s.pays_in not in PAYS_IN:
        problems.append(f"pays_in {s.pays_in!r} must be one of {', '.join(PAYS_IN)}")
    if s.subject is None or not any(c is s.subject for c in s.preconditions):
        problems.append("`subject=` must name one of its preconditions (the operation the technique rewrites)")
    elif s.subject.name in GENERIC_CONDITIONS or s.subject.name.startswith("~"):
        problems.append(f"subject {s.subject.name!r} is generic or a negation: name the operation rewritten")
    for b in s.helps:
        if b not in BOUNDS:
            problems.append(f"unknown bound {b!r} in helps")
    texts = [s.title, s.summary, s.doc, *(c.describe for c in (s.present, *s.preconditions, *s.refine) if c)]
    if any(SCAFFOLD_MARKER in (x or "") for x in texts):
        problems.append(f"still a scaffold: fill in every '{SCAFFOLD_MARKER}' (title, summary, doc, conditions)")
    sections = doc_sections(s.doc)
    for h in DOC_HEADINGS:
        if not sections.get(h):
            problems.append(f"doc lacks a non-empty '## {h}' section")
    if problems:
        raise SkeletonError(f"skeleton {s.id or s.module}: " + "; ".join(problems))
