"""Lexical relevance shared by every backend: query → terms → BM25 → semantic_similarity.

A store finds candidates its own way (FTS5 in SQLite, postings in PostgreSQL); what it then
returns is scored here, from the term vectors it keeps with each memory and the statistics of
the searched namespaces only (so no project's scores depend on another's words, and a word a
query shares with a memory always counts, even in a store of one). Columns weigh: a memory's
own text 1.0, its tags/entities 0.5, its session neighbours' text 0.5 — episodic contiguity:
turns saved in sequence are context for each other, so a question phrased around a turn
still finds it. A conversation turn ("Name: text") whose speaker the query names has its
score doubled (SPEAKER_BOOST).

semantic_similarity ∈ [0, 1) from a BM25 score s:

    x = s / Σ_t idf(t)            (bm25.idf over the searched namespaces)
    semantic = 1 − 10^(−x)

Σ idf(t) is the score of an "ideal" memory holding each query term once in its own text, at
average length; Σ runs over every query term, searched or not. So x measures how much of the
query's information a memory matches; the map is monotone (the ranking is kept) and gives 0.9
to that ideal match, 0.68 to half of it.

Cost bound (`within_budget`): a store's candidate search walks every row a term matches, so
terms are admitted rarest first while the rows they match fit ROW_BUDGET; a term too common
for that is searched in memories' own text only (no neighbour fan-out) if that fits, else
left out. The rarest term always stays. Small stores never reach the budget, so their
ranking is exact.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

from pma_mcp.core.text import analysis, bm25, lexicon

CONTEXT_RADIUS = 2
"""A memory's context (for lexical search) is the text of up to this many earlier and later
memories of its session."""

@dataclass(frozen=True)
class ScopeStats:
    """Term statistics of the namespaces one query searches, and of no other (bm25.py)."""

    docs: int
    length: int
    doc_freq: dict[str, int]


@dataclass(frozen=True)
class TermStats:
    """Rows in the index; per term, rows holding it in any column and in `content` itself."""

    total_docs: int
    doc_freq: dict[str, int]
    content_freq: dict[str, int] = dataclasses.field(default_factory=dict)


CANDIDATES = 300
"""How many candidates a store re-ranks by BM25 (retrieval asks for this many)."""
ROW_BUDGET = 7_000
"""Rows one candidate search may walk (see the module docstring)."""
COLUMN_WEIGHTS = (1.0, 0.5, 0.5)
"""BM25 weights of a memory's columns: content, labels (tags/entities), context."""
SPEAKER_BOOST = 2.0
FULL_MATCH_SIMILARITY = 0.9
NEIGHBOUR_FAN_OUT = 1 + 2 * CONTEXT_RADIUS
"""Rows holding a memory's words: its own, and its neighbours' context."""


def similarity(score: float, ideal: float) -> float:
    """Map a BM25 score to [0, 1): 1 − 10^(−score/ideal); the ideal match gets 0.9."""
    if ideal <= 0 or score <= 0:
        return 0.0
    return 1.0 - math.pow(1.0 - FULL_MATCH_SIMILARITY, score / ideal)


def match_share(similarity_: float) -> float:
    """The inverse of `similarity`: the BM25 score over the ideal (0 for no match). Unbounded,
    so it still tells matches apart where similarities crowd below 1."""
    if similarity_ <= 0:
        return 0.0
    return math.log(max(1.0 - similarity_, 1e-300)) / math.log(1.0 - FULL_MATCH_SIMILARITY)


def query_terms(query: str, limit: int | None = lexicon.MAX_QUERY_WORDS) -> dict[str, str]:
    """Each searchable term of `query` → the first word that gave it (query order), from
    at most `limit` words (None: all)."""
    terms: dict[str, str] = {}
    for word, term in analysis.stems(lexicon.query_words(query, limit)):
        terms.setdefault(term, word)
    return terms


def searchable(query: str) -> bool:
    """Does `query` hold a word lexical search can use (not only stopwords/punctuation)?"""
    return bool(query_terms(query))


def within_budget(stems: Sequence[str], stats: TermStats) -> tuple[list[str], list[str]]:
    """(stems searched in every column, stems searched in memories' own text only).

    Rarest first: a stem joins fully while the rows it matches fit ROW_BUDGET, else on its
    own text if that fits (or if nothing was admitted yet), else it is left out. The counts
    are index-wide, because that is what a candidate search walks.
    """
    full: list[str] = []
    own: list[str] = []
    rows = 0
    for stem in sorted(stems, key=lambda t: stats.doc_freq.get(t, 0)):
        everywhere = stats.doc_freq.get(stem, 0)
        itself = stats.content_freq.get(stem, everywhere)
        if rows + everywhere <= ROW_BUDGET:
            full.append(stem)
            rows += everywhere
        elif rows + itself <= ROW_BUDGET or not (full or own):
            own.append(stem)
            rows += itself
    return [s for s in stems if s in full], [s for s in stems if s in own]


def term_stats(total: int, own_text: dict[str, int]) -> TermStats:
    """Index-wide rows per term, estimated from own-text document counts: each memory's
    text also sits in the context of up to 2·CONTEXT_RADIUS neighbours."""
    anywhere = {t: min(total, NEIGHBOUR_FAN_OUT * n) for t, n in own_text.items()}
    return TermStats(total, anywhere, own_text)


@dataclass(frozen=True)
class AnalysedQuery:
    """A query reduced to index terms, and what BM25 scores it with."""

    words: dict[str, str]
    """term → the query word that gave it."""
    searched: tuple[str, ...]
    own_text_only: tuple[str, ...]
    bm25_query: bm25.Query
    tokens: frozenset[str]
    scope_share: float = 1.0
    """The searched namespaces' share of the store's memories: how many of the index's best
    matches a backend may expect to lie in scope (store/sqlite/backend.py)."""

    @property
    def ideal(self) -> float:
        return self.bm25_query.ideal

    @property
    def everywhere(self) -> tuple[str, ...]:
        """Terms searched in every column (the others: own text only)."""
        return tuple(t for t in self.searched if t not in self.own_text_only)


def analysed(
    query: str, terms: dict[str, str], index: TermStats, scope: ScopeStats
) -> AnalysedQuery:
    """`query` (whose `terms` are given) under the store-wide `index` counts (the cost
    bound) and the searched namespaces' `scope` statistics (the scores)."""
    full, own = within_budget(list(terms), index)
    searched = [t for t in terms if t in full or t in own]
    return AnalysedQuery(
        words=terms,
        searched=tuple(searched),
        own_text_only=tuple(own),
        bm25_query=bm25.query(terms, searched, own, scope.docs, scope.doc_freq, scope.length),
        tokens=frozenset(lexicon.words(query)),
        scope_share=_scope_share(index, scope),
    )


def own_text_query(terms: dict[str, str], index: TermStats, scope: ScopeStats) -> AnalysedQuery:
    """`terms` (term → word) searched in memories' own text only, under the cost bound: what
    one memory shares with another lies in their own texts, not their neighbours'."""
    full, own = within_budget(list(terms), index)
    searched = tuple(t for t in terms if t in full or t in own)
    return AnalysedQuery(
        words=terms,
        searched=searched,
        own_text_only=searched,
        bm25_query=bm25.query(terms, searched, searched, scope.docs, scope.doc_freq,
                              scope.length),
        tokens=frozenset(),
        scope_share=_scope_share(index, scope),
    )


def _scope_share(index: TermStats, scope: ScopeStats) -> float:
    return min(scope.docs / index.total_docs, 1.0) if index.total_docs else 1.0


def similarities(
    documents: Sequence[tuple[bm25.Document, str | None]], query: AnalysedQuery
) -> list[float]:
    """semantic_similarity of (document, speaker) pairs: BM25, doubled when the query names
    the speaker, mapped into [0, 1)."""
    q = query.bm25_query
    raws = bm25.score_many((d for d, _ in documents), q.keys, q.avg_length, COLUMN_WEIGHTS)
    return [
        similarity(raw * SPEAKER_BOOST if lexicon.names_speaker(query.tokens, speaker)
                   else raw, query.ideal)
        for raw, (_, speaker) in zip(raws, documents, strict=True)
    ]
