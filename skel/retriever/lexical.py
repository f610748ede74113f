"""The lexical channel: BM25 over what each skeleton says and over the kernels that use it.

Each skeleton is one document: its id, title, summary, documentation and runnable example
(the before/after template), plus the fingerprint text (name, parameters, calls) of a few
mined kernels that use the technique, when there is a store (``KnowledgeBase.
technique_examples``: capped per technique, spread over repositories). The query is the
kernel's source. Identifiers are split on ``_`` and on case (``BLOCK_SIZE_M`` → block,
size, m and block_size_m; ``qkScale`` → qk, scale), so a kernel's names meet the words
its technique is documented with.

Pure Python, no dependency. The catalog's documents are tokenised once per process; the
mined examples once per store state (and once more per set of hidden kernels, which only
the benchmarks use).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections import Counter, OrderedDict
from functools import lru_cache
from typing import TYPE_CHECKING

from skel.skeletons import registry  # called as registry.X: tests swap the catalog there
from skel.skeletons.pairs import example_path
from skel.store.knowledge import cache_dir

if TYPE_CHECKING:
    from skel.store.knowledge import KnowledgeBase

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CASE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+")
# English glue and Python keywords: a kernel's `for ... in range` must not match the
# documentation's "for" and "in"
_STOP = frozenset("""
a an and are as at be but by can do does for from has have if in into is it its not of on or
so that the their then there these this to was when where which while with without
def else elif return none true false self import pass break continue lambda yield
""".split())
K1, B = 1.2, 0.75  # the usual BM25 constants (Robertson & Zaragoza 2009)


def words(text: str) -> list[str]:
    """Lower-case words of ``text``: identifiers split on ``_`` and case, plus the whole
    identifier when it had parts; one-letter words, numbers and stop words dropped."""
    out: list[str] = []
    for ident in _IDENT.findall(text):
        out += _split(ident)
    return out


@lru_cache(maxsize=65536)
def _split(ident: str) -> tuple[str, ...]:
    # identifiers repeat (the catalog's ~40k are ~5k distinct): split each once
    parts = [p.lower() for piece in ident.split("_") if piece for p in _CASE.findall(piece)]
    parts = [p for p in parts if len(p) > 1 and p not in _STOP]
    whole = ident.strip("_").lower()
    return (*parts, whole) if len(parts) > 1 and whole not in _STOP else tuple(parts)


class BM25:
    """Okapi BM25 over named bags of words. Query words count once each: a long kernel
    repeating `tl.load` is not more about loads than a short one."""

    def __init__(self, docs: dict[str, Counter]) -> None:
        self.docs = docs
        self.lens = {i: sum(tf.values()) for i, tf in docs.items()}
        self.avg = (sum(self.lens.values()) / len(docs)) if docs else 0.0
        df: Counter = Counter()
        for tf in docs.values():
            df.update(tf.keys())
        n = len(docs)
        self.idf = {w: math.log(1 + (n - d + 0.5) / (d + 0.5)) for w, d in df.items()}
        self.norm = {i: K1 * (1 - B + B * self.lens[i] / self.avg) if self.avg else K1 for i in docs}
        # postings (word -> the documents holding it, with counts): a query visits only
        # the documents its words are in, not every document for every word
        self.postings: dict[str, list[tuple[str, int]]] = {}
        for i, tf in docs.items():
            for w, f in tf.items():
                if f:
                    self.postings.setdefault(w, []).append((i, f))

    def scores(self, query: list[str]) -> dict[str, float]:
        terms = [w for w in set(query) if w in self.idf]
        out = dict.fromkeys(self.docs, 0.0)
        # per document, the terms are added in the same order as a document-by-document
        # loop would: the same floating-point sums
        for w in terms:
            idf = self.idf[w]
            for i, f in self.postings.get(w, ()):
                out[i] += idf * f * (K1 + 1) / (f + self.norm[i])
        return out


@lru_cache(maxsize=1)
def _catalog_words() -> dict[str, Counter]:
    """Each skeleton's own words (docs + its example file), once per process, and kept on
    disk by a hash of those texts: tokenising them costs ~100 ms a `skel suggest` need
    not pay twice."""
    texts = {}
    for s in registry.all_skeletons():
        path = example_path(s.id)
        # the raw example file (before and after kernels) rather than the parsed template:
        # the same words, without parsing 34 files on every `skel suggest`
        example = path.read_text(encoding="utf-8") if path.is_file() else ""
        texts[s.id] = "\n".join([s.id, s.title, s.summary, s.doc, example])
    digest = hashlib.sha1(json.dumps(texts, sort_keys=True).encode()).hexdigest()[:16]
    cached = cache_dir() / "lexical" / f"catalog-{digest}.json"
    try:
        return {sid: Counter(tf) for sid, tf in json.loads(cached.read_text()).items()}
    except (OSError, ValueError):
        pass
    out = {sid: Counter(words(text)) for sid, text in texts.items()}
    try:  # a cache: any failure to write it only costs the next process the tokenising
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(out))
        tmp.replace(cached)
    except OSError:
        pass
    return out


_INDEXES: OrderedDict[tuple, BM25] = OrderedDict()
_KEEP = 8  # indexes kept per process (one per store state and set of hidden kernels)


def index_for(kb: KnowledgeBase | None = None, exclude: dict | None = None) -> BM25:
    """The BM25 index of the catalog, with the store's mined examples when there is one.
    ``exclude`` (a chroma ``where`` clause) hides examples the way it hides neighbours."""
    catalog = _catalog_words()
    stamp, examples = kb.technique_examples() if kb is not None else ("", {})
    hidden: frozenset[str] = frozenset()
    if exclude and examples:
        ids = sorted({e["id"] for rows in examples.values() for e in rows})
        kept = set(kb.filter_ids(ids, exclude)) if kb is not None else set(ids)
        hidden = frozenset(set(ids) - kept)
    key = (kb.location if kb is not None else None, stamp, hidden)
    index = _INDEXES.get(key)
    if index is None:
        docs = {}
        for sid, base in catalog.items():
            tf = Counter(base)
            for e in examples.get(sid, []):
                if e["id"] not in hidden:
                    tf.update(words(e["text"]))
            docs[sid] = tf
        index = _INDEXES[key] = BM25(docs)
        while len(_INDEXES) > _KEEP:
            _INDEXES.popitem(last=False)
    return index


def lexical_scores(source: str, kb: KnowledgeBase | None = None, exclude: dict | None = None
                   ) -> tuple[dict[str, float], float]:
    """(score in [0, 1] per skeleton id — BM25 over the best one's —, the best raw score)."""
    raw = index_for(kb, exclude).scores(words(source))
    top = max(raw.values(), default=0.0)
    return ({sid: (s / top if top > 0 else 0.0) for sid, s in raw.items()}, top)
