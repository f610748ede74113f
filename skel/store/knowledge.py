"""The knowledge base: one small class over chromadb with verb methods.

Collections (names prefixed ``skel_``):

- ``kernels``  — one record per mined kernel: the embedded fingerprint text, provenance
  (source, version, file, function, lines, content hash), the techniques it uses
  (``t:<id>`` flags) and the tests that exercise it.
- ``files``    — one record per mined file: its content hash. Written *after* the file's
  kernels, so it doubles as the commit marker that makes an interrupted mine resumable.
- ``sources``  — one record per mined repository/package: version, state (mining /
  complete), counts.
- ``verifications`` — typed verification runs (``skel.store.evidence.Verification``),
  written by ``skel verify --record``; read with the runs shipped in the package.
- ``meta``     — schema version, technique statistics and, per technique, a few mined
  kernels' texts for the retriever's lexical channel (rebuilt with the statistics).

Embeddings are always passed explicitly (never chroma's default embedding function,
which would try to download a model at run time). Records that need no vector carry a
constant one-dimensional placeholder.
"""

from __future__ import annotations

import atexit
import errno
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable
from urllib.parse import urlparse

from skel.errors import StoreError
from skel.store import faults, generation
from skel.store.evidence import Verification, merge_evidence, shipped_verifications

SCHEMA_VERSION = 1
_PLACEHOLDER = [1.0]
_PREFIX = "skel_"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# the lexical channel's share of each technique's mined kernels: enough fingerprints to
# carry their vocabulary (names, parameters, calls), few enough that the documentation
# still speaks for the technique
EXAMPLES_PER_TECHNIQUE = 8
# a lost Chroma server: retried after these pauses (seconds), then reported
SERVER_RETRY_DELAYS = (0.5, 1.0, 2.0, 4.0)
EXAMPLE_CHARS = 4000
# neighbours read beyond those asked for, to cut ties by id (see ``similar_many``)
TIE_MARGIN = 8
# Nearest neighbours are cut at n by (distance, id) here and in the read snapshot's
# SnapshotKB.similar_many; distances equal to this many decimals are a tie: the index and
# the snapshot compute the same cosine in float32 in different orders, a few units in the
# 7th decimal apart
TIE_DIGITS = 5


def default_location() -> str:
    if os.environ.get("SKEL_HOME"):
        return str(Path(os.environ["SKEL_HOME"]) / "store")
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return str(Path(base) / "skel" / "store")


def cache_dir() -> Path:
    """Local cache (parsed facts by content hash). Never shared, always safe to delete, and
    the same for every store: facts depend on file content only."""
    if os.environ.get("SKEL_HOME"):
        return Path(os.environ["SKEL_HOME"]) / "cache"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "skel"


@dataclass
class KernelRecord:
    id: str
    source: str
    # the source's version when this file's content was last mined: a file unchanged by a
    # later release keeps the version it was first seen in (its code is there verbatim)
    version: str
    file: str
    function: str
    line_start: int
    line_end: int
    content_hash: str
    techniques: list[str]
    tests: list[str]
    tokens: list[str]
    text: str
    embedding: list[float] | None = None
    distance: float | None = None  # filled by `similar`
    applicable: list[str] = field(default_factory=list)  # skeletons whose preconditions hold

    @property
    def location(self) -> str:
        return f"{self.source}@{self.version}:{self.file}:{self.line_start}:{self.function}"

    def metadata(self) -> dict[str, Any]:
        md: dict[str, Any] = {
            "source": self.source, "version": self.version, "file": self.file,
            "function": self.function, "line_start": self.line_start, "line_end": self.line_end,
            "content_hash": self.content_hash, "techniques": "," + ",".join(self.techniques) + ",",
            "applicable": "," + ",".join(self.applicable) + ",",
            "tests": "\n".join(self.tests)[:4000], "tokens": " ".join(self.tokens)[:8000],
        }
        for t in self.techniques:
            md["t:" + t] = True
        return md

    @classmethod
    def from_chroma(cls, id_: str, md: dict, doc: str | None, distance: float | None = None) -> "KernelRecord":
        return cls(
            id=id_, source=md["source"], version=md["version"], file=md["file"],
            function=md["function"], line_start=int(md["line_start"]), line_end=int(md["line_end"]),
            content_hash=md["content_hash"],
            techniques=[t for t in md.get("techniques", "").split(",") if t],
            applicable=[t for t in md.get("applicable", "").split(",") if t],
            tests=[t for t in md.get("tests", "").split("\n") if t],
            tokens=md.get("tokens", "").split(), text=doc or "", distance=distance,
        )


@dataclass
class SourceRecord:
    name: str
    version: str
    root: str
    state: str  # "mining" | "complete"
    started: float
    finished: float = 0.0
    counts: dict[str, int] = field(default_factory=dict)
    # where the code comes from (skel.miner.sources: a remote and path, a resolved folder,
    # package:NAME): what tells the same source from another one with the same name. ""
    # in records written before it existed (the miner then compares ``root``).
    origin: str = ""


@dataclass
class TechniqueStats:
    """How the mined kernels relate to one technique. ``applicable`` is None when the
    stored statistics predate it (the ranking then treats rarity as unknown)."""

    kernels: int = 0  # mined kernels that use it
    sources: list[str] = field(default_factory=list)  # repositories those kernels come from
    applicable: int | None = None  # mined kernels it would be suggested for


@dataclass
class Stats:
    """Technique statistics over the whole store, recomputed after every mine."""

    total_kernels: int = 0
    by_skeleton: dict[str, TechniqueStats] = field(default_factory=dict)

    def of(self, skeleton_id: str) -> TechniqueStats:
        """The technique's entry, or a fresh empty one when no mined kernel relates to it."""
        return self.by_skeleton.get(skeleton_id) or TechniqueStats()

    # On disk (meta collection, one JSON string): {"_total": {"kernels": n}, "<id>": {...}}.
    # The "_total" key lives only in this format, never in the objects callers see.
    def to_json(self) -> dict[str, dict]:
        out: dict[str, dict] = {"_total": {"kernels": self.total_kernels}}
        for sid, t in self.by_skeleton.items():
            entry: dict[str, Any] = {"kernels": t.kernels, "sources": t.sources}
            if t.applicable is not None:
                entry["applicable"] = t.applicable
            out[sid] = entry
        return out

    @classmethod
    def from_json(cls, data: dict[str, dict]) -> "Stats":
        return cls(
            total_kernels=data.get("_total", {}).get("kernels", 0),
            by_skeleton={sid: TechniqueStats(kernels=e.get("kernels", 0), sources=list(e.get("sources", [])),
                                             applicable=e.get("applicable"))
                         for sid, e in data.items() if sid != "_total"},
        )


class _Guarded:
    """A chroma collection whose every method call goes through ``KnowledgeBase._call``."""

    def __init__(self, col, kb: "KnowledgeBase") -> None:
        self._inner = col
        self._kb = kb

    def __getattr__(self, name: str):
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr
        return lambda *args, **kwargs: self._kb._call(attr, *args, **kwargs)


class KnowledgeBase:
    """``KnowledgeBase.open(location)`` — a directory path or ``http://host:port``."""

    def __init__(self, client, location: str) -> None:
        self._client = client
        self.location = location
        self._cols: dict[str, Any] = {}
        # reads a ranking repeats (counts, statistics, evidence, neighbours), kept while the
        # store's file is unchanged (see `_memo`), shared by every handle on the same folder
        # in this process: a server opens the store once per request
        self._kept = _KEPT.setdefault(str(Path(location).resolve()) if _stampable(location) else location,
                                      _Kept())
        # said to the user with what is read from here (a read-only store is read from a copy)
        self.note: str | None = None
        self.read_only = False  # a copy of a read-only store: what is written here is dropped

    # --- opening ------------------------------------------------------------------------
    @classmethod
    def open(cls, location: str | None = None, *, create: bool = True) -> "KnowledgeBase":
        location = location or default_location()
        try:  # chromadb: 0.5 s to import; a suggest that reads the snapshot never opens it
            import chromadb
            from chromadb.config import Settings
        except ImportError as exc:  # pragma: no cover - install problem
            raise StoreError(f"chromadb is not installed: {exc}") from exc
        settings = Settings(anonymized_telemetry=False)
        server = server_address(location)
        try:
            if server is not None:
                host, port, ssl = server
                client = _connect(location, lambda: chromadb.HttpClient(host=host, port=port, ssl=ssl,
                                                                         settings=settings))
            else:
                path = Path(location)
                if not create and not path.exists():
                    raise StoreError(f"no knowledge base at {path} (run `skel mine` first, or pass --store)")
                if path.exists() and not path.is_dir():
                    raise StoreError(f"store location {path} is a file, not a directory")
                if path.exists() and not _writable(path):
                    if create:
                        raise StoreError(f"store at {path} is read-only (permissions or a read-only "
                                         "filesystem): this needs a writable --store")
                    # chroma writes on open (migrations, its lock), even to read: read a copy
                    kb = cls(chromadb.PersistentClient(path=_read_only_copy(path), settings=settings), location)
                    kb.note = f"the store at {path} is read-only: read from a temporary copy"
                    kb.read_only = True
                    kb._check_schema()
                    return kb
                path.mkdir(parents=True, exist_ok=True)
                _check_intact(path)
                client = chromadb.PersistentClient(path=str(path), settings=settings)
        except StoreError:
            raise
        except Exception as exc:  # chroma raises many types for corrupt or unreachable stores
            raise StoreError(f"cannot open store at {location}: {type(exc).__name__}: {exc}") from exc
        kb = cls(client, location)
        kb._check_schema()
        return kb

    def _col(self, name: str):
        col = self._cols.get(name)
        if col is None:
            try:
                col = self._call(self._client.get_or_create_collection,
                                 _PREFIX + name, embedding_function=None, metadata={"hnsw:space": "cosine"})
            except StoreError:
                raise
            except Exception as exc:
                raise StoreError(f"store at {self.location}: cannot open collection {name}: {exc}") from exc
            col = _Guarded(col, self)
            self._cols[name] = col
        return col

    def _call(self, op, *args, **kwargs):
        """One call into chroma. Against a server, a dropped connection (a restart, a
        network blip) is retried a bounded number of times — every skel read and write is
        idempotent — and then reported in one line."""
        if not self.location.startswith(("http://", "https://")):
            return op(*args, **kwargs)
        import httpx  # httpx: 71 ms to import; only a Chroma server's store needs it

        for delay in (*SERVER_RETRY_DELAYS, None):
            try:
                return op(*args, **kwargs)
            except httpx.TransportError as exc:
                if delay is None:
                    raise StoreError(
                        f"the Chroma server at {self.location} stopped answering ({type(exc).__name__}: {exc}; "
                        f"{len(SERVER_RETRY_DELAYS) + 1} tries over {sum(SERVER_RETRY_DELAYS):g}s). The store "
                        "stays consistent: run the same command again once the server is back") from exc
                time.sleep(delay)

    def _write(self, op, **kwargs) -> None:
        """Every write to the store goes through here: one place that turns a full disk or a
        lost server into a one-line StoreError (the mine's write order keeps the store
        consistent at whatever write fails), and the test-only fault hook."""
        faults.before_write()
        self._forget()  # kept reads are stale once this handle writes
        # read snapshots (skel/store/snapshot.py) stop being the store before the write
        # starts, and a new generation says "changed" once it is done; a crash in between
        # leaves them unused. A server's writes are not seen here; a read-only store's copy
        # is thrown away.
        local = _stampable(self.location) and not self.read_only
        try:
            if local:
                generation.mark_dirty(self.location)
            op(**kwargs)
            if local:
                generation.mark_clean(self.location)
        except StoreError:
            raise
        except Exception as exc:
            reason = _write_reason(exc, self.location)
            raise StoreError(f"writing to the store at {self.location} failed: {reason}") from exc

    def _check_schema(self) -> None:
        meta = self._col("meta")
        try:
            got = meta.get(ids=["schema"], include=["metadatas"])
        except Exception as exc:
            raise StoreError(f"store at {self.location} is unreadable (corrupt?): {exc}") from exc
        if got["ids"]:
            version = got["metadatas"][0].get("version")
            if version != SCHEMA_VERSION:
                raise StoreError(
                    f"store at {self.location} has schema v{version}; this skel reads v{SCHEMA_VERSION}. "
                    "Mine into a new --store."
                )
        else:
            self._write(meta.upsert, ids=["schema"], embeddings=[_PLACEHOLDER],
                        metadatas=[{"version": SCHEMA_VERSION, "created": time.time()}])

    # --- reads kept between calls of a long-lived process -------------------------------
    def _stamp(self) -> tuple[int, int] | None:
        """A token that changes whenever any process writes this store: the modification
        time and size of chroma's sqlite file, which every write (records, metadata and the
        vectors' queue) goes through. None for a remote store: its writes cannot be seen
        from here, so nothing is kept."""
        if not _stampable(self.location):
            return None
        try:
            st = os.stat(Path(self.location) / "chroma.sqlite3")
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size

    def _forget(self) -> None:
        """Drop the kept reads before a write through this handle: a write within the
        file clock's tick may leave the stamp as it was."""
        self._kept.cache.clear()
        self._kept.stamp = None

    def _memo(self, key: tuple, read):
        """``read()``, or what it returned last time while the store is unchanged. A server
        or an agent's process asks the same store many times; each read costs a chroma
        round trip (and some a JSON parse), each check here one ``stat``. Callers must not
        mutate what comes back."""
        stamp = self._stamp()
        if stamp is None:
            return read()
        kept = self._kept
        if stamp != kept.stamp:
            kept.cache.clear()
            kept.stamp = stamp
        if key not in kept.cache:
            kept.cache[key] = read()
        return kept.cache[key]

    # --- the embedding model the vectors came from --------------------------------------
    def embedder_name(self) -> str | None:
        def read():
            got = self._col("meta").get(ids=["embedder"], include=["metadatas"])
            return got["metadatas"][0]["name"] if got["ids"] else None

        return self._memo(("embedder",), read)

    def check_embedder(self, name: str) -> str | None:
        """The model the store is bound to (None: not yet); StoreError when it is not ``name``."""
        current = self.embedder_name()
        if current is not None and current != name:
            raise StoreError(f"store at {self.location} holds {current!r} embeddings; this run uses {name!r}. "
                             "Use the same model (SKEL_EMBEDDER) or a new --store.")
        return current

    def bind_embedder(self, name: str) -> None:
        """Vectors from two models are not comparable: the first mine fixes the model and
        every later mine and query must use the same one."""
        if self.check_embedder(name) is None:
            self._write(self._col("meta").upsert, ids=["embedder"], embeddings=[_PLACEHOLDER],
                        metadatas=[{"name": name}])

    # --- kernels ------------------------------------------------------------------------
    def add_many(self, records: list[KernelRecord]) -> None:
        if not records:
            return
        for r in records:
            if r.embedding is None:
                raise ValueError(f"kernel record {r.location} has no embedding")
        self._write(
            self._col("kernels").upsert, ids=[r.id for r in records], embeddings=[r.embedding for r in records],
            documents=[r.text for r in records], metadatas=[r.metadata() for r in records],
        )

    def similar(self, embedding: list[float], n: int = 30, where: dict | None = None) -> list[KernelRecord]:
        return self.similar_many([embedding], n, where)[0]

    def similar_many(self, embeddings: list[list[float]], n: int = 30,
                     where: dict | None = None) -> list[list[KernelRecord]]:
        """``similar`` for several query vectors in one store query (a whole file's kernels)."""
        def key(vec) -> tuple:
            return ("similar", tuple(vec), n, json.dumps(where, sort_keys=True))

        out: dict[int, list[KernelRecord]] = {}
        todo = []
        for i, vec in enumerate(embeddings):
            hit = self._memo(key(vec), lambda: None)
            if hit is None:
                todo.append(i)
            else:
                out[i] = hit
        total = self.count() if todo else 0
        if todo and total == 0:
            out.update({i: [] for i in todo})
        elif todo:
            # a few more than asked, so that equally distant kernels (copies of one kernel)
            # are cut by id, not by the index's internal order: the read snapshot
            # (skel/store/snapshot.py) ranks the same way and answers the same
            res = self._col("kernels").query(query_embeddings=[embeddings[i] for i in todo],
                                             n_results=min(n + TIE_MARGIN, total), where=where,
                                             include=["metadatas", "documents", "distances"])
            for j, i in enumerate(todo):
                recs = [KernelRecord.from_chroma(a, m, d, dist) for a, m, d, dist in
                        zip(res["ids"][j], res["metadatas"][j], res["documents"][j], res["distances"][j])]
                recs = sorted(recs, key=lambda r: (round(r.distance or 0.0, TIE_DIGITS), r.id))[:n]
                self._kept.cache[key(embeddings[i])] = out[i] = recs
        return [out[i] for i in range(len(embeddings))]

    def kernels(self, where: dict | None = None, limit: int | None = None) -> list[KernelRecord]:
        res = self._col("kernels").get(where=where, limit=limit, include=["metadatas", "documents"])
        return [KernelRecord.from_chroma(i, m, d) for i, m, d in zip(res["ids"], res["metadatas"], res["documents"])]

    def using(self, technique: str, limit: int = 3) -> list[KernelRecord]:
        return self._memo(("using", technique, limit),
                          lambda: self.kernels(where={"t:" + technique: True}, limit=limit))

    def count(self) -> int:
        return self._memo(("count",), self._col("kernels").count)

    def delete_kernels(self, where: dict) -> None:
        self._write(self._col("kernels").delete, where=where)

    def delete_kernel_ids(self, ids: list[str]) -> None:
        if ids:  # chroma's delete with no ids and no filter would be refused, not a no-op
            self._write(self._col("kernels").delete, ids=ids)

    def held_kernels(self, where: dict) -> dict[str, tuple[dict, str]]:
        """id -> (metadata, document) of the kernels matching ``where``, as stored."""
        res = self._col("kernels").get(where=where, include=["metadatas", "documents"])
        return {i: (dict(m or {}), d or "") for i, m, d in zip(res["ids"], res["metadatas"], res["documents"])}

    # --- files (resumable mining) -------------------------------------------------------
    def file_hashes(self, source: str) -> dict[str, str]:
        res = self._col("files").get(where={"source": source}, include=["metadatas"])
        return {m["file"]: m["content_hash"] for m in res["metadatas"]}

    def mark_files(self, source: str, hashes: dict[str, str]) -> None:
        if not hashes:
            return
        ids = [_file_id(source, f) for f in hashes]
        self._write(
            self._col("files").upsert, ids=ids, embeddings=[_PLACEHOLDER] * len(ids),
            metadatas=[{"source": source, "file": f, "content_hash": h} for f, h in hashes.items()],
        )

    def forget_files(self, source: str, files: Iterable[str]) -> None:
        ids = [_file_id(source, f) for f in files]
        if ids:
            self._write(self._col("files").delete, ids=ids)

    # --- sources ------------------------------------------------------------------------
    def put_source(self, s: SourceRecord) -> None:
        self._write(
            self._col("sources").upsert, ids=[s.name], embeddings=[_PLACEHOLDER],
            metadatas=[{"name": s.name, "version": s.version, "root": s.root, "state": s.state,
                        "started": s.started, "finished": s.finished, "counts": json.dumps(s.counts),
                        "origin": s.origin}],
        )

    def sources(self) -> list[SourceRecord]:
        res = self._col("sources").get(include=["metadatas"])
        return sorted((_source_record(m) for m in res["metadatas"]), key=lambda s: s.name)

    def source(self, name: str) -> SourceRecord | None:
        got = self._col("sources").get(ids=[name], include=["metadatas"])
        return _source_record(got["metadatas"][0]) if got["ids"] else None

    def remove_source(self, name: str) -> dict[str, int]:
        """Delete a source: its kernels, its files' commit markers and its record; the
        statistics are recomputed. Returns what was removed ({"kernels": n, "files": m}).

        Markers go first: were this interrupted, a later mine of the name redoes every file
        rather than trusting markers whose kernels are gone; the record goes last, so an
        interrupted removal is still listed and can be run again."""
        if self.read_only:
            raise StoreError(f"store at {self.location} is read-only: cannot remove a source from it")
        # first of all: a later mine of the name must not answer "unchanged" from stamps
        mined_manifest(self.location, name).unlink(missing_ok=True)
        self._forget()
        files = self._col("files").get(where={"source": name}, include=[])["ids"]
        kernels = self._col("kernels").get(where={"source": name}, include=[])["ids"]
        if files:
            self._write(self._col("files").delete, ids=files)
        if kernels:
            self._write(self._col("kernels").delete, ids=kernels)
        self._write(self._col("sources").delete, ids=[name])
        self.recompute_stats()
        return {"kernels": len(kernels), "files": len(files)}

    # --- statistics ---------------------------------------------------------------------
    def put_stats(self, stats: Stats) -> None:
        self._write(self._col("meta").upsert, ids=["stats"], embeddings=[_PLACEHOLDER],
                                 metadatas=[{"stats": json.dumps(stats.to_json()), "updated": time.time()}])

    def stats(self) -> Stats:
        """The statistics stored by the last mine (empty before the first)."""
        def read() -> Stats:
            got = self._col("meta").get(ids=["stats"], include=["metadatas"])
            return Stats.from_json(json.loads(got["metadatas"][0]["stats"])) if got["ids"] else Stats()

        return self._memo(("stats",), read)

    def recompute_stats(self) -> Stats:
        """Count, over every mined kernel, which techniques it uses (and from which
        sources) and which skeletons would be suggested for it; store and return that."""
        stats = Stats()
        res = self._col("kernels").get(include=["metadatas"])
        for md in res["metadatas"]:
            stats.total_kernels += 1
            for t in filter(None, md.get("techniques", "").split(",")):
                entry = stats.by_skeleton.setdefault(t, TechniqueStats(applicable=0))
                entry.kernels += 1
                if md["source"] not in entry.sources:
                    entry.sources.append(md["source"])
            for t in filter(None, md.get("applicable", "").split(",")):
                entry = stats.by_skeleton.setdefault(t, TechniqueStats(applicable=0))
                entry.applicable = (entry.applicable or 0) + 1
        self.put_stats(stats)
        self.technique_examples()  # built now, with the mine, not on the next query
        return stats

    # --- mined examples per technique (the retriever's lexical channel) -----------------
    def technique_examples(self, per: int = EXAMPLES_PER_TECHNIQUE,
                           max_chars: int = EXAMPLE_CHARS) -> tuple[str, dict[str, list[dict]]]:
        """(stamp, {technique: [{"id", "source", "file", "text"}, ...]}): a few mined kernels
        using each technique — their embedded text (name, parameters, calls) —, from
        distinct files, taken round-robin over sources, at most ``per`` and ``max_chars``
        of text per technique. Built from one read of the store and kept in the meta
        collection until the next mine changes the statistics (the stamp says which)."""
        return self._memo(("examples", per, max_chars), lambda: self._technique_examples(per, max_chars))

    def _technique_examples(self, per: int, max_chars: int) -> tuple[str, dict[str, list[dict]]]:
        meta = self._col("meta")
        got = meta.get(ids=["stats", "examples"], include=["metadatas", "documents"])
        rows = dict(zip(got["ids"], zip(got["metadatas"], got["documents"])))
        stamp = f"{rows['stats'][0].get('updated')}" if "stats" in rows else f"count:{self.count()}"
        if "examples" in rows and rows["examples"][0].get("stamp") == f"{stamp}/{per}/{max_chars}":
            return stamp, json.loads(rows["examples"][1] or "{}")
        res = self._col("kernels").get(include=["metadatas", "documents"])
        by_technique: dict[str, dict[str, list[tuple[str, str, str, str]]]] = {}
        for id_, md, doc in sorted(zip(res["ids"], res["metadatas"], res["documents"]), key=lambda r: r[0]):
            for t in filter(None, md.get("techniques", "").split(",")):
                by_technique.setdefault(t, {}).setdefault(md["source"], []).append(
                    (md["source"], id_, md["file"], doc or ""))
        out: dict[str, list[dict]] = {}
        for t, by_source in by_technique.items():
            queues = [by_source[src] for src in sorted(by_source)]
            # round-robin over sources: the first kernel of each, then the second ...
            order = [q[i] for i in range(max(map(len, queues))) for q in queues if i < len(q)]
            picked: list[dict] = []
            files: set[tuple[str, str]] = set()
            chars = 0
            for src, id_, file, text in order:
                if len(picked) >= per or chars >= max_chars:
                    break
                if (src, file) in files:
                    continue
                files.add((src, file))
                text = text[:max_chars - chars]
                chars += len(text)
                picked.append({"id": id_, "source": src, "file": file, "text": text})
            out[t] = picked
        self._write(meta.upsert, ids=["examples"], embeddings=[_PLACEHOLDER],
                    metadatas=[{"stamp": f"{stamp}/{per}/{max_chars}"}], documents=[json.dumps(out)])
        return stamp, out

    def filter_ids(self, ids: list[str], where: dict) -> list[str]:
        """The kernel ids among ``ids`` that satisfy the chroma ``where`` clause."""
        if not ids:
            return []
        return list(self._col("kernels").get(ids=ids, where=where, include=[])["ids"])

    # --- verification evidence (typed records written by the verifier) ------------------
    def add_verification(self, record: Verification) -> str:
        """Store one run; a rerun of the same (skeleton, kernel, subject, device, Triton)
        replaces the earlier one. Returns its id."""
        rid = hashlib.sha1(record.key.encode()).hexdigest()[:20]
        self._write(self._col("verifications").upsert, ids=[rid], embeddings=[_PLACEHOLDER],
                    metadatas=[record.to_metadata()])
        return rid

    def verifications(self, skeleton_id: str | None = None) -> list[Verification]:
        """Runs stored here (not the shipped ones), oldest first."""
        where = {"skeleton": skeleton_id} if skeleton_id is not None else None
        res = self._col("verifications").get(where=where, include=["metadatas"])
        recs = [Verification.from_metadata(md) for md in res["metadatas"]]
        return sorted(recs, key=lambda r: r.date)

    def evidence_by_skeleton(self) -> dict[str, list[Verification]]:
        """The shipped runs and this store's, grouped by skeleton id (a local run replaces a
        shipped one with the same key). One read for a whole ranking."""
        return self._memo(("evidence",), lambda: merge_evidence(shipped_verifications(), self.verifications()))


_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_HOST_PORT = re.compile(r"^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]*):\d+/?$")


def server_address(location: str) -> tuple[str, int, bool] | None:
    """(host, port, https) when ``location`` names a Chroma server, None for a folder.

    Only http:// and https:// name a server. Anything else that reads as an address is
    refused rather than taken as a folder name: another scheme (``ftp://x``), or
    ``HOST:PORT`` without one (``localhost:8000``), unless a folder of that name exists."""
    m = _SCHEME.match(location)
    if m is None:
        if _HOST_PORT.match(location) and not Path(location).exists():
            raise StoreError(f"store location {location!r} looks like HOST:PORT: write http://{location.rstrip('/')} "
                             f"for a Chroma server, or ./{location} for a folder of that name")
        return None
    scheme = m.group(1).lower()
    if scheme not in ("http", "https"):
        raise StoreError(f"store location {location!r}: {scheme}:// is not supported; a store is a folder "
                         "or http(s)://HOST:PORT (a Chroma server)")
    u = urlparse(location)
    try:
        port = u.port
    except ValueError:
        raise StoreError(f"store location {location!r}: the port is not a number from 1 to 65535") from None
    if not u.hostname:
        raise StoreError(f"store location {location!r}: no host (expected http(s)://HOST:PORT)")
    if port == 0:
        raise StoreError(f"store location {location!r}: the port is not a number from 1 to 65535")
    host = f"[{u.hostname}]" if ":" in u.hostname else u.hostname  # an IPv6 literal keeps its brackets
    return host, port or 8000, scheme == "https"


def _reason(exc: BaseException) -> str:
    """One line saying why a server did not answer as Chroma: the first message in the
    exception's chain, an HTML page or an empty body named as such."""
    seen: BaseException | None = exc
    while seen is not None:
        text = " ".join(str(seen).split())
        if text.startswith("<") or "<html" in text.lower():
            return "it answered with a web page: is it a Chroma server (`chroma run`)?"
        if text:
            return text[:200] + ("..." if len(text) > 200 else "")
        seen = seen.__cause__ or seen.__context__
    return f"{type(exc).__name__} with no message: is it a Chroma server (`chroma run`), and running?"


def _writable(path: Path) -> bool:
    """Can this process write the store's folder and database? False on a read-only
    filesystem even for root (access(2) reports EROFS whoever asks)."""
    db = path / "chroma.sqlite3"
    return os.access(path, os.W_OK) and (not db.exists() or os.access(db, os.W_OK))


# read-only stores copied in this process: path -> (what the copy was taken of, the copy),
# so a long-running server opening the store per request copies it once, not every time
_READ_ONLY_COPIES: dict[str, tuple[tuple, str]] = {}


def _read_only_copy(path: Path) -> str:
    """A private, writable copy of the read-only store at ``path`` (its chroma files; the
    history beside them is read in place), removed when the process exits; reused while
    the store's files are unchanged."""
    def signature() -> tuple:
        return tuple(sorted((str(f.relative_to(path)), f.stat().st_size, f.stat().st_mtime_ns)
                            for f in path.rglob("*") if f.is_file() and f.relative_to(path).parts[0] != "history"))

    key = str(path.resolve())
    sig = signature()
    kept = _READ_ONLY_COPIES.get(key)
    if kept is not None and kept[0] == sig and Path(kept[1]).is_dir():
        return kept[1]
    tmp = tempfile.mkdtemp(prefix="skel-read-only-store-")
    atexit.register(shutil.rmtree, tmp, True)
    copy = str(Path(tmp) / "store")
    try:
        shutil.copytree(path, copy, ignore=lambda d, names: ["history"] if Path(d) == path else [])
    except OSError as exc:
        raise StoreError(f"store at {path} is read-only and could not be copied to read it: {exc}") from exc
    _READ_ONLY_COPIES[key] = (sig, copy)
    return copy


def _source_record(m: dict) -> SourceRecord:
    return SourceRecord(name=m["name"], version=m["version"], root=m["root"], state=m["state"],
                        started=m["started"], finished=m["finished"], counts=json.loads(m["counts"]),
                        origin=m.get("origin") or "")


@dataclass
class _Kept:
    """Reads kept for one store folder (``KnowledgeBase._memo``) and the stamp they hold for."""

    stamp: tuple[int, int] | None = None
    cache: dict[tuple, Any] = field(default_factory=dict)


_KEPT: dict[str, _Kept] = {}


def _stampable(location: str) -> bool:
    """A folder, whose writes show in its sqlite file (a server's do not)."""
    return not location.startswith(("http://", "https://"))


def mined_manifest(location: str, name: str) -> Path:
    """Where the last complete mine of source ``name`` left its file stamps, inside the
    store's folder (``skel.miner.stamps``); removing the source removes it."""
    return Path(location) / "skel-mined" / (hashlib.sha1(name.encode()).hexdigest()[:20] + ".json")


def _connect(location: str, make):
    """A client of the server at ``location``, retried like every later call: a server
    restarting between two queries is waited for, a server that stays away is one line."""
    import httpx  # httpx: 71 ms to import; only a Chroma server's store needs it

    for delay in (*SERVER_RETRY_DELAYS, None):
        try:
            client = make()
            client.heartbeat()
            return client
        except Exception as exc:
            # chroma raises ValueError("Could not connect ...") from the transport error
            lost = next((e for e in (exc, exc.__cause__, exc.__context__) if isinstance(e, httpx.TransportError)),
                        None)
            if lost is None:
                raise StoreError(f"cannot reach the Chroma server at {location}: {_reason(exc)}") from exc
            if delay is None:
                raise StoreError(f"cannot reach the Chroma server at {location}: {type(lost).__name__}: {lost} "
                                 f"({len(SERVER_RETRY_DELAYS) + 1} tries over {sum(SERVER_RETRY_DELAYS):g}s); "
                                 "is it running?") from exc
            time.sleep(delay)


def check_intact(location: str) -> None:
    """Refuse a damaged local store (StoreError) without opening chroma: for a caller that
    answers without the store but must not answer for a damaged one (an unchanged re-mine
    from its stamps). Nothing for a server, nor for a folder not made yet."""
    path = Path(location)
    if not location.startswith(("http://", "https://")) and path.is_dir():
        _check_intact(path)


def _check_intact(path: Path) -> None:
    """Refuse a damaged local store before chroma opens it: chroma panics and aborts the
    process on some garbled databases (exit 134, no message), and treats a missing or
    emptied database beside its index folders as a new store, mining over what was lost.
    Costs one read-only SQLite ``quick_check`` (milliseconds for a store of this size)."""
    import sqlite3  # 0.8 ms to import, which a `skel suggest` without a store must not pay

    db = path / "chroma.sqlite3"
    # chroma's vector-index folders are named by UUID: other folders may share a --store path
    indexes = [p.name for p in path.iterdir() if p.is_dir() and _UUID.fullmatch(p.name)]
    damaged = f"the store at {path} is damaged: "
    fix = "; restore a backup or mine into a new --store (nothing was changed)"
    if not db.exists() or db.stat().st_size == 0:
        if indexes:
            raise StoreError(damaged + f"chroma.sqlite3 is {'empty' if db.exists() else 'missing'} "
                             f"beside {len(indexes)} index folders" + fix)
        return
    try:
        with db.open("rb") as f:
            header = f.read(16)
    except OSError as exc:
        raise StoreError(f"cannot read the store at {path}: {exc.strerror}") from exc
    if header != b"SQLite format 3\x00":
        raise StoreError(damaged + "chroma.sqlite3 is not a SQLite database" + fix)
    # unchanged since it last passed (size and mtime): skip the scan, which a large store
    # would add to every query (~80 ms for 40 MB)
    st = db.stat()
    seen = cache_dir() / "intact" / hashlib.sha1(str(db.resolve()).encode()).hexdigest()
    stamp = f"{st.st_size}:{st.st_mtime_ns}"
    try:
        if seen.read_text() == stamp:
            return
    except OSError:
        pass
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        con.text_factory = lambda b: b.decode("utf-8", "replace")  # a verdict may quote garbled bytes
        try:
            verdict = con.execute("PRAGMA quick_check(1)").fetchone()[0]
        finally:
            con.close()
    except sqlite3.OperationalError:
        return  # cannot check here (locked, read-only folder): chroma will say what it finds
    except sqlite3.DatabaseError as exc:
        raise StoreError(damaged + f"chroma.sqlite3: {exc}" + fix) from exc
    except UnicodeDecodeError as exc:
        # SQLite's error quoted a garbled schema, and Python could not decode the message
        raise StoreError(damaged + "chroma.sqlite3: its schema is garbled (not even UTF-8)" + fix) from exc
    if verdict != "ok":
        raise StoreError(damaged + f"chroma.sqlite3: {' '.join(str(verdict).split())[:200]}" + fix)
    try:
        seen.parent.mkdir(parents=True, exist_ok=True)
        seen.write_text(stamp)
    except OSError:
        pass  # an optimisation only


def _write_reason(exc: BaseException, location: str) -> str:
    """One line for a failed store operation. Chroma reports a full disk as e.g. "Error in
    compaction: Failed to apply logs to the metadata segment", so the disk is asked too."""
    text = " ".join(str(exc).split())
    full = "No space left" in text or getattr(exc, "errno", None) == errno.ENOSPC
    if not full and not location.startswith(("http://", "https://")):
        try:
            full = shutil.disk_usage(location).free < 4 * 1024 * 1024
        except OSError:
            pass
    if full:
        return (f"the disk holding it is full ({text or type(exc).__name__}); free some space and run the same "
                "command again: it resumes")
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _file_id(source: str, file: str) -> str:
    return f"{source}::{file}"
