"""What both retrieval benchmarks share: the baselines (BM25 and embedding nearest
neighbours over the skeletons' own docs) and the metrics (recall@k, MRR)."""

from __future__ import annotations

import math
import re
import statistics
from collections import Counter

KS = (1, 3, 5)


# --- baselines --------------------------------------------------------------------------

def _words(text: str) -> list[str]:
    out = []
    for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text):
        parts = [p for p in w.lower().split("_") if p]
        out += parts + ([w.lower()] if len(parts) > 1 else [])
    return out


class BM25:
    def __init__(self, docs: dict[str, str], k1: float = 1.5, b: float = 0.75) -> None:
        self.ids = list(docs)
        self.tfs = [Counter(_words(docs[i])) for i in self.ids]
        self.lens = [sum(tf.values()) for tf in self.tfs]
        self.avg = statistics.mean(self.lens)
        df = Counter(w for tf in self.tfs for w in tf)
        n = len(self.ids)
        self.idf = {w: math.log(1 + (n - d + 0.5) / (d + 0.5)) for w, d in df.items()}
        self.k1, self.b = k1, b

    def rank(self, query: str) -> list[str]:
        q = Counter(_words(query))
        scores = []
        for i, tf, ln in zip(self.ids, self.tfs, self.lens):
            s = 0.0
            for w in q:
                f = tf.get(w, 0)
                if f:
                    s += self.idf[w] * f * (self.k1 + 1) / (f + self.k1 * (1 - self.b + self.b * ln / self.avg))
            scores.append((s, i))
        return [i for s, i in sorted(scores, key=lambda t: (-t[0], t[1]))]


def skeleton_doc(s) -> str:
    return "\n".join([s.id, s.title, s.summary, s.doc, s.before, s.after])


def cosine_rank(vec, vecs: dict[str, list[float]]) -> list[str]:
    scores = [(sum(a * b for a, b in zip(vec, v)), i) for i, v in vecs.items()]
    return [i for s, i in sorted(scores, key=lambda t: (-t[0], t[1]))]


# --- metrics ----------------------------------------------------------------------------

def recall_at(ranked: list[str], expected: list[str], k: int) -> float:
    return len(set(ranked[:k]) & set(expected)) / len(expected)


def reciprocal_rank(ranked: list[str], expected: list[str]) -> float:
    for i, sid in enumerate(ranked, 1):
        if sid in expected:
            return 1.0 / i
    return 0.0


def summarise(name: str, rankings: list[tuple[list[str], list[str]]]) -> dict:
    n = len(rankings)
    row = {"method": name, "cases": n}
    for k in KS:
        row[f"R@{k}"] = sum(recall_at(r, e, k) for r, e in rankings) / n if n else 0.0
    row["MRR"] = sum(reciprocal_rank(r, e) for r, e in rankings) / n if n else 0.0
    return row


def ceiling(cases: list[dict]) -> dict:
    """The best any ranking over the catalog can score on these cases: a ranking that lists a
    case's catalog labels first (``expected``) and is scored, like every method, against all
    its labels, the ``other:`` ones (techniques the catalog has no skeleton for) included. A
    target above it cannot be met by ranking better, only by skeletons for the ``other:``
    techniques."""
    return summarise("ceiling", [(c["expected"], c["expected"] + c.get("other", [])) for c in cases])

