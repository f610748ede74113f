"""The service layer: what skel does, as functions with typed results.

The command line (``skel/cli.py``) and any other front end call these and only render what
comes back, so a policy (which store to open, how a target is spelled, what evidence a
skeleton shows) lives here once. Nothing here prints, exits or knows about click; every
expected failure is a ``skel.errors.SkelError`` whose message is written for the user.

Module-level imports are the standard library and ``skel.errors`` only: the command line
imports this module for every command, ``skel --help`` included, and must stay instant
(about 30 ms for all of ``skel.cli``). The store, catalog, miner and retriever are imported
inside the functions that use them: each costs 20-50 ms to import (skel.retriever.suggest
51 ms, skel.miner.mine 40 ms, skel.store.knowledge 29 ms, skel.skeletons.registry 23 ms;
tests/test_imports.py holds this module to it).
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter, defaultdict
from contextlib import AbstractContextManager, nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Callable, Literal, Sequence, overload

from skel.errors import InputError, NotFoundError, StoreError, UsageError

if TYPE_CHECKING:
    from skel.miner.candidates import Candidates
    from skel.miner.history import HistoryReport
    from skel.miner.mine import MineReport
    from skel.miner.sources import Source
    from skel.retriever.suggest import KernelResult
    from skel.skeletons.base import Skeleton, Target
    from skel.skeletons.codemods import Applied
    from skel.skeletons.status import StatusReport, StatusSummary
    from skel.store.evidence import Verification
    from skel.store.history import Draft, HistoryEvent, HistoryStore, TechniqueHistory
    from skel.store.knowledge import KnowledgeBase, SourceRecord
    from skel.verifier.run import VerifyResult
    from skel.verifier.harness_gen import GeneratedHarness

# (done, total, label): label a file while parsing, "model" while the last kernels embed, "store" while storing
Progress = Callable[[int, int, str], None]

_ARCH = re.compile(r"(?:sm_?)?(\d{2,3})a?")
# a Triton release as pip spells it: 3.4, 3.4.0, 3.4.0rc1, 3.5.0.post1, 3.6.0+git1234abcd
_TRITON = re.compile(r"\d+\.\d+(?:\.\d+)?(?:(?:a|b|rc)\d+)?(?:\.post\d+)?(?:\.dev\d+)?(?:\+[A-Za-z0-9.]+)?")


@dataclass
class SkeletonSummary:
    """One catalog entry as listed (the full skeleton comes from ``show``)."""

    id: str
    title: str
    summary: str
    category: str
    status: str  # computed from verification evidence for the target environment
    verified: str  # what the evidence says, one line
    languages: list[str] = field(default_factory=lambda: ["triton"])  # what the skeleton judges
    # how often people judged its suggestions right on real kernels (TrackRecord.to_dict; None if never)
    track_record: dict | None = None


class SkeletonList(list["SkeletonSummary"]):
    """``list_skeletons``'s answer: the entries, plus ``summary`` — their statuses counted and
    the evidence they rest on (which GPUs and Triton versions), the listing's last line."""

    summary: StatusSummary | None = None


@dataclass
class SkeletonEvidence:
    """What the knowledge base holds for one skeleton: mined uses (None without a store)
    and its status, computed from the verification runs (shipped and the store's)."""

    kernels: int | None  # mined kernels using it
    sources: list[str]  # the repositories they come from
    examples: list[str]  # up to five of them, as source@version:file:line:function
    status: StatusReport
    history: TechniqueHistory | None = None  # commits that introduced it (skel mine --history)
    # how often people judged its suggestions right on real kernels (shipped; None if never judged)
    track_record: dict | None = None

    def to_dict(self) -> dict[str, Any]:
        hist = None
        if self.history is not None:
            hist = {"line": self.history.line(), "commits": self.history.commits, "repos": self.history.repos,
                    "latest": [e.to_dict() for e in self.history.events[:5]]}
        return {"kernels": self.kernels, "sources": self.sources, "examples": self.examples,
                "verification": self.status.to_dict(), "history": hist, "track_record": self.track_record}


@dataclass
class StoreInfo:
    """Where the store is, its schema, its size and the state of every mined source."""

    location: str
    schema: int
    kernels: int
    sources: list[SourceRecord]
    note: str | None = None  # e.g. a read-only store, read from a copy

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- the store ---------------------------------------------------------------------------

# Mining always gets a store; reading may get None (no store yet): the overloads let a
# type checker see that.
@overload
def open_store(location: str | None, *, create: Literal[True]) -> KnowledgeBase: ...


@overload
def open_store(location: str | None, *, create: bool) -> KnowledgeBase | None: ...


def open_store(location: str | None, *, create: bool) -> KnowledgeBase | None:
    """The one store-opening policy.

    ``create=True`` (mining) opens ``location``, the default location when None, creating
    it. ``create=False`` (reading) never creates anything: an explicit location must hold a
    knowledge base (StoreError otherwise, so a mistyped ``--store`` or a share that is not
    mounted is not silently answered from the catalog alone), while the default location
    is used only if it exists, and None comes back when it does not — a fresh install
    still answers from the catalog. An explicit location that *is* the default one (the
    same folder) is treated as the default, so naming it changes nothing.
    """
    # deferred: not for `skel --help` (see the module docstring)
    from skel.store.knowledge import KnowledgeBase, default_location, server_address

    if create:
        return KnowledgeBase.open(location, create=True)
    if not location:
        location = default_location()
        if not Path(location).exists():
            return None
    elif server_address(location) is None and not Path(location).exists():
        if Path(location).resolve() == Path(default_location()).resolve():
            return None
        raise _missing_store(location)
    return KnowledgeBase.open(location, create=False)


def _missing_store(location: str, *, explicit: bool = True) -> Exception:

    if not explicit:
        return StoreError(f"no knowledge base at {location} yet: mine something first (`skel mine PATH`)")
    return StoreError(f"no knowledge base at {location}: mine into it first (`skel mine PATH --store {location}`); "
                      "without --store, suggest, show and list answer from the built-in catalog alone")


def store_info(location: str | None = None) -> StoreInfo:
    """What the store holds. Unlike suggest and show this needs a store, so a missing
    default store is an error here (the same one an explicit missing location gives)."""
    # deferred: not for `skel --help` (see the module docstring)
    from skel.store.knowledge import SCHEMA_VERSION, default_location

    kb = open_store(location, create=False)
    if kb is None:  # nothing mined at the default location yet
        raise _missing_store(default_location(), explicit=False)
    return StoreInfo(location=kb.location, schema=SCHEMA_VERSION, kernels=kb.count(), sources=kb.sources(),
                     note=kb.note)


# --- suggest -----------------------------------------------------------------------------

def parse_target(backend: str | None, arch: str | None, triton: str | None, gpu: str | None = None) -> Target:
    """The environment suggestions are for. ``arch`` is spelled sm80, sm_90, SM100a or 90;
    ``triton`` defaults to the installed Triton (None when there is none); ``gpu`` names a
    GPU ("H100", "H200": a case-insensitive part of a run's device name) whose runs alone
    count toward statuses (None: any GPU's). What is not given stays unknown: it turns into
    caveats, never into hidden suggestions."""
    # deferred: not for `skel --help` (see the module docstring)
    from skel.skeletons.base import Target

    cc = None
    if arch:
        m = _ARCH.fullmatch(arch.strip().lower())
        if not m:
            raise UsageError(f"--arch {arch!r}: expected e.g. sm80, sm90, sm100")
        cc = int(m.group(1))
    if triton is not None and not _TRITON.fullmatch(triton.strip()):
        raise UsageError(f"--triton {triton!r}: expected a version such as 3.4 or 3.4.0")
    if triton is None:
        triton = _installed_triton()
    else:
        triton = triton.strip()
    if gpu is not None:
        gpu = gpu.strip()
        if not gpu:
            raise UsageError("--gpu: give a GPU name such as H100 or H200 (leave it out for any GPU)")
    return Target(backend=backend, cc=cc, triton=triton, gpu=gpu)


def _installed_triton() -> str | None:
    from importlib.metadata import PackageNotFoundError, version  # 12 ms to import: not for `skel --help`

    try:
        return version("triton")
    except PackageNotFoundError:
        return None


def suggest(path: str | Path, *, store: str | None = None, kernel: str | None = None, k: int = 5,
            bound: str | None = None, target: Target | None = None,
            profile: str | Path | None = None, why_not: tuple[str, ...] = (),
            shapes: tuple[str, ...] = (), workload: str | Path | None = None,
            show_all: bool = False, threshold: float | None = None, compile: bool = False,
            repo_sizes: bool = True, repo_within: list[Path] | None = None) -> list[KernelResult]:
    """Ranked suggestions for every kernel in ``path`` (or only ``kernel``), against the
    store at ``store`` (see ``open_store``; without one, the catalog alone). ``profile`` is
    an Nsight Compute CSV, a PyTorch chrome trace or a proton tree: what it says limits each
    kernel sets that kernel's bound (``bound``, when given, wins); see skel/retriever/profile.py.
    ``why_not``: skeleton ids each result explains, listed or not (``KernelResult.why_not``).
    ``shapes`` (``NAME=VALUE`` items) and ``workload`` (a file) give the sizes the kernel
    runs at (``skel.kernels.workload``; ``shapes`` win); ``show_all`` lists the suggestions
    under the probability threshold too, marked; ``threshold`` replaces the model's;
    ``compile`` compiles each Triton kernel offline (``skel.retriever.machine_check``);
    ``repo_sizes`` reads the sizes the tests and benchmarks of the repository holding
    ``path`` call each kernel at, without running them (``skel.kernels.callers``), below
    ``shapes`` and ``workload``; ``repo_within``: folders that search may not leave."""
    if compile:
        prestart_compiler(path, target)
    # deferred: not for `skel --help` (see the module docstring)
    from skel.retriever.suggest import suggest as rank
    from skel.skeletons.registry import get

    for sid in why_not:  # an unknown id fails before any file is read
        get(sid)
    prof = None
    if profile is not None:
        # deferred: not for `skel --help` (see the module docstring)
        from skel.retriever.profile import read_profile

        prof = read_profile(profile)  # read before the store opens: a bad file fails fast
    sizes = workload_of(shapes, workload)  # read before the store opens: a bad flag fails fast
    kb = _ranking_store(store)
    results = rank(path, kb, kernel=kernel, k=k, bound=bound, target=target, profile=prof, why_not=tuple(why_not),
                   workload=sizes, show_all=show_all, threshold=threshold, compile=compile, repo_sizes=repo_sizes,
                   repo_within=repo_within)
    if kb is not None and not isinstance(kb, _snapshot_kb()):
        _write_snapshot(kb)  # the next process answers without opening chroma
    introduced = _history_of(kb)
    for r in results:
        if kb is not None and kb.note:
            r.notes.append(kb.note)
        r.notes.extend(_path_notes(r.path, r.kernel))
        for s in r.suggestions:
            if s.id in introduced:
                s.history = introduced[s.id].line()
    return results


def prestart_compiler(path: str | Path, target: Target | None) -> None:
    """``suggest(compile=True)`` soon: start the compile worker now, on this file's imports,
    so it loads torch and the kernel's package while the ranking runs
    (``skel.kernels.machine.prestart``; the compile itself comes later, from
    ``skel.retriever.machine_check``). Calling it again for the same file costs nothing."""
    p = Path(path)
    if p.suffix != ".py":
        return
    try:
        source = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return  # the ranking reads it again and says why
    if "triton" not in source:
        return
    # deferred: only --compile starts a compiler; 25 ms, and not for `skel --help`
    from skel.kernels.machine import DEFAULT_CC, prestart

    prestart(source, target.cc if target is not None and target.cc else DEFAULT_CC)


def _path_notes(path: str, kernel: str) -> list[str]:
    """What was judged from the kernel's path alone, said so a reader can tell (the backend a
    folder names has its own note, from the ranking): the serving engine whose package holds
    it, which the size-bound techniques read (``skel.skeletons.predicates.workload``)."""
    # deferred: not for `skel --help` (see the module docstring)
    from skel.skeletons.predicates.workload import serving_decode, serving_engine

    facts: Any = SimpleNamespace(path=path, name=kernel)  # the two predicates read these only
    engine = serving_engine(facts)
    if not engine:
        return []
    return [f"judged as part of a serving engine ({engine}) from its path: one forward pass there holds a bounded "
            "number of tokens" + (", and a decode kernel runs under CUDA-graph capture" if serving_decode(facts)
                                  else "")]


def workload_of(shapes: tuple[str, ...] | list[str] = (), workload: str | Path | None = None):
    """The sizes from ``--shape`` items over those of a ``--workload`` file (UsageError on a
    malformed one), or None when neither is given."""
    if not shapes and workload is None:
        return None
    from skel.kernels.workload import Workload  # deferred: not for `skel --help` (see the module docstring)

    sizes = Workload.parse(tuple(shapes))
    return sizes.merged(Workload.read(workload)) if workload is not None else sizes


def _snapshot_kb() -> type:
    # deferred: not for `skel --help` (see the module docstring)
    from skel.store.snapshot import SnapshotKB

    return SnapshotKB


def _ranking_store(store: str | None) -> Any:
    """What a ranking reads: the store's read snapshot while it is the store (no chromadb
    import: skel/store/snapshot.py), else the store itself, opened as ``open_store`` does."""
    # deferred: not for `skel --help` (see the module docstring)
    from skel.store.knowledge import default_location, server_address
    from skel.store.snapshot import open_fresh

    location = store or default_location()
    if server_address(location) is None and Path(location).is_dir():
        snap = open_fresh(location)
        if snap is not None:
            return snap
    return open_store(store, create=False)


def _write_snapshot(kb: KnowledgeBase) -> None:
    """Best effort: a store that cannot take one (read-only, full) is read as before."""
    # deferred: not for `skel --help` (see the module docstring)
    from skel.store.snapshot import write

    try:
        write(kb)
    except (OSError, StoreError):
        pass


# --- the catalog -------------------------------------------------------------------------

def _runs(kb: KnowledgeBase | None) -> dict[str, list]:
    """Verification runs by skeleton: the shipped ones, then the store's."""
    # deferred: not for `skel --help` (see the module docstring)
    from skel.store.evidence import merge_evidence, shipped_verifications

    return kb.evidence_by_skeleton() if kb is not None else merge_evidence(shipped_verifications())


def list_skeletons(category: str | None = None, *, store: str | None = None,
                   target: Target | None = None) -> SkeletonList:
    """Every skeleton, by id, with its status for ``target`` (default: the installed
    Triton); ``category`` keeps those whose category contains it (case-insensitive), so
    "memory" or "fusion" is enough. The list's ``summary`` counts the statuses listed and
    names the GPUs and Triton versions whose runs decided them."""
    # deferred: not for `skel --help` (see the module docstring)
    from skel.skeletons.registry import all_skeletons
    from skel.skeletons.status import status_of, summarize
    from skel.store.evidence import track_record_of

    target = target or parse_target(None, None, None)
    runs = _runs(open_store(store, create=False))
    out = SkeletonList()
    reports = []
    considered: list[Verification] = []
    for s in all_skeletons():
        if category and category.lower() not in s.category.value:
            continue
        mine = runs.get(s.id, [])
        report = status_of(mine, target, triton_bound="triton" in s.languages, pays_in=s.pays_in)
        reports.append(report)
        considered += mine
        out.append(SkeletonSummary(id=s.id, title=s.title, summary=s.summary, category=s.category.value,
                                   status=report.status.value, verified=report.line,
                                   languages=list(s.languages),
                                   track_record=track_record_of(s.id)))
    installed = target.triton is not None and target.triton == _installed_triton()
    out.summary = summarize(reports, target, triton_installed=installed, runs=considered)
    return out


def show(skeleton_id: str, *, store: str | None = None,
         target: Target | None = None) -> tuple[Skeleton, SkeletonEvidence]:
    """One skeleton, its mined uses in the store (``kernels`` None when there is no
    store) and its status for ``target`` from the verification runs. An unknown id raises
    NotFoundError before any store is opened."""
    # deferred: not for `skel --help` (see the module docstring)
    from skel.skeletons.registry import get
    from skel.skeletons.status import status_of
    from skel.store.evidence import track_record_of

    s = get(skeleton_id)
    kb = open_store(store, create=False)
    report = status_of(_runs(kb).get(s.id, []), target or parse_target(None, None, None),
                       triton_bound="triton" in s.languages, pays_in=s.pays_in)
    checked = track_record_of(s.id)
    if kb is None:
        return s, SkeletonEvidence(kernels=None, sources=[], examples=[], status=report, track_record=checked)
    technique = kb.stats().of(s.id)
    return s, SkeletonEvidence(kernels=technique.kernels, sources=technique.sources,
                               examples=[r.location for r in kb.using(s.id, limit=5)], status=report,
                               history=_history_of(kb).get(s.id), track_record=checked)


def verifications(skeleton_id: str, *, store: str | None = None) -> list[Verification]:
    """Every verification run of a skeleton, shipped and the store's, newest first, CPU
    correctness runs included (a status counts only the runs that speak for its target,
    so `show`'s status alone does not list a `skel verify --device cpu` verdict)."""
    # deferred: not for `skel --help` (see the module docstring)
    from skel.skeletons.registry import get

    s = get(skeleton_id)
    return sorted(_runs(open_store(store, create=False)).get(s.id, []), key=lambda r: r.date, reverse=True)


@dataclass
class KernelUse:
    """One mined kernel using a skeleton, with a link to its code when there is one."""

    source: str
    version: str
    file: str
    line: int
    function: str
    url: str | None  # the line at the mined commit on its forge; a local file:// when the file is here; else None


@dataclass
class SourceSummary:
    """One mined source: its record, its kernels and the techniques they use."""

    record: SourceRecord
    kernels: int
    files: int
    techniques: dict[str, int]  # skeleton id -> kernels using it


@dataclass
class CatalogSnapshot:
    """Everything a catalog reader shows, read in one pass: every skeleton with its
    evidence and verification runs, the mined sources, and history (when mined)."""

    target: Target
    store: str | None  # None: the catalog and its shipped evidence only
    skeletons: list[tuple[Skeleton, SkeletonEvidence, list[Verification]]]
    uses: dict[str, list[KernelUse]]  # skeleton id -> up to ``per_skeleton`` kernels using it
    sources: list[SourceSummary]
    events: list[HistoryEvent]  # latest first
    drafts: list[Draft]
    commit_urls: dict[str, str]  # "repo@commit" -> web page of the commit, where its forge is known


def catalog_snapshot(*, store: str | None = None, target: Target | None = None, per_skeleton: int = 12,
                     use_store: bool = True) -> CatalogSnapshot:
    """The whole catalog and what a store knows about it, for a reader that shows it all
    (``skel site``): one store open and one read of every kernel's metadata, not a query
    per skeleton. ``use_store=False``: the catalog and its shipped evidence only, whatever
    store exists (the README's table must not depend on the machine that made it)."""
    # deferred: not for `skel --help` (see the module docstring)
    from skel.miner.sources import commit_url, file_url
    from skel.skeletons.registry import all_skeletons
    from skel.skeletons.status import status_of
    from skel.store.evidence import track_record_of
    from skel.store.knowledge import TechniqueStats

    target = target or parse_target(None, None, None)
    kb = open_store(store, create=False) if use_store else None
    runs = _runs(kb)
    records = kb.kernels() if kb is not None else []
    sources = kb.sources() if kb is not None else []
    by_name = {s.name: s for s in sources}
    stats = kb.stats() if kb is not None else None
    history = _history_of(kb)

    def link(r) -> str | None:
        src = by_name.get(r.source)
        if src is None:
            return None
        web = file_url(src.origin, r.version, r.file, r.line_start)
        if web:
            return web
        for base in (Path(src.root), Path(src.root).parent):  # a folder's files, or a package's (rel starts with it)
            local = base / r.file
            if local.is_file():
                return local.resolve().as_uri() + f"#L{r.line_start}"
        return None

    using: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))  # technique -> source -> records
    per_source: dict[str, Counter] = defaultdict(Counter)
    files: dict[str, set[str]] = defaultdict(set)
    counts: Counter = Counter()
    for r in sorted(records, key=lambda r: (r.source, r.file, r.line_start)):
        counts[r.source] += 1
        files[r.source].add(r.file)
        for t in r.techniques:
            per_source[r.source][t] += 1
            using[t][r.source].append(r)
    uses: dict[str, list[KernelUse]] = {}
    for t, by_source in using.items():  # taken in turn from each source, so every repository shows
        picked: list = []
        lists = list(by_source.values())
        while len(picked) < per_skeleton and any(lists):
            for lst in lists:
                if lst and len(picked) < per_skeleton:
                    picked.append(lst.pop(0))
        uses[t] = [KernelUse(r.source, r.version, r.file, r.line_start, r.function, link(r)) for r in picked]
    out = []
    for s in all_skeletons():
        report = status_of(runs.get(s.id, []), target, triton_bound="triton" in s.languages, pays_in=s.pays_in)
        technique = stats.of(s.id) if stats is not None else TechniqueStats()
        ev = SkeletonEvidence(kernels=technique.kernels if kb is not None else None, sources=technique.sources,
                              examples=[f"{u.source}@{u.version}:{u.file}:{u.line}:{u.function}"
                                        for u in uses.get(s.id, [])[:5]],
                              status=report, history=history.get(s.id),
                              track_record=track_record_of(s.id))
        out.append((s, ev, sorted(runs.get(s.id, []), key=lambda r: r.date, reverse=True)))
    summaries = [SourceSummary(record=s, kernels=counts[s.name], files=len(files[s.name]),
                               techniques=dict(per_source[s.name].most_common())) for s in sources]
    local = kb is not None and not kb.location.startswith(("http://", "https://"))  # a server keeps no history
    events = history_events(store=kb.location) if local and kb is not None else []
    found = drafts(store=kb.location) if local and kb is not None else []
    commit_urls: dict[str, str] = {}
    if kb is not None and (events or found):
        # deferred: not for `skel --help` (see the module docstring)
        from skel.store.history import HistoryStore

        # one remote lookup per repository (two git calls), not per commit
        pattern = {name: commit_url(st.root, "{commit}") for name, st in HistoryStore(kb.location).states().items()}
        for c in [*events, *found]:
            url = pattern.get(c.repo)
            if url:
                commit_urls[f"{c.repo}@{c.commit}"] = url.replace("{commit}", c.commit)
    return CatalogSnapshot(target=target, store=kb.location if kb is not None else None, skeletons=out,
                           uses=uses, sources=summaries, events=events, drafts=found,
                           commit_urls=commit_urls)


# --- mine --------------------------------------------------------------------------------

def mine(path: str | None = None, *, package: str | None = None, rev: str | None = None,
         source: str | None = None, version: str | None = None, jobs: int | None = None,
         store: str | None = None, progress: Progress | None = None, replace: bool = False,
         exclude: Sequence[str] = ()) -> MineReport:
    """Mine a path (repository, folder, file), a git repository at a revision (``rev``) or
    an installed package into the store, creating the store if needed; files matching a
    glob of ``exclude`` are left out (reported as skipped). KeyboardInterrupt
    is let through on purpose: the store is consistent at every point and the same call
    resumes where it stopped. A source name the store already holds for other code (two
    folders named ``ops``) is refused (UsageError) unless ``replace`` deletes that one."""
    # deferred: not for `skel --help` (see the module docstring)
    from skel.miner.stamps import unchanged_report
    from skel.store.knowledge import default_location

    src = _source(path, package, rev, name=source, version=version)
    # an unchanged folder or package is answered from its stamps, without opening the store
    unchanged = unchanged_report(store or default_location(), src) if not exclude else None
    if unchanged is not None:
        return unchanged
    kb = open_store(store, create=True)  # validates the location first
    with _writing(kb.location):
        report = _run_miner(src, kb, jobs=jobs, progress=progress, replace=replace, exclude=exclude)
        _write_snapshot(kb)  # the first suggest after a mine needs no chromadb either
        return report


def _writing(location: str, *, wait: float = 0.0) -> AbstractContextManager:
    """The writer lock of an opened local store (skel/store/lock.py): a second writer
    waits up to ``wait`` seconds, then gets a one-line error naming the first. A Chroma
    server orders writes itself."""
    # deferred: not for `skel --help` (see the module docstring)
    from skel.store.lock import WriterLock

    if location.startswith(("http://", "https://")):
        return nullcontext()
    return WriterLock(location, wait=wait)


def sources(store: str | None = None) -> list[SourceRecord]:
    """The sources mined into the store, by name ([] when nothing was mined yet)."""
    kb = open_store(store, create=False)
    return kb.sources() if kb is not None else []


def remove_source(name: str, *, store: str | None = None) -> tuple[SourceRecord, dict[str, int]]:
    """Delete one mined source (its kernels, file markers and record) from the store;
    returns its record and what was removed ({"kernels": n, "files": m})."""
    kb = open_store(store, create=False)
    record = kb.source(name) if kb is not None else None
    if kb is None or record is None:
        known = ", ".join(s.name for s in kb.sources()) if kb is not None else ""
        raise NotFoundError(f"no source named {name!r} in the store" + (f" (known: {known})" if known else
                                                                          " (it holds no source)"))
    if kb.read_only:  # says so, before a lock file would be written into it
        return record, kb.remove_source(name)
    with _writing(kb.location):  # never beside a running mine
        return record, kb.remove_source(name)


def _source(path: str | None, package: str | None, rev: str | None, *, name: str | None,
            version: str | None) -> Source:
    """What to mine, through the miner's one source seam."""
    # deferred: not for `skel --help` (see the module docstring)
    from skel.miner.sources import DirectorySource, GitSource, PackageSource

    if bool(path) == bool(package):
        raise UsageError("give exactly one of PATH or --package NAME")
    if rev and package:
        raise UsageError("--rev needs PATH, a git repository (not --package)")
    try:
        if package:
            return PackageSource(package, name=name, version=version)
        assert path is not None
        if rev:
            return GitSource(path, rev, name=name, version=version)
        return DirectorySource(path, name=name, version=version)
    except FileNotFoundError as exc:
        raise InputError(str(exc)) from exc


def _run_miner(src: Source, kb: KnowledgeBase, *, jobs: int | None, progress: Progress | None,
               replace: bool = False, exclude: Sequence[str] = ()) -> MineReport:
    """The one call into the miner."""
    # deferred: not for `skel --help` (see the module docstring)
    from skel.miner.mine import mine as run
    from skel.store.knowledge import cache_dir

    try:
        return run(src, kb, jobs=jobs, cache_root=cache_dir(), progress=progress, replace=replace,
                   exclude=exclude)
    except OSError as exc:  # the source vanished, or git failed while reading it
        raise InputError(f"reading {src.root}: {exc.strerror or exc}") from exc


# --- history -----------------------------------------------------------------------------

def _history_store(store: str | None, *, create: bool) -> HistoryStore | None:
    """The history files of a store (skel/store/history.py). Reading never creates: a
    missing default store is None (nothing mined), a missing explicit one an error."""
    # deferred: not for `skel --help` (see the module docstring)
    from skel.store.history import HistoryStore
    from skel.store.knowledge import default_location, server_address

    location = store or default_location()
    server_address(location)  # refuses ftp://x or localhost:8000 before a folder of that name is made
    if not create and not location.startswith(("http://", "https://")) and not Path(location).exists():
        if store and Path(store).resolve() != Path(default_location()).resolve():
            raise _missing_store(location)
        return None
    return HistoryStore(location)


def _history_of(kb: KnowledgeBase | None) -> dict[str, TechniqueHistory]:
    """Commits that introduced each technique, for evidence lines; {} without history (or
    for a remote store, which keeps none)."""
    # deferred: not for `skel --help` (see the module docstring)
    from skel.store.history import HistoryStore

    if kb is None or kb.location.startswith(("http://", "https://")):
        return {}
    return HistoryStore(kb.location).by_technique("introduced")


def mine_history(repo: str, *, rev: str | None = None, since: str | None = None, until: str | None = None,
                 max_commits: int | None = None, source: str | None = None, jobs: int | None = None,
                 store: str | None = None, progress: Progress | None = None) -> HistoryReport:
    """Walk ``repo``'s commits (first-parent, oldest first, only those after the last
    run's; ``until``: none committed on or after that date) and record the techniques each
    introduced, removed or refined, and drafts for optimisation-looking changes no
    skeleton explains. Interrupting is safe: at most the current batch of commits is read
    again next time."""
    # deferred: not for `skel --help` (see the module docstring)
    from skel.miner.history import mine_history as run
    from skel.store.knowledge import cache_dir

    if max_commits is not None and max_commits < 1:
        raise UsageError("--max-commits must be at least 1")
    hs = _history_store(store, create=True)
    assert hs is not None
    try:
        return run(repo, hs, name=source, rev=rev or "HEAD", since=since, until=until, max_commits=max_commits,
                   jobs=jobs, cache_root=cache_dir(), progress=progress)
    except FileNotFoundError as exc:
        raise InputError(str(exc)) from exc
    except OSError as exc:
        raise InputError(f"reading the history of {repo}: {exc.strerror or exc}") from exc


def history_events(*, store: str | None = None, repo: str | None = None, technique: str | None = None,
                   kind: str | None = None) -> list[HistoryEvent]:
    """Events recorded by history mining, latest first, optionally filtered."""
    # deferred: not for `skel --help` (see the module docstring)
    from skel.store.history import KINDS

    if kind is not None and kind not in KINDS:
        raise UsageError(f"--kind {kind!r}: one of {', '.join(KINDS)}")
    hs = _history_store(store, create=False)
    events = hs.events(repo) if hs else []
    return [e for e in reversed(events) if (technique is None or e.technique == technique)
            and (kind is None or e.kind == kind)]


def drafts(*, store: str | None = None, repo: str | None = None, review: str | None = None) -> list[Draft]:
    """Draft candidates (changes that look like optimisations no skeleton explains),
    latest first; ``review`` keeps pending, accepted or rejected ones."""
    # deferred: not for `skel --help` (see the module docstring)
    from skel.store.history import REVIEWS

    if review is not None and review not in REVIEWS:
        raise UsageError(f"--review {review!r}: one of {', '.join(REVIEWS)}")
    hs = _history_store(store, create=False)
    found = hs.drafts(repo) if hs else []
    return [d for d in reversed(found) if review is None or d.review == review]


def candidates(*, store: str | None = None, min_repos: int = 2, limit: int | None = None) -> Candidates:
    """The drafts no skeleton explains, grouped into candidate techniques (the same
    normalised edit of the kernel model, else the same message keyword) and ranked by
    spread: repositories, commits, commits whose message states a number. ``min_repos``
    keeps groups seen in at least that many repositories; ``limit`` the best N of those.
    An empty result without history mined (``drafts == 0``)."""
    # deferred: not for `skel --help` (see the module docstring)
    from skel.miner.candidates import Candidates as Found
    from skel.miner.candidates import candidates as group

    if min_repos < 1:
        raise UsageError("--min-repos must be at least 1")
    if limit is not None and limit < 1:
        raise UsageError("--limit must be at least 1")
    hs = _history_store(store, create=False)
    if hs is None:
        return Found(clusters=[])
    found = group(hs)
    kept = [c for c in found.clusters if len(c.repos) >= min_repos]
    found.below = len(found.clusters) - len(kept)
    found.clusters = kept[:limit] if limit else kept
    return found


def review_draft(draft_id: str, decision: str, note: str = "", *, store: str | None = None) -> Draft:
    """Record a person's review of a draft: "accepted" (listed as a skeleton to write; no
    code is generated) or "rejected"."""
    hs = _history_store(store, create=False)
    if hs is None:
        raise InputError("no history mined yet (run `skel mine --history REPO`)")
    return hs.review(draft_id, decision, note, time.strftime("%Y-%m-%d", time.gmtime()))


def export_event(event_id: str, out_dir: str | Path, *, store: str | None = None) -> Path:
    """Write a history event's before/after kernels as a harness file to complete
    (skel/miner/export.py); returns its path."""
    # deferred: not for `skel --help` (see the module docstring)
    from skel.miner.export import export
    from skel.store.history import HistoryEvent

    hs = _history_store(store, create=False)
    if hs is None:
        raise InputError("no history mined yet (run `skel mine --history REPO`)")
    found = hs.find(event_id)
    if not isinstance(found, HistoryEvent):
        raise UsageError(f"{found.id} is a draft, not a history event (`skel history list`)")
    try:
        return export(found, hs.state(found.repo), Path(out_dir))
    except FileNotFoundError as exc:
        raise InputError(str(exc)) from exc
    except OSError as exc:
        raise InputError(f"writing to {out_dir}: {exc.strerror or exc}") from exc


# --- verify ------------------------------------------------------------------------------

def verify(original: str | Path | None = None, candidate: str | Path | None = None, *, example: str | None = None,
           kernel: str | None = None, skeleton: str | None = None, harness: str | Path | None = None,
           tests: list[str] | tuple[str, ...] = (), device: str | None = None, shapes: list[str] | None = None,
           dtype: str | None = None, seed: int = 0, tolerance: tuple[float, float] | None = None,
           record: bool = False, store: str | None = None) -> VerifyResult:
    """Verify CANDIDATE against ORIGINAL (or a skeleton's own example pair with ``example``):
    applied? → same results → tests → faster? (GPU). ``device`` defaults to cuda when torch
    sees a GPU, else cpu (Triton's interpreter, no timing). ``record`` writes the resulting
    Verification to the store (created if needed)."""
    if example:
        if original or candidate:
            raise UsageError("give either ORIGINAL CANDIDATE or --example ID, not both")
        # deferred: not for `skel --help` (see the module docstring)
        from skel.skeletons.pairs import example_path
        from skel.skeletons.registry import get

        get(example)  # NotFoundError for an unknown id
        path = example_path(example)
        if not path.is_file():
            raise InputError(f"{example}: this skeleton has no runnable example ({path.name})")
        original = candidate = path
        skeleton = skeleton or example
    elif not original or not candidate:
        raise UsageError("give ORIGINAL and CANDIDATE (or --example ID)")
    if device is None:
        import torch  # torch: 0.8 s to import; only to pick the device when none is given

        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device not in ("cpu", "cuda") and not device.startswith("cuda:"):
        raise UsageError(f"--device {device!r}: cpu or cuda")
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"  # before the files under test import triton
    elif os.environ.get("TRITON_INTERPRET") == "1":
        raise UsageError("--device cuda with TRITON_INTERPRET=1 set: unset it to run on the GPU")
    # deferred: not for `skel --help` (see the module docstring)
    from skel.verifier.run import Request
    from skel.verifier.run import verify as run_verify

    req = Request(original=Path(original), candidate=Path(candidate), kernel=kernel, skeleton=skeleton,
                  harness=Path(harness) if harness else None, tests=list(tests), device=device,
                  shapes=list(shapes) if shapes else None, dtype=dtype, seed=seed, tolerance=tolerance,
                  subject="example" if example else "user", sides=("before", "after") if example else None)
    result = run_verify(req)
    if record:
        kb = open_store(store, create=True)
        with _writing(kb.location, wait=120):  # a run's result outlives a mine that holds the store
            kb.add_verification(result.record)
    return result


def apply_skeleton(skeleton_id: str, path: str | Path, kernel: str, out: str | Path | None = None) -> Applied:
    """The skeleton's mechanical codemod applied to the Triton kernel ``kernel`` of the file
    ``path``: the candidate (``Applied.source``), written to ``out`` when given (the input is
    overwritten only when ``out`` names it). The candidate still needs ``verify``.

    Raises NotFoundError (unknown id), NoCodemodError (the skeleton has none: apply its
    template by hand), InputError (unreadable, not UTF-8, does not parse, ``out`` not
    writable), NoSuchKernelError, AlreadyPresentError / NothingToRewriteError (both
    NotApplicableError: the skeleton's detector already sees the technique, or the kernel
    holds nothing the codemod rewrites)."""
    # deferred: libcst and the catalog load with the command that uses them (`skel --help` stays instant)
    from skel.skeletons.codemods import apply_file

    applied = apply_file(skeleton_id, path, kernel)
    if out is not None:
        target = Path(out)
        try:
            target.write_text(applied.source, encoding="utf-8")
        except OSError as exc:
            raise InputError(f"{target}: cannot write the candidate: {exc.strerror or exc}") from exc
    return applied



def harness(kernel_file: str | Path, out: str | Path, *, kernel: str | None = None,
            shapes: list[str] | tuple[str, ...] = (), args: list[str] | tuple[str, ...] = (),
            launcher: str | None = None, direct: bool = False, dtypes: list[str] | tuple[str, ...] = ("float32",),
            check: bool = True, command: str = "skel harness") -> GeneratedHarness:
    """Write a harness (docs/harness.md) for ``kernel`` of ``kernel_file`` to ``out``, taken
    from the kernel itself: its host launcher (or its signature), sizes from ``shapes``
    (``--shape``), the original as the reference; then, with ``check``, the original against
    itself through it on the CPU. Runs kernels, so on the CPU it sets TRITON_INTERPRET=1."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        os.environ["TRITON_INTERPRET"] = "1"  # before the kernel's module imports triton
    # deferred: not for `skel --help` (see the module docstring)
    from skel.verifier.harness_gen import generate

    return generate(kernel_file, out, kernel=kernel, shapes=shapes, args=args, launcher=launcher, direct=direct,
                    dtypes=dtypes, check=check, command=command)
