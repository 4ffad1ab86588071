"""Near-duplicate and restatement merges read through the store: the namespace plan's and
one memory's.

The rule itself (signatures, TF-IDF vectors, content terms, specifics, which pairs merge) is
core/consolidation.py; here it is fed with the term sequences, vectors and document counts
the store keeps.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from pma_mcp.core.consolidation import (
    MAX_COMPONENT,
    ContentTerms,
    Edge,
    Profile,
    ScoreOf,
    Vectors,
    Vocabulary,
    edge,
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
    terms = ContentTerms(stored, vocab)
    restating = terms.groups()
    grouped = sorted({i for members in (*groups, *restating) for i in members})
    found = {i: Profile(current[i], vocab.of_ranks(table[i].tolist())) for i in grouped}
    edges = similar_pairs(groups, found, Vectors([stored[i] for i in grouped], vocab),
                          {i: k for k, i in enumerate(grouped)}, restating, terms)
    return select(edges, {m.id: score_of(m) for e in edges for m in e[1:3]})


def _probe_words(memory: Planned, terms: Sequence[str]) -> list[str]:
    """A word of `memory`'s text for each of `terms` (the full-text index matches words)."""
    first: dict[str, str] = {}
    for word, term in analysis.stems(list(dict.fromkeys(lexicon.words(memory.content)))):
        first.setdefault(term, word)
    return [first.get(t, "") for t in terms]


async def merge_of(store: Store, memory: Planned, score_of: ScoreOf) -> MergePair | None:
    """The merge the namespace plan makes of `memory` into another, if any, computed from its
    chain of near-duplicates and restatements alone (found through the full-text index by
    the plan's neighbour keys)."""
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

    def compare(batch: Sequence[Planned]) -> tuple[Vocabulary, ContentTerms, list[set[int]]]:
        """The batch's content terms and restatement keys, as the plan has them."""
        vocab = Vocabulary(doc_freq, total)
        terms = ContentTerms([sequences.get(m.seq, b"") for m in batch], vocab)
        keys: list[set[int]] = [set() for _ in batch]
        for row, key in zip(*(a.tolist() for a in terms.neighbour_keys()), strict=True):
            keys[row].add(key)
        return vocab, terms, keys

    def restating_terms(p: Profile) -> list[tuple[str, ...]]:
        """The term pairs of `p`'s restatement keys."""
        _, terms, (keys,) = compare([p.memory])
        return [terms.key_terms(k) for k in sorted(keys)]

    found: dict[str, Profile] = {}
    pending = [memory]
    edges: dict[tuple[str, str], Edge] = {}
    while pending and len(found) < MAX_COMPONENT:
        fresh = await make(pending)
        found.update((p.memory.id, p) for p in fresh)
        pending = []
        for p in fresh:
            restating = restating_terms(p)
            wanted = sorted({t for key in (*p.keys, *restating) for t in key})
            probes = dict(zip(wanted, _probe_words(p.memory, wanted), strict=True))
            groups = [[probes[t] for t in key] for key in (*p.keys, *restating)
                      if all(probes[t] for t in key)]
            if not groups:
                continue
            others = [o for o in await store.memories_matching_all(namespace, groups)
                      if o.id != p.memory.id]
            known = [found[o.id] for o in others if o.id in found]
            new = await make([o for o in others if o.id not in found]) if others else []
            candidates = [p, *known, *new]
            batch = [q.memory for q in candidates]
            vocab, terms, keys = compare(batch)
            compared = [k for k in range(1, len(candidates))
                        if neighbours(p, candidates[k]) or keys[0] & keys[k]]
            rows = Vectors([sequences.get(m.seq, b"") for m in batch], vocab)
            cosines = rows.cosines([0] * len(compared), compared)
            said = [k for k in compared if keys[0] & keys[k]]
            overlaps = dict(zip(said, terms.overlaps([0] * len(said), said), strict=True))
            for k, value in zip(compared, cosines, strict=True):
                q = candidates[k]
                found_edge = edge(p.memory, q.memory, value, neighbours(p, q), overlaps.get(k))
                if found_edge is None:
                    continue
                ids = sorted((p.memory.id, q.memory.id))
                edges[ids[0], ids[1]] = found_edge
                if q.memory.id not in found and q.memory not in pending:
                    pending.append(q.memory)
    members = {m.id: m for e in edges.values() for m in e[1:3]}
    for pair in select(edges.values(), {i: score_of(m) for i, m in members.items()}):
        if pair.gone.id == memory.id:
            return pair
    return None
