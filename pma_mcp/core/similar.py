"""Which stored memories a new one most likely repeats or contradicts (pure, deterministic).

`remember` answers with these so an agent can supersede or update a memory without knowing its
id first. A candidate is a current memory of the same kind (the store reads a bounded set: the
best lexical matches and the memories sharing a linked entity); it is kept when

  - it shares a linked entity with the new memory and at least SHARED_OVERLAP of the smaller
    one's content terms, or
  - at least STRONG_OVERLAP of the smaller one's content terms, entities or not.

Terms are the index's (stemmed, so "lags" meets "lag"), stopwords left out. The best MAX_SIMILAR
are kept, most overlapping first (shared entities break ties, then the id).

The lexical matches are looked up by the new memory's rarest terms only (`probe`), never by
its common words, whose postings are most of a search's cost in a large store.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from pma_mcp.core.models import Memory
from pma_mcp.core.text import analysis, bm25, lexicon

if TYPE_CHECKING:
    from pma_mcp.core.records import Similar

MAX_SIMILAR = 3
SHARED_OVERLAP = 0.25
STRONG_OVERLAP = 0.6
PREVIEW_CHARS = 100
PROBE_TERMS = 8
"""The fewest rare terms a new memory's lexical matches are looked up by (when there are)."""
PROBE_ROWS = 300
"""The most memories the looked-up terms may be held by, in all (past the rarest): a word
held by hundreds says little about which memory is repeated, and walking its postings would
be most of the cost of a `remember` in a large store."""


def _terms(texts: Sequence[str]) -> list[frozenset[str]]:
    return [frozenset(t for t in terms if t not in lexicon.STOPWORDS)
            for terms in analysis.term_sequences(texts)]


def probe(doc_freq: Mapping[str, int]) -> list[str]:
    """The terms of a new (already stored) memory to look up others by, given how many
    memories hold each: the rarest that another memory holds too (a count of 2 or more),
    enough of them that a memory holding STRONG_OVERLAP of the new one's terms holds one,
    at least PROBE_TERMS, and together held by at most PROBE_ROWS memories (the rarest is
    kept whatever it costs, so a memory of common words still finds its repeats)."""
    held = sorted((t for t, n in doc_freq.items() if n >= 2), key=lambda t: (doc_freq[t], t))
    needed = max(math.floor(len(held) - STRONG_OVERLAP * len(doc_freq)) + 1, PROBE_TERMS)
    chosen: list[str] = []
    rows = 0
    for term in held[:needed]:
        rows += doc_freq[term]
        if rows > PROBE_ROWS and chosen:
            break
        chosen.append(term)
    return chosen


def content_terms(content: str) -> frozenset[str]:
    """The terms of `content` the rule compares."""
    return _terms([content])[0]


def vector_terms(vector: str) -> frozenset[str]:
    """The same terms, from a memory's stored content vector (bm25.encode)."""
    return bm25.terms(vector) - lexicon.STOPWORDS


def with_terms(memories: Sequence[Memory]) -> list[tuple[Memory, frozenset[str]]]:
    """Each memory beside its content's terms."""
    return list(zip(memories, _terms([m.content for m in memories]), strict=True))


def worth_reading(
    own: frozenset[str], found: Mapping[int, frozenset[str]], has_entities: bool
) -> list[int]:
    """Which lexical matches (seq → terms, all current and of the new memory's kind) can be
    among the answer, so only they are read in full: with no entity to share, those over
    STRONG_OVERLAP as overlapping as the MAX_SIMILAR-th best (ties kept: ids order them);
    else every one over SHARED_OVERLAP."""
    shares = {seq: overlap(own, terms) for seq, terms in found.items()}
    least = SHARED_OVERLAP if has_entities else STRONG_OVERLAP
    kept = sorted((share for share in shares.values() if share >= least), reverse=True)
    if not has_entities and len(kept) > MAX_SIMILAR:
        least = kept[MAX_SIMILAR - 1]
    return [seq for seq, share in shares.items() if share >= least]


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """The share of the smaller term set the other holds too (0 when either is empty)."""
    smaller = min(len(a), len(b))
    return len(a & b) / smaller if smaller else 0.0


def similar(
    new: Memory,
    own: frozenset[str],
    candidates: Iterable[tuple[Memory, frozenset[str]]],
    skip: Iterable[str] = (),
) -> list[Similar]:
    """The candidates (each with its terms) `new` (with terms `own`) likely repeats or
    contradicts (the module's rule), best first."""
    from pma_mcp.core.records import Similar  # not built on a hook's path

    left_out = {new.id, *skip}
    pool = {m.id: (m, terms) for m, terms in candidates
            if m.id not in left_out and m.kind is new.kind and m.superseded_by is None}
    entities = {e.casefold() for e in new.linked_entities}
    found: list[tuple[float, int, str, Similar]] = []
    for memory, terms in pool.values():
        share = overlap(own, terms)
        shared = [e for e in memory.linked_entities if e.casefold() in entities]
        if share >= STRONG_OVERLAP or (shared and share >= SHARED_OVERLAP):
            found.append((share, len(shared), memory.id, Similar(
                id=memory.id,
                preview=lexicon.preview(" ".join(memory.content.split()), PREVIEW_CHARS),
                shared=shared, overlap=round(share, 3))))
    found.sort(key=lambda f: (-f[0], -f[1], f[2]))
    return [f[3] for f in found[:MAX_SIMILAR]]
