"""Query → ranked memories: the one retrieval path behind recall, load_context, the prompt
hook and the CLI. Backend-neutral: the store finds and scores the lexical candidates.

1. Scope (namespaces → memory_type → tags) is applied by the store before ranking, so a
   filter never leaves fewer results than the limit when enough memories match.
2. With searchable words, the store returns up to CANDIDATES memories with their
   semantic_similarity ∈ [0, 1) (BM25 over the searched namespaces' statistics, see
   store/relevance.py for the formula and the 0.9 "ideal match" calibration).
3. Composite per `scoring` (what every result shows, and what `min_score` filters on); the
   order is `scoring.relevance_rank`: similarity, lifted by at most ~15% by importance,
   recency and access, so those decide among comparably relevant memories but a fresh,
   weakly related memory never outranks one that answers the query.
4. With a query, the best rerank.DEPTH of that order get a second pass (core/rerank.py: a
   fixed linear combination of the first-pass match and a few features of the candidates'
   terms, speakers and sessions). Top-k; only those are loaded in full; then one write
   counts the access.

A query with no searchable words (empty, or only stopwords/punctuation) is a query-less
request: memories come back by composite alone (semantic 0).

Measured on the LoCoMo dev split: see docs/BENCHMARKS.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from pma_mcp.core import rerank
from pma_mcp.core.models import Memory, Scope, ScoreBreakdown, ScoredMemory
from pma_mcp.core.scoring import Weights, relevance_rank, score
from pma_mcp.core.text import relevance
from pma_mcp.core.text.relevance import CANDIDATES
from pma_mcp.store import Candidate, Store


async def similarity_of(
    store: Store, query: str, memory: Memory, namespaces: Sequence[str]
) -> float:
    """The semantic_similarity `search` over `namespaces` would give `memory` for `query`."""
    return await store.similarity_of(query, memory, namespaces)


Ranked = list[tuple[float, ScoreBreakdown, Candidate]]


def _second_pass(query: str, ranked: Ranked) -> Ranked:
    """`ranked` (first-pass order) in core/rerank.py's order."""
    entries = [rerank.entry(c.seq, relevance.match_share(parts.semantic_similarity)
                            * (order / parts.semantic_similarity
                               if parts.semantic_similarity > 0 else 1.0),
                            c.session_id, c.speaker, c.terms)
               for order, parts, c in ranked[:rerank.DEPTH]]
    q = rerank.question(query, list(relevance.query_terms(query)))
    return [ranked[i] for i in rerank.order(entries, q)] + ranked[rerank.DEPTH:]


async def search(
    store: Store,
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
    searchable = bool(query) and relevance.searchable(query or "")
    if not searchable and min_similarity > 0.0:
        return []  # without searchable words every similarity is 0: nothing clears a floor
    if searchable:
        pool = await store.lexical_candidates(query or "", scope, CANDIDATES)
    else:
        pool = await store.static_candidates(scope, max(limit * 4, 50), now, weights)
    ranked = []
    for candidate in pool:
        semantic = candidate.semantic
        parts = score(candidate.importance, candidate.created_at, candidate.access_count,
                      now, weights, semantic)
        if parts.composite >= min_score and semantic >= min_similarity:
            order = relevance_rank(parts, weights) if searchable else parts.composite
            ranked.append((order, parts, candidate))
    ranked.sort(key=lambda r: (r[0], r[1].composite, r[2].seq), reverse=True)
    if searchable:
        ranked = _second_pass(query or "", ranked)
    top = [(parts, c.seq) for _, parts, c in ranked[:limit]]
    loaded = await store.memories_by_seq([seq for _, seq in top])
    results = [ScoredMemory(memory=loaded[seq], score=parts.composite, breakdown=parts)
               for parts, seq in top if seq in loaded]
    if touch and results:
        await store.touch([r.memory for r in results], now, reason="recalled")
    return results
