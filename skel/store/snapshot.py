"""A read snapshot of a local store, so a new ``skel suggest`` process answers without
importing chromadb (about a second on its own, more than everything else it does).

What a ranking reads from the store — every kernel's record and vector, the statistics,
the lexical channel's examples, the store's verification runs, the embedding model's name
— is written once into ``<store>/skel-read/`` as one ``.npy`` (vectors) and one ``.json``,
after a mine and after any suggest that had to open chroma. ``SnapshotKB`` reads them and
answers the same questions as ``KnowledgeBase`` (nearest neighbours exactly, by cosine,
where chroma's index is approximate).

When is a snapshot the store? Chroma writes its database on every open, so the database's
modification time cannot say. Every skel write goes through ``KnowledgeBase._write``,
which marks ``skel-read/generation`` as *dirty* before the write and gives it a new token
after it; a snapshot is used only while the generation is clean, carries the token it was
read under, and the database file is the same file (inode) of the same size. A write that
crashed leaves the generation dirty: the next reader opens chroma, as before snapshots. A
store written by a skel without snapshots has no generation file: never used either.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

from skel.errors import StoreError
from skel.store.evidence import Verification, merge_evidence, shipped_verifications
from skel.store.generation import FOLDER, mark_dirty  # noqa: F401 - read here by callers too
from skel.store.generation import GENERATION, atomic_write, folder, generation, mark_clean
from skel.store.knowledge import TIE_DIGITS, KernelRecord, Stats, check_intact

FORMAT = 1


def _db_identity(location: str) -> tuple[int, int] | None:
    try:
        st = os.stat(Path(location) / "chroma.sqlite3")
    except OSError:
        return None
    return st.st_ino, st.st_size


def write(kb: Any) -> Path | None:
    """Snapshot what a ranking reads from ``kb`` (a local, writable ``KnowledgeBase``);
    None when it cannot be said to be the store (a write in between, a dirty generation)."""
    location = kb.location
    if location.startswith(("http://", "https://")) or kb.read_only:
        return None
    import numpy as np  # numpy: 83 ms to import; only a snapshot's vectors need it

    kb.technique_examples()  # may write (a rebuild): before the token is read
    if not (folder(location) / GENERATION).exists():
        mark_clean(location)  # a store mined before generations: what is read next is its state
    token, ident = generation(location), _db_identity(location)
    if token is None or ident is None:
        return None
    # everything read between the two checks of the token
    examples = kb.technique_examples()
    res = kb._col("kernels").get(include=["metadatas", "documents", "embeddings"])
    vectors = np.asarray(res["embeddings"] if len(res["ids"]) else np.zeros((0, 0)), dtype=np.float32)
    doc = {"format": FORMAT, "token": token, "db": list(ident), "embedder": kb.embedder_name(),
           "ids": list(res["ids"]), "metadatas": list(res["metadatas"]), "documents": list(res["documents"]),
           "stats": kb.stats().to_json(), "examples": [examples[0], examples[1]],
           "verifications": [v.to_metadata() for v in kb.verifications()]}
    if generation(location) != token or _db_identity(location) != ident:
        return None  # another process wrote meanwhile
    where = folder(location)
    buf = _npy(vectors)
    atomic_write(where / f"snapshot-{token}.npy", buf)
    atomic_write(where / f"snapshot-{token}.json", json.dumps(doc).encode())  # last: it says "complete"
    for old in where.glob("snapshot-*"):
        if token not in old.name:
            old.unlink(missing_ok=True)
    return where / f"snapshot-{token}.json"


def _npy(vectors) -> bytes:
    import numpy as np  # numpy: 83 ms to import; see write

    out = io.BytesIO()
    np.save(out, vectors, allow_pickle=False)
    return out.getvalue()


# one loaded snapshot per store folder: a server or an agent's process asks again and again
_LOADED: dict[str, "SnapshotKB"] = {}


def open_fresh(location: str) -> "SnapshotKB | None":
    """The store's snapshot when it is the store now (see the module's doc), else None."""
    if location.startswith(("http://", "https://")):
        return None
    token, ident = generation(location), _db_identity(location)
    if token is None or ident is None:
        return None
    check_intact(location)  # a damaged database is refused here as when chroma opens it
    key = str(Path(location).resolve())
    kept = _LOADED.get(key)
    if kept is not None and kept.token == token and kept.db == ident:
        return kept
    path = folder(location) / f"snapshot-{token}.json"
    try:
        doc = json.loads(path.read_text())
        if doc.get("format") != FORMAT or doc.get("token") != token or tuple(doc.get("db", ())) != ident:
            return None
        import numpy as np  # numpy: 83 ms to import; only once a fresh snapshot is found (none without a store)

        vectors = np.load(path.with_suffix(".npy"), allow_pickle=False)
        snap = SnapshotKB(location, doc, vectors)
        if len(snap._ids) != len(vectors) or (len(vectors) and vectors.ndim != 2):
            return None
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        return None  # missing, half-written by a crashed writer, or damaged: read the store
    _LOADED[key] = snap
    return snap


class SnapshotKB:
    """The read half of ``KnowledgeBase`` that a ranking uses, from a snapshot."""

    def __init__(self, location: str, doc: dict, vectors) -> None:
        import numpy as np  # numpy: 83 ms to import; see open_fresh

        self.location = location
        self.note: str | None = None
        self.read_only = False
        self.token: str = doc["token"]
        self.db = tuple(doc["db"])
        self._embedder: str | None = doc.get("embedder")
        # records are built when asked for (a ranking reads ~30 of them, not the store)
        self._ids, self._metas, self._docs = doc["ids"], doc["metadatas"], doc["documents"]
        self._record = lambda i, distance=None: KernelRecord.from_chroma(self._ids[i], self._metas[i],
                                                                         self._docs[i], distance)
        order = sorted(range(len(self._ids)), key=self._ids.__getitem__)
        self._id_rank = np.empty(len(self._ids), dtype=np.int64)
        self._id_rank[order] = np.arange(len(self._ids))
        norms = np.linalg.norm(vectors, axis=1, keepdims=True) if vectors.size else vectors
        self._unit = vectors / np.where(norms == 0, 1, norms) if vectors.size else vectors
        self._stats = Stats.from_json(doc["stats"])
        self._examples = (doc["examples"][0], doc["examples"][1])
        runs = [Verification.from_metadata(md) for md in doc["verifications"]]
        self._evidence = merge_evidence(shipped_verifications(), sorted(runs, key=lambda r: r.date))

    # --- what the retriever asks -------------------------------------------------------
    def count(self) -> int:
        return len(self._ids)

    def embedder_name(self) -> str | None:
        return self._embedder

    def check_embedder(self, name: str) -> str | None:
        if self._embedder is not None and self._embedder != name:
            raise StoreError(f"store at {self.location} holds {self._embedder!r} embeddings; this run uses "
                             f"{name!r}. Use the same model (SKEL_EMBEDDER) or a new --store.")
        return self._embedder

    def bind_embedder(self, name: str) -> None:
        self.check_embedder(name)  # a query never binds: the store's mine did

    def similar(self, embedding: list[float], n: int = 30, where: dict | None = None) -> list:
        return self.similar_many([embedding], n, where)[0]

    def similar_many(self, embeddings: list[list[float]], n: int = 30, where: dict | None = None) -> list[list]:
        """Nearest records by cosine distance (exact); ``where`` is not supported here
        (the retrieval benchmark's exclusions read the store itself)."""
        import numpy as np  # numpy: 83 ms to import; see open_fresh

        if where is not None:
            raise ValueError("a snapshot answers queries without a where clause only")
        if not self._ids:
            return [[] for _ in embeddings]
        raw = np.asarray(embeddings, dtype=np.float32)
        norms = np.linalg.norm(raw, axis=1, keepdims=True)
        dist = 1.0 - (raw / np.where(norms == 0, 1, norms)) @ self._unit.T
        out = []
        for row in dist:
            # by distance, then id, as KnowledgeBase.similar_many cuts ties
            top = np.lexsort((self._id_rank, np.round(row, TIE_DIGITS)))[:min(n, len(self._ids))]
            out.append([self._record(int(i), float(row[i])) for i in top])
        return out

    def stats(self):
        return self._stats

    def technique_examples(self, *args: Any, **kwargs: Any) -> tuple[str, dict[str, list[dict]]]:
        return self._examples

    def evidence_by_skeleton(self) -> dict[str, list[Verification]]:
        return self._evidence

    def using(self, technique: str, limit: int = 3) -> list:
        flag = f",{technique},"  # techniques are stored as ",a,b," (KernelRecord.metadata)
        hits = [i for i, md in enumerate(self._metas) if flag in md.get("techniques", "")]
        return [self._record(i) for i in hits[:limit]]

    def filter_ids(self, ids: list[str], where: dict) -> list[str]:
        raise ValueError("a snapshot answers queries without a where clause only")
