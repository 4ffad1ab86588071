"""Query → ranked memories: the one retrieval path behind recall, load_context, the prompt
hook and the CLI.

1. Scope in SQL (namespaces → memory_type → tags), as the seed filtered before ranking.
2. Candidates from the persistent FTS5 index: the query is reduced to plain words (so no user
   text can be read as FTS syntax), stopwords dropped, each word quoted and OR-ed; Porter
   stemming is the index tokenizer's. Terms so common that OR-ing them would make FTS5 score
   thousands of rows are left out while rarer terms exist (`within_budget`). Best
   `CANDIDATES` by BM25; only the final top-k are loaded in full.
3. semantic_similarity ∈ [0, 1) from the BM25 score s of the memory:

       x = s / Σ_t idf(t)            (idf exactly as FTS5's bm25 computes it)
       semantic = 1 − 10^(−x)

   Σ idf(t) is the score of an "ideal" memory holding each query term once at average length,
   so x measures how much of the query's information a memory matches; the map is monotone
   (BM25's order is kept) and gives 0.9 to that ideal match, 0.68 to half of it.
   Σ runs over every query term, searched or not, so leaving a common term out can only
   lower a similarity, never inflate it.
4. Composite per `scoring`, `min_score`, top-k; then one write counts the access.

A query with no searchable words (empty, or only stopwords/punctuation) is a query-less
request: memories come back by composite alone (semantic 0), as in the seed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pma_mcp.config import Weights
from pma_mcp.models import Memory, Scope, ScoredMemory
from pma_mcp.repository import Repository, TermStats
from pma_mcp.scoring import score

CANDIDATES = 200
"""How many BM25 candidates are re-ranked by the composite score."""
POSTINGS_BUDGET = 2_000
"""Summed document counts of the terms one MATCH may OR together (see within_budget)."""
MAX_QUERY_WORDS = 48
FULL_MATCH_SIMILARITY = 0.9

_WORD = re.compile(r"[^\W_]+", re.UNICODE)

STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can cannot could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself me more most my myself no nor not of off on once only or other ought our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    also just s t d ll m o re ve y get got yes yeah ok okay oh hey hi
    aren couldn didn doesn don hadn hasn haven isn let mustn shan shouldn wasn weren won wouldn
    """.split()
)


def query_words(query: str) -> list[str]:
    """Lower-cased words of `query` minus stopwords, first occurrence kept, capped."""
    seen: dict[str, None] = {}
    for match in _WORD.finditer(query.lower()):
        word = match.group()
        if word not in STOPWORDS and word not in seen:
            seen[word] = None
            if len(seen) >= MAX_QUERY_WORDS:
                break
    return list(seen)


def match_expression(words: Sequence[str]) -> str:
    """An FTS5 query that ORs the words as quoted strings: plain terms, never operators."""
    return " OR ".join(f'"{w}"' for w in words)


def idf(total_docs: int, doc_freq: int) -> float:
    """FTS5 bm25()'s idf: log((N − n + 0.5) / (n + 0.5)), floored at 1e-6."""
    value = math.log((total_docs - doc_freq + 0.5) / (doc_freq + 0.5))
    return value if value > 0 else 1e-6


def ideal_score(terms: Sequence[str], stats: TermStats) -> float:
    """BM25 of a memory holding every term once at average length: Σ idf."""
    return sum(idf(stats.total_docs, stats.doc_freq.get(t, 0)) for t in terms)


def similarity(bm25: float, ideal: float) -> float:
    """Map a BM25 score to [0, 1): 1 − 10^(−bm25/ideal); the ideal match gets 0.9."""
    if ideal <= 0 or bm25 <= 0:
        return 0.0
    return 1.0 - math.pow(1.0 - FULL_MATCH_SIMILARITY, bm25 / ideal)


@dataclass(frozen=True)
class AnalysedQuery:
    """A query reduced to index terms: the FTS5 MATCH text and the ideal BM25 score."""

    match: str
    stems: tuple[str, ...]
    searched: tuple[str, ...]
    ideal: float


def within_budget(stems: Sequence[str], stats: TermStats) -> list[str]:
    """The rarest stems whose documents add up to at most POSTINGS_BUDGET (at least one).

    FTS5 scores every row a MATCH yields, so cost grows with the summed document counts of
    the OR-ed terms. A term in thousands of memories carries little information (low idf)
    but would dominate that cost; it is left out of the MATCH while rarer terms exist.
    Small stores never reach the budget, so their ranking is exact BM25.
    """
    chosen: list[str] = []
    total = 0
    for stem in sorted(stems, key=lambda t: stats.doc_freq.get(t, 0)):
        docs = stats.doc_freq.get(stem, 0)
        if total and total + docs > POSTINGS_BUDGET:
            break  # `total`, not `chosen`: a term in no memory matches nothing
        chosen.append(stem)
        total += docs
    return [s for s in stems if s in chosen]


async def analyse(repo: Repository, query: str) -> AnalysedQuery | None:
    """None when the query has no searchable words (then it ranks like no query)."""
    stems: dict[str, str] = {}
    for word, stem in await repo.analyze_terms(query_words(query)):
        stems.setdefault(stem, word)
    if not stems:
        return None
    stats = await repo.term_stats(list(stems))
    searched = within_budget(list(stems), stats)
    return AnalysedQuery(
        match=match_expression(list(dict.fromkeys(stems[s] for s in searched))),
        stems=tuple(stems),
        searched=tuple(searched),
        ideal=ideal_score(list(stems), stats),
    )


async def similarity_of(repo: Repository, query: str, memory: Memory) -> float:
    """The semantic_similarity `search` would give `memory` for `query`."""
    analysed = await analyse(repo, query)
    if analysed is None:
        return 0.0
    return similarity(await repo.lexical_score(analysed.match, memory), analysed.ideal)


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
    """Rank memories in `scope` for `query`; count an access for what is returned if `touch`.

    `min_similarity` drops candidates below that semantic_similarity before the top-k cut,
    so a relevance floor never leaves the caller with fewer results than it could have.
    """
    analysed = await analyse(repo, query) if query else None
    if analysed is not None:
        pool = await repo.lexical_candidates(analysed.match, scope, CANDIDATES)
        sims = [similarity(c.bm25, analysed.ideal) for c in pool]
    else:
        pool = await repo.static_candidates(scope, max(limit * 4, 50), now, weights)
        sims = [0.0] * len(pool)
    ranked = []
    for candidate, semantic in zip(pool, sims, strict=True):
        parts = score(candidate.importance, candidate.created_at, candidate.access_count,
                      now, weights, semantic)
        if parts.composite >= min_score and semantic >= min_similarity:
            ranked.append((parts, candidate.seq))
    ranked.sort(key=lambda r: (r[0].composite, r[1]), reverse=True)
    ranked = ranked[:limit]
    loaded = await repo.memories_by_seq([seq for _, seq in ranked])
    results = [ScoredMemory(memory=loaded[seq], score=parts.composite, breakdown=parts)
               for parts, seq in ranked if seq in loaded]
    if touch and results:
        await repo.touch([r.memory for r in results], now, reason="recalled")
    return results
