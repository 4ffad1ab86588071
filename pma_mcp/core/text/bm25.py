"""BM25 over term statistics the store keeps per namespace (pure).

FTS5's own bm25() finds the candidates, but its statistics are the whole file's (one project's
scores moved when another stored a word) and its idf, log((N − n + 0.5) / (n + 0.5)) floored at
1e-6, gives nothing to a word held by half the memories or more — so a store of one or two
memories found nothing for a follow-up that had a single word the memory lacked. Candidates
are therefore scored here, from the term vectors the store keeps with each memory and the
document counts of the namespaces searched:

    idf(t)   = ln(1 + (N + PRIOR_DOCS − n + 0.5) / (n + 0.5))        (always > 0)
    f(t, d)  = Σ_column weight · tf                                  (content, labels, context)
    score(d) = Σ_t idf(t) · f·(K1 + 1) / (f + K1·(1 − B + B·len(d) / avglen))

`N`, `n` and `avglen` count only the namespaces in the query's scope. `PRIOR_DOCS` is a prior
of a few unseen memories that hold no query word: with N = 1 every word is in "all" memories
and idf cannot tell a topic word from filler; the prior makes a shared word count about as
much as in a store of a dozen memories, and vanishes in a store of thousands. This is the
Lucene/BM25+ idf form; K1 and B are FTS5's defaults, and column weights and length
normalisation follow FTS5's bm25 (weighted frequency over the row's total length).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

K1 = 1.2
B = 0.75
PRIOR_DOCS = 10


def idf(docs: int, doc_freq: int) -> float:
    """Inverse document frequency with the unseen-memory prior; > 0 for every n ≤ N."""
    n = max(doc_freq, 0)
    return math.log(1.0 + (max(docs, n) + PRIOR_DOCS - n + 0.5) / (n + 0.5))


def encode(counts: Mapping[str, int]) -> str:
    """Term vector as stored: " term:tf term:tf" (leading space), so one term is one find."""
    return "".join(f" {term}:{n}" for term, n in sorted(counts.items()))


def decode(vector: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in vector.split():
        term, _, n = item.rpartition(":")
        out[term] = int(n)
    return out


def terms(vector: str) -> frozenset[str]:
    """The terms of a vector, without their counts (cheaper than `decode`)."""
    return frozenset(item[:item.rindex(":")] for item in vector.split())


def length(vector: str) -> int:
    """Tokens the vector counts."""
    return sum(decode(vector).values())


def add(vectors: Iterable[str]) -> dict[str, int]:
    """Summed counts of several vectors (a memory's context: its neighbours' own text)."""
    total: dict[str, int] = {}
    for vector in vectors:
        for term, n in decode(vector).items():
            total[term] = total.get(term, 0) + n
    return total


@dataclass(frozen=True, slots=True)
class Document:
    """One memory as BM25 sees it: a term vector per index column and its total length."""

    content: str
    labels: str
    context: str
    length: int


@dataclass(frozen=True, slots=True)
class Query:
    """Searched terms with their idf, the terms searched in a memory's own text only, the
    scope's average length, and the ideal score (each query term once, at average length)."""

    idf: Mapping[str, float]
    own_text_only: frozenset[str]
    avg_length: float
    ideal: float

    @property
    def keys(self) -> tuple[tuple[str, float, bool], ...]:
        """(vector key " term:", idf, searched in the context column too) per term."""
        return tuple((f" {t}:", w, t not in self.own_text_only) for t, w in self.idf.items())


def query(
    terms: Iterable[str],
    searched: Iterable[str],
    own_text_only: Iterable[str],
    docs: int,
    doc_freq: Mapping[str, int],
    total_length: int,
) -> Query:
    """Everything a score needs that does not depend on the memory.

    The ideal runs over every query term, searched or not: a term left out for cost still
    counts as information the memory does not match.
    """
    every = {t: idf(docs, doc_freq.get(t, 0)) for t in terms}
    chosen = {t: every[t] for t in searched if t in every}
    avg = total_length / docs if docs > 0 and total_length > 0 else 1.0
    return Query(chosen, frozenset(own_text_only), avg, sum(every.values()))


def score(doc: Document, q: Query, weights: tuple[float, float, float]) -> float:
    """BM25 of `doc` for `q`; `weights` are the (content, labels, context) column weights."""
    return score_many([doc], q.keys, q.avg_length, weights)[0]


def score_many(
    docs: Iterable[Document],
    keys: tuple[tuple[str, float, bool], ...],
    avg_length: float,
    weights: tuple[float, float, float],
) -> list[float]:
    """`score` for many documents: the per-candidate loop of every search, kept tight."""
    w_content, w_labels, w_context = weights
    k1_plus = K1 + 1.0
    out: list[float] = []
    for doc in docs:
        norm = K1 * (1.0 - B + B * (doc.length / avg_length if avg_length > 0 else 1.0))
        total = 0.0
        for key, weight, in_context in keys:
            f = 0.0
            if (at := doc.content.find(key)) >= 0:
                f += w_content * _count_at(doc.content, at + len(key))
            if (at := doc.labels.find(key)) >= 0:
                f += w_labels * _count_at(doc.labels, at + len(key))
            if in_context and (at := doc.context.find(key)) >= 0:
                f += w_context * _count_at(doc.context, at + len(key))
            if f > 0:
                total += weight * f * k1_plus / (f + norm)
        out.append(total)
    return out


def _count_at(vector: str, start: int) -> int:
    end = vector.find(" ", start)
    return int(vector[start:] if end < 0 else vector[start:end])
