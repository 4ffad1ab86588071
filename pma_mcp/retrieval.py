"""Query → ranked memories: the one retrieval path behind recall, load_context, the prompt
hook and the CLI.

1. Scope in SQL (namespaces → memory_type → tags), as the seed filtered before ranking.
2. Candidates from the persistent FTS5 index (see repository): the query is reduced to plain
   words (so no user text can be read as FTS syntax), stopwords dropped, each word quoted and
   OR-ed; Porter stemming is the index tokenizer's. BM25 weighs the columns: a memory's own
   text 1.0, its tags/entities 0.5, and its session neighbours' text 0.5 — episodic
   contiguity: turns saved in sequence are context for each other, so a question phrased
   around a turn still finds it. Best `CANDIDATES` by FTS5's bm25, which only picks them:
   its statistics are the whole file's.
   Cost bound: FTS5 scores every row a MATCH yields, so terms are admitted rarest first while
   the rows they match fit ROW_BUDGET; a term too common for that is searched in memories'
   own text only (no neighbour fan-out) if that fits, else left out. The rarest term always
   stays. Small stores never reach the budget, so their ranking is exact.
3. Each candidate is scored by `bm25` from the term vectors the store keeps with it and the
   statistics of the searched namespaces only (so no project's scores depend on another's
   words, and a word a query shares with a memory always counts, even in a store of one).
   Name match: a memory that is a conversation turn ("Name: text") whose speaker the query
   names has its BM25 score doubled (SPEAKER_BOOST).
4. semantic_similarity ∈ [0, 1) from that score s:

       x = s / Σ_t idf(t)            (bm25.idf over the searched namespaces)
       semantic = 1 − 10^(−x)

   Σ idf(t) is the score of an "ideal" memory holding each query term once in its own text,
   at average length; Σ runs over every query term, searched or not. So x measures how much
   of the query's information a memory matches; the map is monotone (the ranking is kept)
   and gives 0.9 to that ideal match, 0.68 to half of it.
5. Composite per `scoring` (what every result shows, and what `min_score` filters on); the
   order is `scoring.relevance_rank`: similarity, lifted by at most ~15% by importance,
   recency and access, so those decide among comparably relevant memories but a fresh,
   weakly related memory never outranks one that answers the query. Top-k; only those are
   loaded in full; then one write counts the access.

A query with no searchable words (empty, or only stopwords/punctuation) is a query-less
request: memories come back by composite alone (semantic 0), as in the seed.

Measured on the LoCoMo dev split: see docs/BENCHMARKS.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pma_mcp import bm25, lexicon
from pma_mcp.config import Weights
from pma_mcp.models import Memory, Scope, ScoredMemory
from pma_mcp.scoring import relevance_rank, score
from pma_mcp.store.sqlite.repository import Repository, TermStats

CANDIDATES = 300
"""How many BM25 candidates are re-ranked."""
ROW_BUDGET = 7_000
"""Rows one MATCH may make FTS5 score (see the module docstring)."""
COLUMN_WEIGHTS = (1.0, 0.5, 0.5)
"""bm25 weights of the index columns: content, labels (tags/entities), context."""
OWN_TEXT = "{content labels}"
SPEAKER_BOOST = 2.0
FULL_MATCH_SIMILARITY = 0.9

def match_expression(words: Sequence[str], own_text_only: Sequence[str] = ()) -> str:
    """An FTS5 query that ORs the words as quoted strings: plain terms, never operators.

    Words in `own_text_only` are restricted to the memory's own text and labels.
    """
    restricted = set(own_text_only)
    return " OR ".join(
        f'{OWN_TEXT}: "{w}"' if w in restricted else f'"{w}"' for w in words
    )


def similarity(score: float, ideal: float) -> float:
    """Map a BM25 score to [0, 1): 1 − 10^(−score/ideal); the ideal match gets 0.9."""
    if ideal <= 0 or score <= 0:
        return 0.0
    return 1.0 - math.pow(1.0 - FULL_MATCH_SIMILARITY, score / ideal)


@dataclass(frozen=True)
class AnalysedQuery:
    """A query reduced to index terms: the FTS5 MATCH text and what BM25 scores it with."""

    match: str
    stems: tuple[str, ...]
    searched: tuple[str, ...]
    own_text_only: tuple[str, ...]
    bm25_query: bm25.Query
    tokens: frozenset[str]

    @property
    def ideal(self) -> float:
        return self.bm25_query.ideal


def within_budget(stems: Sequence[str], stats: TermStats) -> tuple[list[str], list[str]]:
    """(stems searched in every column, stems searched in memories' own text only).

    Rarest first: a stem joins fully while the rows it matches fit ROW_BUDGET, else on its
    own text if that fits (or if nothing was admitted yet), else it is left out. The counts
    are index-wide, because that is what FTS5 walks.
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


async def analyse(
    repo: Repository, query: str, namespaces: Sequence[str]
) -> AnalysedQuery | None:
    """None when the query has no searchable words (then it ranks like no query).

    BM25 statistics are those of `namespaces` alone: another project's memories never move
    this one's scores.
    """
    stems: dict[str, str] = {}
    for word, stem in await repo.analyze_terms(lexicon.query_words(query)):
        stems.setdefault(stem, word)
    if not stems:
        return None
    full, own = within_budget(list(stems), await repo.term_stats(list(stems)))
    searched = [s for s in stems if s in full or s in own]
    scope = await repo.scope_stats(list(stems), namespaces)
    return AnalysedQuery(
        match=match_expression(list(dict.fromkeys(stems[s] for s in searched)),
                               [stems[s] for s in own]),
        stems=tuple(stems),
        searched=tuple(searched),
        own_text_only=tuple(own),
        bm25_query=bm25.query(stems, searched, own, scope.docs, scope.doc_freq, scope.length),
        tokens=frozenset(lexicon.words(query)),
    )


def similarities(
    documents: Sequence[tuple[bm25.Document, str | None]], analysed: AnalysedQuery
) -> list[float]:
    """semantic_similarity of (document, speaker) pairs: BM25, doubled when the query names
    the speaker, mapped into [0, 1)."""
    q = analysed.bm25_query
    raws = bm25.score_many((d for d, _ in documents), q.keys, q.avg_length, COLUMN_WEIGHTS)
    return [
        similarity(raw * SPEAKER_BOOST if lexicon.names_speaker(analysed.tokens, speaker)
                   else raw, analysed.ideal)
        for raw, (_, speaker) in zip(raws, documents, strict=True)
    ]


async def similarity_of(
    repo: Repository, query: str, memory: Memory, namespaces: Sequence[str]
) -> float:
    """The semantic_similarity `search` over `namespaces` would give `memory` for `query`."""
    analysed = await analyse(repo, query, namespaces)
    if analysed is None:
        return 0.0
    return similarities([await repo.lexical_document(memory)], analysed)[0]


async def search(
    repo: Repository,
    query: str | None,
    scope: Scope,
    *,
    limit: int,
    now: float,
    weights: Weights,
    min_score: float = 0.0,
    touch: bool = True,
    min_similarity: float = 0.0,
) -> list[ScoredMemory]:
    """Rank memories in `scope` for `query`, best first (see the module docstring for the
    order); count an access for what is returned if `touch`.

    `min_similarity` drops candidates below that semantic_similarity before the top-k cut,
    so a relevance floor never leaves the caller with fewer results than it could have.
    """
    analysed = await analyse(repo, query, scope.namespaces) if query else None
    if analysed is None and min_similarity > 0.0:
        return []  # without searchable words every similarity is 0: nothing clears a floor
    if analysed is not None:
        pool = await repo.lexical_candidates(analysed.match, scope, CANDIDATES, COLUMN_WEIGHTS)
        sims = similarities([(c.document, c.speaker) for c in pool], analysed)
    else:
        pool = await repo.static_candidates(scope, max(limit * 4, 50), now, weights)
        sims = [0.0] * len(pool)
    ranked = []
    for candidate, semantic in zip(pool, sims, strict=True):
        parts = score(candidate.importance, candidate.created_at, candidate.access_count,
                      now, weights, semantic)
        if parts.composite >= min_score and semantic >= min_similarity:
            order = relevance_rank(parts, weights) if analysed else parts.composite
            ranked.append((order, parts, candidate.seq))
    ranked.sort(key=lambda r: (r[0], r[1].composite, r[2]), reverse=True)
    top = [(parts, seq) for _, parts, seq in ranked[:limit]]
    loaded = await repo.memories_by_seq([seq for _, seq in top])
    results = [ScoredMemory(memory=loaded[seq], score=parts.composite, breakdown=parts)
               for parts, seq in top if seq in loaded]
    if touch and results:
        await repo.touch([r.memory for r in results], now, reason="recalled")
    return results
