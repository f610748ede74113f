"""Candidate techniques: the changes history mining could not explain, grouped for a person
to promote into skeletons.

History mining (skel/miner/history.py) records a *draft* for each changed kernel that looks
like an optimisation but whose change no skeleton explains, with the normalised edit of its
kernel model (``Draft.edit``, skel/miner/changes.py ``edit``): "+ call tl.range(num_stages)",
"fewer call tl.load", "launch num_warps up", "+ constexpr sequence length (was a runtime
parameter)". Names and values of the repository never appear in it, so the same change
made in two repositories reads the same. This module groups those drafts:

1. **What is unexplained.** Every draft, less those a person rejected and those whose
   kernel, in the same commit, has a history event (a skeleton explains that change: a
   store mined again with a larger catalog). The same commit mined from two repositories
   (a fork, a vendored copy) counts once; a commit whose message says it only reformats
   (clang-format, lint, pre-commit, style, typo: ``HOUSEKEEPING``) is left out too.
2. **Tokens.** Each change is described by its edit's tokens, and by the keywords of its
   commit message (``message: fuse``, ``message: vectorize`` ...: ``MESSAGE_WORDS``). Tokens
   that say nothing on their own ("kernel longer", "more parameters", "message: speed")
   and, in a large store, tokens that a sixth of all unexplained commits show, are never a
   group's key (they may still describe one).
3. **Groups.** Greedily, the token whose changes score highest becomes a group's key, and
   those changes leave the pool; then the next. Code edits go first; the changes left are
   then grouped by a message keyword. A group needs two commits; a change that joins none
   is left ungrouped. Each group is described by its key and the tokens at least half its
   changes share.
4. **Rank.** ``score = 2 x repositories + log2(1 + commits) + log2(1 + commits whose
   message claims an optimisation) + log2(1 + commits whose message states a number)``
   (claims: faster, optimise, perf, fuse ...: ``changes.optimisation_words``; numbers: "1.3x",
   "20% faster", "2.1 ms"): spread across repositories first, then how often, then whether
   the authors said it was for speed and measured it.

``candidates(hs)`` returns the groups, best first; each instance keeps its repository,
commit, file, kernel, the message's first line and a web link when the repository's remote
is on a known forge (``file_url``, else ``commit_url``).
"""

from __future__ import annotations

import heapq
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

from skel.miner.changes import optimisation_words
from skel.miner.sources import commit_url, file_url
from skel.store.history import Draft, HistoryEvent, HistoryStore

# the commit message's keywords: (token, pattern on the first line), whole words or stems
MESSAGE_WORDS: list[tuple[str, re.Pattern[str]]] = [(t, re.compile(p, re.I)) for t, p in [
    ("fuse", r"\bfus(?:e|ed|es|ing|ion|ions)\b"),
    ("vectorize", r"\bvectori[sz]\w*|\bvectorized\b|\b(?:float|half|bf16|int)[248]\b|\b128-?bit\b"),
    ("pipeline", r"\bpipelin\w*|\bnum_stages\b|\bmulti-?stage\b|\bdouble[- ]buffer\w*"),
    ("prefetch", r"\bprefetch\w*"),
    ("persistent", r"\bpersistent\b"),
    ("split", r"\bsplit[-_ ]?(?:k|kv)\b|\bsplit\w*"),
    ("autotune", r"\bautotun\w*|\btun(?:e|ed|ing)\b|\bconfigs?\b"),
    ("block size", r"\bblock[_ ]?sizes?\b|\btile[_ ]?sizes?\b|\bBLOCK_\w+|\btiles?\b|\btiling\b"),
    ("warps", r"\bnum_warps\b|\bwarps?\b"),
    ("cache", r"\bcach(?:e|ed|es|ing)\b|\bevict\w*|\bl2\b"),
    ("shared memory", r"\bshared[ _]mem\w*|\bsmem\b"),
    ("registers", r"\bregisters?\b|\bregister pressure\b|\bspill\w*"),
    ("tma", r"\btma\b|\btensor[ _]descriptors?\b"),
    ("mma", r"\bwgmma\b|\bmma\b|\btensor cores?\b"),
    ("fp8", r"\bfp8\b|\be4m3\b|\be5m2\b"),
    ("quantization", r"\bquant\w*|\bint4\b|\bint8\b|\bw4a\d+\b|\bw8a\d+\b"),
    ("int64", r"\bint64\b|\boverflow\w*|\b64-?bit\b"),
    ("precision", r"\bprecision\b|\btf32\w*|\bfp32 accum\w*|\bupcast\w*|\bnumeric\w*"),
    ("specialization", r"\bconstexpr\b|\brecompil\w*|\bspeciali[sz]\w*|\bdo_not_specialize\b"),
    ("launch overhead", r"\blaunch(?:es)?\b|\boverhead\b|\bcuda ?graphs?\b"),
    ("grid", r"\bgrid\b|\bprogram[_ ]ids?\b|\bpid\b"),
    ("occupancy", r"\boccupancy\b|\blaunch_bounds\b"),
    ("swizzle", r"\bswizzl\w*|\bl2[- ]friendly\b|\bgroup_m\b"),
    ("unroll", r"\bunroll\w*|\bstatic_range\b"),
    ("atomics", r"\batomic\w*"),
    ("reduction", r"\breduc\w*|\bcumsum\b|\bscan\b"),
    ("masking", r"\bmask\w*|\bboundary\b|\bpadding\b"),
    ("layout", r"\bcontiguous\b|\bstrides?\b|\blayout\b|\btranspos\w*|\bcoalesc\w*"),
    ("chunk", r"\bchunk\w*"),
    ("varlen", r"\bvarlen\b|\bvariable[- ]length\b"),
    ("decode", r"\bdecod\w*"),
    ("memory", r"\bmemory\b|\bmem\b|\bbandwidth\b|\bhbm\b"),
    ("recompute", r"\brecomput\w*|\bcheckpoint\w*"),
    ("speed", r"\bspeed\w*|\bfaster\b|\bfast\b|\bperf(?:ormance)?\b|\boptimi[sz]\w*|\baccelerat\w*|"
              r"\befficien\w*|\bthroughput\b|\blatency\b"),
]]
# a message saying the commit only tidies the code: its edits are no technique
HOUSEKEEPING = re.compile(r"\b(?:clang-?format|format(?:ting|ted)?|lint(?:ing|er)?|pre-commit|style|typos?|"
                          r"yapf|isort|ruff)\b", re.I)
# tokens that never key a group: they say that code moved, not how it got faster
GENERIC = {"kernel longer", "kernel shorter", "more parameters", "fewer parameters", "+ launch", "- launch",
           "more launch", "fewer launch", "+ loop", "- loop", "message: speed", "message: memory",
           "more loop depth", "fewer loop depth", "more constexpr parameters", "fewer constexpr parameters",
           "+ constexpr other", "- constexpr other", "more constexpr other", "fewer constexpr other"}
GENERIC_SHARE = 1 / 6  # in a store of at least GENERIC_MIN commits, a token this common keys no group
GENERIC_MIN = 60
MIN_COMMITS = 2  # a group is a change seen in two commits at least
SHARED = 0.5  # a token half a group's changes show describes it


@dataclass
class Instance:
    """One unexplained change: a draft, where it is, and what changed."""

    id: str
    repo: str
    commit: str
    date: str
    path: str
    line: int
    kernel: str
    language: str
    message: str
    numbers: list[str]
    claims: list[str]  # the message's optimisation words ("faster", "fuse", "perf" ...)
    edit: list[str]
    tokens: list[str]
    link: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Cluster:
    """A candidate technique: changes that share one edit (or message keyword)."""

    key: str
    instances: list[Instance]
    shared: list[tuple[str, float]] = field(default_factory=list)  # (token, share of the instances) besides the key
    by: str = "edit"  # "edit": keyed by a code edit; "message": by a message keyword

    @property
    def repos(self) -> list[str]:
        return sorted({i.repo for i in self.instances})

    @property
    def commits(self) -> int:
        return len({i.commit for i in self.instances})

    @property
    def stated(self) -> int:
        """Commits whose message states a number (a speed-up, a time, a share)."""
        return len({i.commit for i in self.instances if i.numbers})

    @property
    def claimed(self) -> int:
        """Commits whose message claims an optimisation (faster, optimise, perf, fuse ...)."""
        return len({i.commit for i in self.instances if i.claims})

    @property
    def numbers(self) -> list[str]:
        return list(dict.fromkeys(n for i in self.instances for n in i.numbers))

    @property
    def score(self) -> float:
        return score(len(self.repos), self.commits, self.claimed, self.stated)

    @property
    def languages(self) -> list[str]:
        return sorted({i.language for i in self.instances})

    def describe(self, n: int = 3) -> str:
        """The key, and the tokens most of its changes share."""
        extra = [f"{t} ({share:.0%})" for t, share in self.shared[:n]]
        return self.key + (f"; with {', '.join(extra)}" if extra else "")

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "by": self.by, "score": round(self.score, 3), "repos": self.repos,
                "commits": self.commits, "kernels": len(self.instances), "claimed": self.claimed,
                "stated": self.stated,
                "numbers": self.numbers, "languages": self.languages,
                "shared": [{"token": t, "share": round(s, 3)} for t, s in self.shared],
                "instances": [i.to_dict() for i in self.instances]}


@dataclass
class Candidates:
    """The groups, best first, and what went into them."""

    clusters: list[Cluster]
    drafts: int = 0  # drafts in the store
    unexplained: int = 0  # of those, the changes grouped (less rejected, explained and repeated ones)
    explained: int = 0  # drafts whose kernel has an event in the same commit
    rejected: int = 0
    repeated: int = 0  # the same commit, path and kernel read from another repository
    housekeeping: int = 0  # drafts of commits that only reformat (HOUSEKEEPING)
    ungrouped: int = 0  # unexplained changes in no group
    generic: list[str] = field(default_factory=list)  # tokens too common to key a group
    groups: int = 0  # groups found, before a caller keeps some (--min-repos, --limit)
    below: int = 0  # of those, the groups in fewer repositories than the caller asked for

    def to_dict(self) -> dict[str, Any]:
        return {"drafts": self.drafts, "unexplained": self.unexplained, "explained": self.explained,
                "rejected": self.rejected, "repeated": self.repeated, "housekeeping": self.housekeeping,
                "ungrouped": self.ungrouped,
                "generic": self.generic, "groups": self.groups, "below_min_repos": self.below,
                "clusters": [c.to_dict() for c in self.clusters]}


def score(repos: int, commits: int, claimed: int = 0, stated: int = 0) -> float:
    """``2 x repos + log2(1 + commits) + log2(1 + claimed) + log2(1 + stated)``: one more
    repository outweighs three times the commits."""
    return 2.0 * repos + math.log2(1 + commits) + math.log2(1 + claimed) + math.log2(1 + stated)


def message_tokens(message: str) -> list[str]:
    """The message keywords of a commit's first line, as tokens ("message: fuse")."""
    return [f"message: {token}" for token, pattern in MESSAGE_WORDS if pattern.search(message)]


_VALUE = re.compile(r"=[^,)]*")


def edit_of(d: Draft) -> list[str]:
    """A draft's normalised edit; for a draft mined before edits were recorded, its tracked
    facts with their values dropped ("+ launch num_warps=8" -> "+ launch num_warps")."""
    if d.edit is not None:
        return list(d.edit)
    out = []
    for line in d.changed:
        if line.startswith(("+ ", "- ")) and "no tracked fact" not in line:
            text = re.sub(r"\s*\(x\d+\)$", "", line)
            text = re.sub(r"(autotune|heuristics) (config|key) .*", r"\1 \2", text)
            out.append(_VALUE.sub("", text))
    return list(dict.fromkeys(out))


def _links(hs: HistoryStore) -> dict[str, tuple[str, str | None]]:
    """Per repository label: (its identity, a commit-link pattern with ``{commit}``)."""
    out: dict[str, tuple[str, str | None]] = {}
    for label, st in hs.states().items():
        pattern = None
        if not file_url(st.identity, "0" * 40, "x", 1):  # no forge in the identity: ask its remote
            pattern = commit_url(st.root, "{commit}")
        out[label] = (st.identity, pattern)
    return out


def unexplained(drafts: Iterable[Draft], events: Iterable[HistoryEvent],
                links: dict[str, tuple[str, str | None]] | None = None) -> tuple[list[Instance], dict[str, int]]:
    """The changes to group, oldest first, and how many drafts were left out and why."""
    explained = {(e.repo, e.commit, e.path, e.kernel) for e in events}
    links = links or {}
    seen: set[tuple[str, str, str]] = set()
    out: list[Instance] = []
    left: Counter[str] = Counter()
    for d in sorted(drafts, key=lambda d: (d.date, d.repo, d.id)):
        left["drafts"] += 1
        if d.review == "rejected":
            left["rejected"] += 1
            continue
        if (d.repo, d.commit, d.path, d.kernel) in explained:
            left["explained"] += 1
            continue
        if HOUSEKEEPING.search(d.message):
            left["housekeeping"] += 1
            continue
        if (d.commit, d.path, d.kernel) in seen:
            left["repeated"] += 1
            continue
        seen.add((d.commit, d.path, d.kernel))
        edit = edit_of(d)
        line = d.after[0] if d.after else (d.before[0] if d.before else 1)
        identity, pattern = links.get(d.repo, ("", None))
        link = file_url(identity, d.commit, d.path, line) if identity else None
        if link is None and pattern:
            link = pattern.replace("{commit}", d.commit)
        out.append(Instance(id=d.id, repo=d.repo, commit=d.commit, date=d.date, path=d.path, line=line,
                            kernel=d.kernel, language=d.language, message=d.message, numbers=list(d.numbers),
                            claims=optimisation_words(d.message), edit=edit,
                            tokens=list(dict.fromkeys(edit + message_tokens(d.message))), link=link))
    return out, dict(left)


def _spread(members: Iterable[int], instances: list[Instance]) -> float:
    repos, commits, claimed, stated = set(), set(), set(), set()
    for k in members:
        i = instances[k]
        repos.add(i.repo)
        commits.add(i.commit)
        if i.claims:
            claimed.add(i.commit)
        if i.numbers:
            stated.add(i.commit)
    if len(commits) < MIN_COMMITS:
        return -1.0
    return score(len(repos), len(commits), len(claimed), len(stated))


def generic_tokens(instances: list[Instance]) -> set[str]:
    """``GENERIC``, and in a store of at least ``GENERIC_MIN`` commits the tokens more than
    ``GENERIC_SHARE`` of them show."""
    commits = {i.commit for i in instances}
    out = set(GENERIC)
    if len(commits) >= GENERIC_MIN:
        per: dict[str, set[str]] = {}
        for i in instances:
            for t in i.tokens:
                per.setdefault(t, set()).add(i.commit)
        out |= {t for t, cs in per.items() if len(cs) > GENERIC_SHARE * len(commits)}
    return out


def _greedy(instances: list[Instance], pool: set[int], keys: dict[str, set[int]]) -> list[tuple[str, list[int]]]:
    """Groups by the best-scoring key first, each change in one group (lazy greedy: a key's
    score only falls as its changes are taken, so a popped key still scoring at least the
    next one's last score is the best)."""
    heap = [(-_spread(members, instances), key) for key, members in keys.items()]
    heapq.heapify(heap)
    groups: list[tuple[str, list[int]]] = []
    while heap:
        neg, key = heapq.heappop(heap)
        members = keys[key] & pool
        now = _spread(members, instances)
        if now < 0:
            continue
        if heap and now < -heap[0][0] - 1e-9:
            heapq.heappush(heap, (-now, key))
            continue
        groups.append((key, sorted(members)))
        pool -= members
    return groups


def candidates(hs: HistoryStore) -> Candidates:
    """The candidate techniques of a history store, best first (see the module docstring)."""
    return group(hs.drafts(), hs.events(), _links(hs))


def group(drafts: list[Draft], events: list[HistoryEvent],
          links: dict[str, tuple[str, str | None]] | None = None) -> Candidates:
    """Group ``drafts`` no event explains into candidate techniques, best first."""
    instances, left = unexplained(drafts, events, links)
    generic = generic_tokens(instances)
    pool = set(range(len(instances)))
    by_edit: dict[str, set[int]] = {}
    by_message: dict[str, set[int]] = {}
    for k, inst in enumerate(instances):
        for t in inst.tokens:
            if t not in generic:
                (by_message if t.startswith("message: ") else by_edit).setdefault(t, set()).add(k)
    groups = [(key, members, "edit") for key, members in _greedy(instances, pool, by_edit)]
    groups += [(key, members, "message") for key, members in _greedy(instances, pool, by_message)]
    clusters = []
    for key, members, by in groups:
        chosen = sorted((instances[k] for k in members), key=lambda i: (i.date, i.repo), reverse=True)
        counts = Counter(t for i in chosen for t in set(i.tokens) if t != key and t not in GENERIC)
        shared = sorted(((t, n / len(chosen)) for t, n in counts.items() if n / len(chosen) >= SHARED),
                        key=lambda ts: (-ts[1], ts[0]))
        clusters.append(Cluster(key=key, instances=chosen, shared=shared, by=by))
    clusters.sort(key=lambda c: (-c.score, -len(c.instances), c.key))
    return Candidates(clusters=clusters, drafts=left.get("drafts", 0), unexplained=len(instances),
                      explained=left.get("explained", 0), rejected=left.get("rejected", 0),
                      repeated=left.get("repeated", 0), housekeeping=left.get("housekeeping", 0),
                      ungrouped=len(pool), generic=sorted(generic - GENERIC),
                      groups=len(clusters))
