"""What history mining found, kept beside the knowledge base: events, drafts, progress.

Three files under ``<store>/history/``:

- ``events.jsonl`` — one ``HistoryEvent`` per technique a commit introduced, removed or
  refined in a kernel (skel/miner/history.py decides which);
- ``drafts.jsonl`` — one ``Draft`` per changed kernel that looks like an optimisation no
  skeleton explains, with its review (pending / accepted / rejected);
- ``state.json``  — per repository: the last commit mined and the ``--since`` used, so a
  re-run reads only newer commits, and the older ranges a ``--max-commits`` run (which reads
  the newest N) left unread, which a re-run reads too. A repository is known by its identity (its remote, else
  its resolved location: ``GitSource.origin``), never by its folder's name, and shown under
  a label (``RepoState.repo``, the ``repo`` of its events) unique in the store.

Crash safety: every write replaces a whole file through a temporary file and a rename, so
a file is either the old one or the new one, never half written. A batch writes events and
drafts first and the state last; a crash in between makes the next run redo that batch,
and records keyed by a stable id (repo, commit, path, kernel, technique) merge instead of
doubling. Reviews survive a redo: a draft already reviewed keeps its review.

A remote store (``http://``) has no directory to hold these files: history needs a local
store.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable, TypeVar

from skel.errors import NotFoundError, StoreError, UsageError

KINDS = ("introduced", "removed", "refined")
REVIEWS = ("pending", "accepted", "rejected")


def record_id(*parts: str) -> str:
    """A short stable id: the same change mined twice gets the same id."""
    return hashlib.sha1("\0".join(parts).encode()).hexdigest()[:10]


@dataclass
class Change:
    """Where a change happened: shared by events and drafts."""

    id: str
    repo: str
    commit: str
    date: str  # ISO 8601 author date
    author: str
    message: str  # first line
    numbers: list[str]  # numbers the message states ("1.5x", "30%", "-20% memory")
    path: str  # the file after the commit (before it, for a deleted file)
    kernel: str
    before_path: str = ""  # the file before the commit (differs on a rename)
    before: list[int] = field(default_factory=list)  # [first line, last line] before
    after: list[int] = field(default_factory=list)  # and after
    before_blob: str = ""
    after_blob: str = ""
    changed: list[str] = field(default_factory=list)  # "+ fact" / "- fact": what the diff shows

    @property
    def short(self) -> str:
        return self.commit[:8]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]):
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


@dataclass
class HistoryEvent(Change):
    technique: str = ""  # skeleton id
    kind: str = "introduced"  # one of KINDS


@dataclass
class Draft(Change):
    reason: str = ""  # why it looks like an optimisation
    review: str = "pending"  # one of REVIEWS
    note: str = ""
    reviewed: str = ""  # ISO date of the review
    # the kernel model's edit, normalised so the same change in two repositories reads the
    # same ("+ call tl.range(num_stages)", "fewer call tl.load", "launch num_warps up"):
    # skel/miner/changes.py `edit`; None in drafts mined before it was recorded
    edit: list[str] | None = None
    language: str = "triton"  # the kernel's language ("triton", "cuda")

    @property
    def listed_as(self) -> str:
        """What the review means for the catalog, in words."""
        return {"pending": "to review", "accepted": "to write as a skeleton (not written yet)",
                "rejected": "rejected"}[self.review]


@dataclass
class RepoState:
    repo: str  # its label: what its events say (``owner/name``, a folder's name), unique in the store
    root: str  # where the repository was read from (export reads blobs from it)
    last_commit: str  # the newest commit mined; the next run starts after it
    since: str | None = None  # the --since of the first run (later runs continue after last_commit)
    commits: int = 0  # commits read so far
    updated: str = ""
    # which repository it is (``GitSource.origin``: the remote, else the resolved location);
    # "" in a state written before identities (then only its root tells)
    identity: str = ""
    # older commits a run with --max-commits left unread (it reads the newest N): ranges
    # [after, upto], oldest first, each the commits after ``after`` ("": from the first
    # commit) up to ``upto``; the next run reads them as well as the commits after last_commit
    unread: list[list[str]] = field(default_factory=list)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RepoState":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


@dataclass
class TechniqueHistory:
    """The commits that introduced one technique, latest first."""

    events: list[HistoryEvent]

    @property
    def commits(self) -> int:
        return len({(e.repo, e.commit) for e in self.events})

    @property
    def repos(self) -> list[str]:
        return sorted({e.repo for e in self.events})

    def line(self) -> str:
        """"introduced in 3 commits across 2 repositories (latest: 2025-03-01 fla@1a2b3c4d ...)"."""
        latest = self.events[0]
        n, m = self.commits, len(self.repos)
        return (f"introduced in {n} commit{'s' if n != 1 else ''} across {m} "
                f"repositor{'ies' if m != 1 else 'y'} (latest: {latest.date[:10]} "
                f"{latest.repo}@{latest.short} {latest.message[:72]})")


R = TypeVar("R", bound=Change)


def same_path(a: str, b: str) -> bool:
    """Do two paths name the same place (resolved)?"""
    try:
        return Path(a).resolve() == Path(b).resolve()
    except (OSError, RuntimeError):
        return a == b


class HistoryStore:
    """The history files of one store directory."""

    def __init__(self, store_dir: str | os.PathLike) -> None:
        location = str(store_dir)
        if location.startswith(("http://", "https://")):
            raise StoreError(f"{location}: history is kept in files beside a local store; "
                             "give a local --store directory")
        self.dir = Path(location) / "history"

    # --- reading ------------------------------------------------------------------------
    def _read(self, name: str, cls: type[R]) -> list[R]:
        path = self.dir / name
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StoreError(f"{path}: unreadable: {exc.strerror or exc}") from exc
        out = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    out.append(cls.from_dict(json.loads(line)))
                except (ValueError, TypeError) as exc:
                    raise StoreError(f"{path}:{n}: not a history record ({exc}); "
                                     "delete the history folder and mine again") from exc
        return out

    def events(self, repo: str | None = None) -> list[HistoryEvent]:
        """Every event (of ``repo``), oldest first."""
        evs = self._read("events.jsonl", HistoryEvent)
        return sorted((e for e in evs if repo is None or e.repo == repo), key=lambda e: (e.date, e.id))

    def drafts(self, repo: str | None = None) -> list[Draft]:
        ds = self._read("drafts.jsonl", Draft)
        return sorted((d for d in ds if repo is None or d.repo == repo), key=lambda d: (d.date, d.id))

    def states(self) -> dict[str, RepoState]:
        path = self.dir / "state.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise StoreError(f"{path}: unreadable history state ({exc}); delete it to mine history again") from exc
        return {k: RepoState.from_dict(v) for k, v in data.items()}

    def state(self, repo: str) -> RepoState | None:
        """The state of the repository labelled ``repo``."""
        return self.states().get(repo)

    def state_of(self, identity: str, root: str) -> RepoState | None:
        """The state of the repository ``identity`` (``GitSource.origin``). A state written
        before identities were recorded is this repository's when it was read from the
        same resolved ``root``."""
        states = list(self.states().values())
        for st in states:
            if st.identity == identity:
                return st
        for st in states:
            if not st.identity and same_path(st.root, root):
                return st
        return None

    def by_technique(self, kind: str = "introduced") -> dict[str, TechniqueHistory]:
        """Events of one kind grouped by technique, latest first."""
        out: dict[str, list[HistoryEvent]] = {}
        for e in reversed(self.events()):
            if e.kind == kind:
                out.setdefault(e.technique, []).append(e)
        return {sid: TechniqueHistory(evs) for sid, evs in out.items()}

    def find(self, ident: str) -> HistoryEvent | Draft:
        """An event or draft by id, or by a unique prefix of at least 4 characters."""
        if len(ident) < 4:
            raise UsageError(f"{ident!r}: give at least 4 characters of the id")
        records: list[HistoryEvent | Draft] = [*self.events(), *self.drafts()]
        hits = [r for r in records if r.id.startswith(ident)]
        if not hits:
            raise NotFoundError(f"no history event or draft {ident!r} in {self.dir.parent}")
        if len(hits) > 1:
            raise UsageError(f"{ident!r} is ambiguous: {', '.join(h.id for h in hits[:5])}")
        return hits[0]

    # --- writing ------------------------------------------------------------------------
    def _write(self, name: str, text: str) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.dir / name
        tmp = path.with_name(f".{name}.{os.getpid()}.tmp")
        try:
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            tmp.replace(path)  # atomic: readers see the old file or the new one
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise StoreError(f"{path}: cannot write: {exc.strerror or exc}") from exc

    @staticmethod
    def _lines(records: Iterable[Change]) -> str:
        return "".join(json.dumps(r.to_dict(), sort_keys=True) + "\n" for r in records)

    def commit_batch(self, events: list[HistoryEvent], drafts: list[Draft], state: RepoState) -> None:
        """Add a batch's records (merged by id), then move the repository's marker."""
        if events:
            merged_events = {e.id: e for e in self._read("events.jsonl", HistoryEvent)}
            merged_events.update({e.id: e for e in events})
            self._write("events.jsonl", self._lines(merged_events.values()))
        if drafts:
            merged = {d.id: d for d in self._read("drafts.jsonl", Draft)}
            for d in drafts:
                old = merged.get(d.id)
                if old is not None and old.review != "pending":  # a redo never undoes a review
                    d.review, d.note, d.reviewed = old.review, old.note, old.reviewed
                merged[d.id] = d
            self._write("drafts.jsonl", self._lines(merged.values()))
        states = self.states()
        states[state.repo] = state
        self._write("state.json", json.dumps({k: asdict(v) for k, v in sorted(states.items())}, indent=1) + "\n")

    def review(self, ident: str, decision: str, note: str, date: str) -> Draft:
        """Record a person's review of a draft: accepted or rejected, with a note."""
        if decision not in ("accepted", "rejected"):
            raise UsageError(f"{decision!r}: a draft is accepted or rejected")
        found = self.find(ident)
        if not isinstance(found, Draft):
            raise UsageError(f"{found.id} is a history event, not a draft (`skel skeletons list --drafts`)")
        drafts = self._read("drafts.jsonl", Draft)
        for d in drafts:
            if d.id == found.id:
                d.review, d.note, d.reviewed = decision, note, date
                found = d
        self._write("drafts.jsonl", self._lines(drafts))
        return found
