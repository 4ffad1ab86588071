"""Near-duplicate merges read through the store: the namespace plan's and one memory's.

The rule itself (signatures, TF-IDF vectors, which pairs merge) is core/consolidation.py;
here it is fed with the term sequences, vectors and document counts the store keeps.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from pma_mcp.core.consolidation import (
    MAX_COMPONENT,
    NEAR_DUPLICATE_COSINE,
    Profile,
    ScoreOf,
    Vectors,
    Vocabulary,
    neighbours,
    select,
    similar_pairs,
    vector_terms,
)
from pma_mcp.core.models import MergePair, Planned
from pma_mcp.core.text import analysis, lexicon
from pma_mcp.store import Store


async def namespace_vocabulary(store: Store, namespace: str) -> Vocabulary:
    total, doc_freq = await store.namespace_doc_freq(namespace)
    return Vocabulary(doc_freq, total)


def profiles(
    memories: Sequence[Planned], vectors: Mapping[int, str], vocabulary: Vocabulary
) -> list[Profile]:
    """Profiles of `memories`, their stored term vectors given."""
    return [Profile(m, vocabulary.signature(vector_terms(vectors.get(m.seq, ""))))
            for m in memories]


def _current(memories: Iterable[Planned]) -> list[Planned]:
    # A corrected memory and its correction are alike by nature; merging them could keep the
    # wrong one, so superseded memories never take part.
    return [m for m in memories if m.superseded_by is None]


_WHOLE_NAMESPACE_READ = 5_000
"""From this many memories their term sequences are read with the namespace's, not by seq."""


async def near_duplicates(
    store: Store, memories: Sequence[Planned], score_of: ScoreOf,
    sequences: Mapping[int, bytes] | None = None,
) -> list[MergePair]:
    """The merges of a GC plan over `memories` (one namespace); `sequences`: their stored
    term sequences by seq, if already read."""
    current = _current(memories)
    if len(current) < 2:
        return []
    namespace = current[0].namespace
    vocab = await namespace_vocabulary(store, namespace)
    if sequences is None and len(current) >= _WHOLE_NAMESPACE_READ:
        sequences = await store.namespace_term_sequences(namespace)
    elif sequences is None:
        sequences = await store.term_sequences([m.seq for m in current])
    stored = [sequences.get(m.seq, b"") for m in current]
    groups, table = vocab.signatures(stored)
    grouped = sorted({i for members in groups for i in members})
    found = {i: Profile(current[i], vocab.of_ranks(table[i].tolist())) for i in grouped}
    edges = similar_pairs(groups, found, Vectors([stored[i] for i in grouped], vocab),
                          {i: k for k, i in enumerate(grouped)})
    return select(edges, {m.id: score_of(m) for e in edges for m in e[1:]})


def _probe_words(memory: Planned, terms: Sequence[str]) -> list[str]:
    """A word of `memory`'s text for each of `terms` (the full-text index matches words)."""
    first: dict[str, str] = {}
    for word, term in analysis.stems(list(dict.fromkeys(lexicon.words(memory.content)))):
        first.setdefault(term, word)
    return [first.get(t, "") for t in terms]


async def merge_of(store: Store, memory: Planned, score_of: ScoreOf) -> MergePair | None:
    """The merge the namespace plan makes of `memory` into another, if any, computed from its
    chain of near-duplicates alone (found through the full-text index)."""
    if memory.superseded_by is not None:
        return None
    namespace = memory.namespace
    vectors: dict[int, str] = {}
    sequences: dict[int, bytes] = {}
    doc_freq: dict[str, int] = {}
    total = 0

    async def make(batch: Sequence[Planned]) -> list[Profile]:
        nonlocal total
        seqs = [m.seq for m in batch]
        vectors.update(await store.content_vectors(seqs))
        sequences.update(await store.term_sequences(seqs))
        terms = sorted({t for m in batch for t in vector_terms(vectors.get(m.seq, ""))})
        total, counts = await store.namespace_doc_freq(namespace, terms)
        doc_freq.update(counts)
        return profiles(batch, vectors, Vocabulary(counts, total))

    def cosines(p: Profile, others: Sequence[Profile]) -> list[float]:
        """p's cosine with each of `others`, as the namespace plan computes them."""
        batch = [p.memory, *(q.memory for q in others)]
        rows = Vectors([sequences.get(m.seq, b"") for m in batch], Vocabulary(doc_freq, total))
        return rows.cosines([0] * len(others), list(range(1, len(batch))))

    found: dict[str, Profile] = {}
    pending = [memory]
    edges: dict[tuple[str, str], tuple[float, Planned, Planned]] = {}
    while pending and len(found) < MAX_COMPONENT:
        fresh = await make(pending)
        found.update((p.memory.id, p) for p in fresh)
        pending = []
        for p in fresh:
            if not p.signature:
                continue
            probes = dict(zip(p.signature, _probe_words(p.memory, p.signature),
                              strict=True))
            groups = [[probes[t] for t in key] for key in p.keys
                      if all(probes[t] for t in key)]
            others = [o for o in await store.memories_matching_all(namespace, groups)
                      if o.id != p.memory.id]
            known = [found[o.id] for o in others if o.id in found]
            new = await make([o for o in others if o.id not in found]) if others else []
            candidates = [q for q in [*known, *new] if neighbours(p, q)]
            for q, value in zip(candidates, cosines(p, candidates), strict=True):
                if value < NEAR_DUPLICATE_COSINE:
                    continue
                ids = sorted((p.memory.id, q.memory.id))
                edges[ids[0], ids[1]] = (value, p.memory, q.memory)
                if q.memory.id not in found and q.memory not in pending:
                    pending.append(q.memory)
    members = {m.id: m for e in edges.values() for m in e[1:]}
    for pair in select(edges.values(), {i: score_of(m) for i, m in members.items()}):
        if pair.gone.id == memory.id:
            return pair
    return None
