"""History mining: walk a repository's commits and record how its kernels were optimised.

For each commit on the first-parent line (oldest first; a merge is read as its diff
against its first parent, never against the others), the kernel-language files it changed
(``.py`` for Triton; ``.cu``, ``.cuh``, ``.cpp``, ``.h`` ... for CUDA C++: the miner's
``SUFFIXES``) are read before and after from git (``GitBlobs``: blobs, nothing checked out,
bare repositories too). Files holding a Triton or CUDA kernel go through the miner's own
extraction and tagging
(``extract_many`` with the content-keyed ``FactsCache``: a blob extracted once is never
parsed again, in this run or the next). Kernels are matched by name across the change
(a renamed file is followed; a renamed kernel is not) and compared with
``skel.miner.changes``: each technique introduced, removed or refined becomes a
``HistoryEvent``; a changed kernel no technique explains but whose message or tracked
launch/tile facts look like an optimisation becomes a ``Draft`` for a person to review
(never from a fix or a revert: ``changes.fix_not_optimisation``). A draft keeps the
normalised edit of its kernel model (``changes.edit``), which ``skel.miner.candidates``
groups into candidate techniques.

``until`` bounds the walk by date: the tip becomes the newest first-parent commit of ``rev``
committed before it (a bare ``YYYY-MM-DD`` is midnight UTC), so a benchmark's cutoff keeps
every later commit out; a later run without it continues after that commit.

A repository's progress is kept under its identity (its remote, else its resolved
location: ``GitSource.origin``), not its folder's name: two mirrors both named ``repo`` are
two histories. Its events carry a label (``history_label``): the remote's ``owner/name``,
else the folder's name (its parent's, for a folder named like ``repo``), made unique in the
store.

Commits are handled in batches; after each batch its records and then the repository's
marker (last commit, and the ranges of older commits still unread) are written
(skel/store/history.py), so an interrupted run loses at most a batch and a re-run reads
only commits after the marker and in those ranges. ``max_commits`` N reads the newest N
commits to read (as ``git log -n`` does); the older ones are left as unread ranges for the
next run, which reads them (newest first again when it is limited too).
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from skel.errors import UsageError
from skel.kernels.extract import SUFFIXES
from skel.miner import changes
from skel.miner.mine import FactsCache, extract_many, walk_hint
from skel.miner.sources import GitBlobs, GitSource, repo_identity
from skel.miner.walk import Skipped, SourceFile, wanted
from skel.store.history import Draft, HistoryEvent, HistoryStore, RepoState, record_id, same_path

Progress = Callable[[int, int, str], None]
_PR_MERGE = re.compile(r"^Merge pull request #\d+ from \S+$")
BATCH = 300  # commits per batch: one parallel extraction and one write each
NULL = "0" * 40


@dataclass
class FileChange:
    status: str  # A, M, D, R, C, T
    old_path: str
    new_path: str
    old_blob: str | None
    new_blob: str | None


@dataclass
class Commit:
    sha: str
    parents: list[str]
    date: str
    author: str
    message: str
    changes: list[FileChange] = field(default_factory=list)

    @property
    def subject(self) -> str:
        """The message's first line; for a GitHub merge ("Merge pull request #81 from
        owner/branch"), the pull request's title (the body's first line) with it:
        "Grouped GEMM: skip padding (Merge pull request #81 from owner/branch)"."""
        lines = [line.strip() for line in self.message.strip().splitlines()]
        if not lines:
            return ""
        if _PR_MERGE.match(lines[0]):
            title = next((line for line in lines[1:] if line), "")
            if title:
                return f"{title} ({lines[0]})"
        return lines[0]


@dataclass
class HistoryReport:
    repo: str  # the label its events carry
    root: str
    tip: str
    start: str | None = None  # the commit the walk started after (None: from the first)
    since: str | None = None
    until: str | None = None  # the date the walk was bounded by (the tip: the last commit before it)
    commits_walked: int = 0  # first-parent commits in the range
    commits_read: int = 0  # of those, commits changing kernel-language files (.py, .cu ...) that were read
    commits_kernels: int = 0  # commits changing a file that holds a kernel
    files_extracted: int = 0  # distinct kernel-file versions whose facts were needed
    parsed: int = 0
    cached: int = 0
    events: Counter = field(default_factory=Counter)  # by kind
    drafts: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    up_to_date: bool = False
    more: bool = False  # --max-commits left older commits unread (the next run reads them)
    listed: int = 0  # commits to read this run (changing kernel-language files), before --max-commits
    left: int = 0  # of those, the older ones --max-commits left for the next run
    older: int = 0  # commits read that an earlier --max-commits run had left
    last_commit: str = ""
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    jobs: int = 1
    identity: str = ""  # which repository (its remote, else its resolved location)

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["events"] = dict(self.events)
        d["skipped"] = [s.__dict__ for s in self.skipped]
        return d


# --- reading the log -------------------------------------------------------------------

def _git(cwd: Path, *args: str) -> str:
    try:
        out = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OSError(f"git {args[0]} failed: {exc}") from exc
    if out.returncode != 0:
        first = (out.stderr.decode(errors="replace").strip().splitlines() or ["failed"])[0]
        raise OSError(f"git {args[0]}: {first}")
    return out.stdout.decode(errors="replace")


LOG_FORMAT = "%x1e%H%x1f%P%x1f%aI%x1f%an%x1f%B%x1f"
#: the files history reads: Triton's .py and CUDA C++'s suffixes, as `skel mine` reads them
PATHSPECS = tuple(f"*{suffix}" for suffix in SUFFIXES)


def read_log(cwd: Path, rev_range: str, since: str | None) -> list[Commit]:
    """First-parent commits of ``rev_range`` changing kernel-language files (``.py``,
    ``.cu``, ``.cuh``, ``.cpp``, ``.h`` ...), oldest first, with their raw changes (blob ids
    before and after, renames followed)."""
    args = ["log", "--first-parent", "--reverse", "--diff-merges=first-parent", "--raw", "--no-abbrev", "-M",
            "-z", f"--format={LOG_FORMAT}"]
    if since:
        args.append(f"--since={since}")
    try:
        out = subprocess.run(["git", "-C", str(cwd), *args, rev_range, "--", *PATHSPECS], capture_output=True,
                             timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OSError(f"git log failed: {exc}") from exc
    if out.returncode != 0:
        first = (out.stderr.decode(errors="replace").strip().splitlines() or ["failed"])[0]
        raise OSError(f"git log: {first}")
    commits = []
    for record in out.stdout.split(b"\x1e")[1:]:
        head, _, raw = record.partition(b"\x1f\x00")
        sha, parents, date, author, message = head.decode(errors="replace").split("\x1f", 4)
        c = Commit(sha, parents.split(), date, author, message)
        fields = raw.lstrip(b"\n").split(b"\x00")
        i = 0
        while i < len(fields) and fields[i].startswith(b":"):
            meta = fields[i].decode().split()
            status = meta[4][0]
            paths = 2 if status in "RC" else 1
            old = os.fsdecode(fields[i + 1])
            new = os.fsdecode(fields[i + paths])
            i += 1 + paths
            if not (wanted(old) or wanted(new)):
                continue
            c.changes.append(FileChange(status, old, new, None if meta[2] == NULL else meta[2],
                                        None if meta[3] == NULL or status == "D" else meta[3]))
        commits.append(c)
    return commits


def last_commit_before(cwd: Path, rev: str, until: str) -> str:
    """The newest first-parent commit of ``rev`` committed before ``until`` (a date git
    reads; a bare ``YYYY-MM-DD`` is midnight UTC: git alone would read it as that day at
    the current time of day, letting the cutoff day's own commits through). Raises
    FileNotFoundError when every commit is as new as ``until`` or newer."""
    bound = f"{until} 00:00:00 +0000" if re.fullmatch(r"\d{4}-\d{2}-\d{2}", until.strip()) else until
    sha = _git(cwd, "log", "--first-parent", "-1", f"--before={bound}", "--format=%H", rev).strip()
    if not sha:
        raise FileNotFoundError(f"{cwd}: no commit of {rev} was committed before {until}")
    return sha


def count_commits(cwd: Path, rev_range: str, since: str | None) -> int:
    args = ["rev-list", "--count", "--first-parent"] + ([f"--since={since}"] if since else []) + [rev_range]
    return int(_git(cwd, *args).strip() or 0)


# --- one batch -------------------------------------------------------------------------

def _kernels(value: list[dict] | str | None) -> dict[str, dict]:
    """Kernels of one file version by name (a second kernel of the same name gets #2)."""
    out: dict[str, dict] = {}
    if not isinstance(value, list):
        return out
    seen: Counter = Counter()
    for entry in value:
        name = entry["facts"]["name"]
        seen[name] += 1
        out[name if seen[name] == 1 else f"{name}#{seen[name]}"] = entry
    return out


def _span(entry: dict | None) -> list[int]:
    return [entry["facts"]["line_start"], entry["facts"]["line_end"]] if entry else []


def diff_commit(repo: str, c: Commit, blobs: dict[str, SourceFile | Skipped],
                facts: dict[str, list[dict] | str]) -> tuple[list[HistoryEvent], list[Draft], bool]:
    """(events, drafts, whether the commit touched a kernel) of one commit."""
    def version(blob: str | None) -> dict[str, dict]:
        f = blobs.get(blob) if blob else None
        return _kernels(facts.get(f.digest)) if isinstance(f, SourceFile) else {}

    numbers = changes.numbers(c.message)
    words = changes.optimisation_words(c.message)
    fix = changes.fix_not_optimisation(c.message)  # a fix or a revert makes no draft
    events: list[HistoryEvent] = []
    drafts: list[Draft] = []
    touched = False
    for ch in c.changes:
        before, after = version(ch.old_blob), version(ch.new_blob)
        if not before and not after:
            continue
        touched = True
        path = ch.new_path if ch.new_blob else ch.old_path
        for name in sorted(set(before) & set(after)):
            b, a = before[name], after[name]
            compared = changes.compare(b, a)
            if compared is None:  # this kernel and its launches are as they were
                continue
            techniques, tracked = compared
            common: dict[str, Any] = dict(repo=repo, commit=c.sha, date=c.date, author=c.author, message=c.subject,
                          numbers=numbers, path=path, kernel=name, before_path=ch.old_path,
                          before=_span(b), after=_span(a), before_blob=ch.old_blob or "",
                          after_blob=ch.new_blob or "")
            for technique, kind, changed in techniques:
                events.append(HistoryEvent(id=record_id(repo, c.sha, path, name, technique, kind),
                                           technique=technique, kind=kind, changed=changed, **common))
            if techniques or fix:  # a skeleton explains it, or the commit repairs something
                continue
            reasons = []
            if tracked:
                reasons.append("tracked launch/tile facts changed")
            if words:
                reasons.append(f"message says {', '.join(words[:3])}")
            if reasons:
                drafts.append(Draft(id=record_id(repo, c.sha, path, name, "draft"), reason="; ".join(reasons),
                                    changed=tracked or ["kernel source changed (no tracked fact did)"],
                                    edit=changes.edit(b, a), language=a["facts"].get("language", "triton"),
                                    **common))
    return events, drafts, touched


#: folder names that say nothing of the repository: a label uses the folder above instead
GENERIC_NAMES = {"repo", "repos", "repository", "src", "source", "code", "git", "mirror", "checkout", "clone"}


def history_label(src: GitSource) -> str:
    """A label for the repository's events: its remote's ``owner/name`` (the path after the
    host, ``github.com/fla-org/flash-linear-attention`` -> ``fla-org/flash-linear-attention``),
    else its folder's name (``.git`` dropped), or, for a folder named like ``repo``
    (``GENERIC_NAMES``), the folder above it."""
    remote = repo_identity(src.cwd)
    if remote and not remote.startswith("/") and remote.count("/") >= 2:
        return remote.split("/", 1)[1]
    folder = src.cwd.resolve()
    if folder.name == ".git":
        folder = folder.parent
    if src.name.lower() in GENERIC_NAMES and folder.parent.name:
        return folder.parent.name
    return src.name


def _unique_label(label: str, src: GitSource, taken: set[str]) -> str:
    """``label``, or a longer one when another repository of the store has it."""
    folder = src.cwd.resolve()
    if folder.name == ".git":
        folder = folder.parent
    tries = [label, f"{label}/{src.subpath}" if src.subpath else "",
             f"{folder.parent.name}/{src.name}" if folder.parent.name else ""]
    for t in tries:
        if t and t not in taken:
            return t
    n = 2
    while f"{label}~{n}" in taken:
        n += 1
    return f"{label}~{n}"


def _repository(src: GitSource, hs: HistoryStore, name: str | None, root: str) -> tuple[str, RepoState | None]:
    """(label, state) of the repository ``src`` reads: found by its identity; ``name`` (the
    --source given) labels it, and must not be another repository's label."""
    identity = src.origin
    if name:
        state = hs.state(name)
        if state is not None and state.identity != identity and (state.identity or not same_path(state.root, root)):
            raise UsageError(f"the history store already has a repository named {name!r}, mined from "
                             f"{state.identity or state.root}; this one is {identity}: give it another --source NAME")
        return name, state
    state = hs.state_of(identity, root)
    if state is not None:
        return state.repo, state
    return _unique_label(history_label(src), src, set(hs.states())), None


def _is_ancestor(cwd: Path, older: str, newer: str) -> bool:
    try:
        _git(cwd, "merge-base", "--is-ancestor", older, newer)
    except OSError:
        return False
    return True


def _unread(ranges: list[tuple[str, str]], listed: list[tuple[int, Commit]], done: set[str]) -> list[list[str]]:
    """The ranges (``RepoState.unread``) of the listed commits not in ``done``, oldest first:
    each maximal run of unread commits of a range, from the commit before it (or the
    range's start) up to its last commit (or the range's end, for a run that ends it)."""
    out: list[list[str]] = []
    for k, (after, upto) in enumerate(ranges):
        prev, start = after, None  # start: the "after" of the run of unread commits going on
        for j, c in listed:
            if j != k:
                continue
            if c.sha in done:
                if start is not None:
                    out.append([start, prev])
                    start = None
            elif start is None:
                start = prev
            prev = c.sha
        if start is not None:
            out.append([start, upto])
    return out


def mine_history(repo_path: str | os.PathLike, hs: HistoryStore, *, name: str | None = None, rev: str = "HEAD",
                 since: str | None = None, until: str | None = None, max_commits: int | None = None,
                 jobs: int | None = None, cache_root: Path | None = None,
                 progress: Progress | None = None) -> HistoryReport:
    """Mine the history of ``repo_path`` (up to ``rev``; with ``until``, up to its last
    first-parent commit before that date) into ``hs``; only commits after the last one
    mined for this repository, and older ones an earlier ``max_commits`` run left, are read
    (``max_commits``: the newest N of them). Raises FileNotFoundError for a missing
    repository or revision (or no commit before ``until``), OSError when git fails."""
    t0 = time.perf_counter()
    src = GitSource(repo_path, rev, name=name)
    if until:
        src = GitSource(repo_path, last_commit_before(src.cwd, src.commit, until), name=name)
    root = str(Path(repo_path).resolve())
    cwd = src.cwd
    repo, state = _repository(src, hs, name, root)
    jobs = jobs or min(2, os.cpu_count() or 1)
    report = HistoryReport(repo=repo, root=str(repo_path), tip=src.commit, since=since, until=until, jobs=jobs,
                           identity=src.origin)
    # what to read: (after, upto) ranges, oldest first: the older ones an earlier --max-commits
    # run left, then the commits after the last one mined ("" after: from the first commit)
    ranges: list[tuple[str, str]] = [("", src.commit)]
    if state is not None:
        if since != state.since and since is not None:
            report.notes.append(f"--since {since} ignored: {repo} was first mined with --since "
                                f"{state.since or '(none)'}; this run continues after {state.last_commit[:8]}")
        since = state.since
        ranges = [(after, upto) for after, upto in state.unread]
        if until and state.last_commit != src.commit and _is_ancestor(cwd, src.commit, state.last_commit):
            # mined past the bound already: what is before it was read (or is in `unread`)
            report.notes.append(f"{repo} was mined up to {state.last_commit[:8]}, past --until {until} "
                                f"({src.commit[:8]}): nothing newer to read before it")
        elif state.last_commit != src.commit:
            try:
                _git(cwd, "merge-base", "--is-ancestor", state.last_commit, src.commit)
            except OSError as exc:
                raise OSError(f"the last commit mined ({state.last_commit[:8]}) is not in the history of {rev} "
                              "(rewritten history?): mine into a new --store") from exc
            ranges.append((state.last_commit, src.commit))
            report.start = state.last_commit
        if not ranges:
            report.up_to_date, report.last_commit = True, state.last_commit
            report.seconds = time.perf_counter() - t0
            return report
    report.since = since
    older = len(state.unread) if state else 0  # ranges below this index are older ones left unread
    listed: list[tuple[int, Commit]] = []  # (range index, commit), oldest first
    for k, (after, upto) in enumerate(ranges):
        rng = f"{after}..{upto}" if after else upto
        report.commits_walked += count_commits(cwd, rng, since)
        listed += [(k, c) for c in read_log(cwd, rng, since)]
    # --max-commits N reads the newest N (as `git log -n` shows); the older ones are kept as
    # unread ranges in the state, and the next run reads them
    chosen = listed if max_commits is None else listed[max(len(listed) - max_commits, 0):]
    commits = [c for _, c in chosen]
    report.listed, report.left = len(listed), len(listed) - len(chosen)
    report.older = sum(k < older for k, _ in chosen)
    report.more = report.left > 0
    cache = FactsCache(cache_root)
    done_commits = state.commits if state else 0
    done: set[str] = set()
    last = src.commit  # every range ends at it; what is still unread below it is in `unread`
    for i in range(0, max(len(commits), 1), BATCH):
        batch = commits[i:i + BATCH]
        wanted = list(dict.fromkeys((p, b) for c in batch for ch in c.changes
                                    for p, b in ((ch.old_path, ch.old_blob), (ch.new_path, ch.new_blob)) if b))
        blobs: dict[str, SourceFile | Skipped] = {}
        for (_, sha), item in zip(wanted, GitBlobs(cwd, wanted, name=repo).items()):
            blobs[sha] = item
            if isinstance(item, Skipped):
                report.skipped.append(item)
        todo = list({f.digest: f for f in blobs.values()
                     if isinstance(f, SourceFile) and walk_hint(f.text, f.rel)}.values())
        facts, cached = extract_many(todo, cache, jobs, by_digest=True)
        report.skipped += [Skipped(f.rel, str(facts[f.digest])) for f in todo if isinstance(facts.get(f.digest), str)]
        report.files_extracted += len(todo)
        report.cached += cached
        report.parsed += len(todo) - cached
        events: list[HistoryEvent] = []
        drafts: list[Draft] = []
        for c in batch:
            evs, drs, touched = diff_commit(repo, c, blobs, facts)
            events += evs
            drafts += drs
            report.commits_kernels += touched
        report.commits_read += len(batch)
        report.events.update(e.kind for e in events)
        report.drafts += len(drafts)
        done_commits += len(batch)
        done.update(c.sha for c in batch)
        hs.commit_batch(events, drafts, RepoState(repo=repo, root=root, last_commit=last, since=since,
                                                  commits=done_commits, identity=src.origin,
                                                  unread=_unread(ranges, listed, done),
                                                  updated=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())))
        if progress:
            progress(min(i + BATCH, len(commits)), len(commits), "commits")
    report.last_commit = last
    report.seconds = time.perf_counter() - t0
    return report
