"""Which stored memories a new one most likely repeats or contradicts (pure, deterministic).

`remember` answers with these so an agent can supersede or update a memory without knowing its
id first. A candidate is a current memory of the same kind (the store reads a bounded set: the
best lexical matches and the memories sharing a linked entity); it is kept when

  - it shares a linked entity with the new memory and at least SHARED_OVERLAP of the smaller
    one's content terms, or
  - at least STRONG_OVERLAP of the smaller one's content terms, entities or not.

Terms are the index's (stemmed, so "lags" meets "lag"), stopwords left out. The best MAX_SIMILAR
are kept, most overlapping first (shared entities break ties, then the id).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pma_mcp.core.models import Memory, Similar
from pma_mcp.core.text import analysis, lexicon

MAX_SIMILAR = 3
SHARED_OVERLAP = 0.25
STRONG_OVERLAP = 0.6
PREVIEW_CHARS = 100


def _terms(texts: Sequence[str]) -> list[frozenset[str]]:
    return [frozenset(t for t in terms if t not in lexicon.STOPWORDS)
            for terms in analysis.term_sequences(texts)]


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """The share of the smaller term set the other holds too (0 when either is empty)."""
    smaller = min(len(a), len(b))
    return len(a & b) / smaller if smaller else 0.0


def similar(new: Memory, candidates: Iterable[Memory], skip: Iterable[str] = ()) -> list[Similar]:
    """The candidates `new` likely repeats or contradicts (the module's rule), best first."""
    left_out = {new.id, *skip}
    pool = [m for m in {m.id: m for m in candidates}.values()
            if m.id not in left_out and m.kind is new.kind and m.superseded_by is None]
    if not pool:
        return []
    own, *others = _terms([new.content, *(m.content for m in pool)])
    entities = {e.casefold() for e in new.linked_entities}
    found: list[tuple[float, int, str, Similar]] = []
    for memory, terms in zip(pool, others, strict=True):
        share = overlap(own, terms)
        shared = [e for e in memory.linked_entities if e.casefold() in entities]
        if share >= STRONG_OVERLAP or (shared and share >= SHARED_OVERLAP):
            found.append((share, len(shared), memory.id, Similar(
                id=memory.id,
                preview=lexicon.preview(" ".join(memory.content.split()), PREVIEW_CHARS),
                shared=shared, overlap=round(share, 3))))
    found.sort(key=lambda f: (-f[0], -f[1], f[2]))
    return [f[3] for f in found[:MAX_SIMILAR]]
