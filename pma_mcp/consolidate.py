"""Near-duplicate detection for GC merges: TF-IDF cosine between lexical neighbours.

Two current memories of one namespace are the same fact said twice when the cosine of their
TF-IDF vectors is at least NEAR_DUPLICATE_COSINE. The vectors are over the index's own terms
(the FTS tokenizer's Porter stems) and adjacent-term pairs, with sublinear tf and smoothed idf
from the store's document frequencies (`Repository.term_stats`): a pair's similarity depends on
the pair and the store, never on which other memories happen to be compared with it.

Only lexical neighbours are compared, never all pairs: a memory's signature is its
SIGNATURE_TERMS rarest terms (document frequency ≤ MAX_SIGNATURE_DF), and two memories are
compared when their signatures share two terms (one, if a signature has a single term). Two
texts at cosine 0.85 share nearly all their weight, which sits on their rarest terms, so this
finds the merges all-pairs found (benchmarks/bench_gc.py compares both) in time linear in the
namespace. The namespace plan groups memories by signature pairs; `inspect` finds one memory's
neighbours through the full-text index by the same rule, so both agree.

Exact duplicates never reach this point: `add` recognises them by content hash.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

from pma_mcp import lexicon
from pma_mcp.models import Memory, MergePair
from pma_mcp.repository import Repository

NEAR_DUPLICATE_COSINE = 0.85
"""TF-IDF cosine at or above which two memories of one namespace are the same fact said twice.
Chosen so rewordings like "The user prefers dark mode in every editor." / "the user prefers
dark mode in every editor" merge while memories sharing a topic do not."""
SIGNATURE_TERMS = 3
MAX_SIGNATURE_DF = 1_000
"""A term in more memories than this says too little to make two memories neighbours; it
also bounds the neighbours one signature can have."""
_STATS_CHUNK = 5_000
_UNRANKED = 1 << 62
MAX_COMPONENT = 64
"""At most this many memories are followed through chains of near-duplicates by `inspect`."""

ScoreOf = Callable[[Memory], float]


class Vocabulary:
    """How the store reads words: each word's index terms, each term's document count, and
    the terms that may sign a memory ranked rarest first (ties by term)."""

    def __init__(
        self, terms: Mapping[str, tuple[str, ...]], doc_freq: Mapping[str, int], total: int
    ) -> None:
        self.terms = terms
        self.doc_freq = doc_freq
        self.total = total
        self._idf: dict[str, float] = {}
        distinct = {t for ts in terms.values() for t in ts}
        self.ranked = sorted(
            (t for t in distinct if doc_freq.get(t, 0) <= MAX_SIGNATURE_DF),
            key=lambda t: (doc_freq.get(t, 0), t),
        )
        rank = {t: i for i, t in enumerate(self.ranked)}
        # Most words are one term: their rank in a flat map (C-speed lookups), others apart.
        self._rank_of: dict[str, int] = {}
        self._ranks_of: dict[str, tuple[int, ...]] = {}
        for word, ts in terms.items():
            if len(ts) == 1:
                if ts[0] in rank:
                    self._rank_of[word] = rank[ts[0]]
            else:
                self._ranks_of[word] = tuple(rank[t] for t in ts if t in rank)

    def idf(self, term: str) -> float:
        """sklearn's smoothed idf: ln((1 + N) / (1 + df)) + 1."""
        value = self._idf.get(term)
        if value is None:
            value = math.log((1 + self.total) / (1 + self.doc_freq.get(term, 0))) + 1.0
            self._idf[term] = value
        return value

    def signature(self, words: Iterable[str]) -> tuple[str, ...]:
        """The SIGNATURE_TERMS rarest signing terms of a text's words."""
        distinct = set(words)
        found = set(map(self._rank_of.get, distinct, itertools.repeat(_UNRANKED)))
        if self._ranks_of:
            for word in distinct:
                if word in self._ranks_of:
                    found.update(self._ranks_of[word])
        ranks = sorted(found)[:SIGNATURE_TERMS + 1]
        return tuple(self.ranked[r] for r in ranks if r != _UNRANKED)[:SIGNATURE_TERMS]


def neighbour_keys(signature: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    """Two memories are neighbours when they share one of these: the pairs of their signature
    terms (the term itself for a one-term signature)."""
    if len(signature) == 1:
        return (signature,)
    return tuple(tuple(sorted(pair)) for pair in itertools.combinations(signature, 2))


class Profile:
    """One memory as the merge rule sees it: its signature, neighbour keys, a word of its text
    for each signature term (`probes`, what the FTS index matches) and, computed only when
    compared, its vector."""

    def __init__(self, memory: Memory, vocabulary: Vocabulary, words: Sequence[str]) -> None:
        self.memory = memory
        self._vocabulary = vocabulary
        terms = vocabulary.terms
        self._sequence = [(t, w) for w in words for t in terms.get(w, ())]
        self.signature = vocabulary.signature(words)
        first: dict[str, str] = {}  # each term with the first word that gives it
        for term, word in self._sequence:
            first.setdefault(term, word)
        self.probes = tuple(first[t] for t in self.signature)
        self.keys = neighbour_keys(self.signature)
        self._vector: dict[str, float] | None = None

    @property
    def vector(self) -> Mapping[str, float]:
        """Sublinear tf × idf over terms and adjacent-term pairs (a pair weighs as its rarer
        term: its own document count is not kept), L2-normalised."""
        if self._vector is None:
            idf = self._vocabulary.idf
            terms = [t for t, _ in self._sequence]
            weights: dict[str, float] = {}
            for term, n in Counter(terms).items():
                weights[term] = (1.0 + math.log(n)) * idf(term)
            for (a, b), n in Counter(itertools.pairwise(terms)).items():
                weights[f"{a} {b}"] = (1.0 + math.log(n)) * max(idf(a), idf(b))
            norm = math.sqrt(sum(w * w for w in weights.values())) or 1.0
            self._vector = {k: w / norm for k, w in weights.items()}
        return self._vector


def neighbours(a: Profile, b: Profile) -> bool:
    """Whether the rule compares `a` with `b` at all."""
    return not set(a.keys).isdisjoint(b.keys)


def cosine(a: Profile, b: Profile) -> float:
    small, large = (a.vector, b.vector) if len(a.vector) <= len(b.vector) else (b.vector, a.vector)
    return min(sum(w * large.get(k, 0.0) for k, w in small.items()), 1.0)


def select(
    edges: Iterable[tuple[float, Memory, Memory]], score_of: Mapping[str, float]
) -> list[MergePair]:
    """Merges from similar pairs, most similar first; each memory goes at most once, and a
    memory that goes never absorbs another (nor one that absorbed another goes)."""
    ordered: list[tuple[float, Memory, Memory]] = sorted(
        ((value, a, b) if a.seq < b.seq else (value, b, a) for value, a, b in edges),
        key=lambda e: (e[0], e[1].seq, e[2].seq), reverse=True,
    )
    gone: set[str] = set()
    keepers: set[str] = set()
    pairs: list[MergePair] = []
    for value, a, b in ordered:
        if a.id in gone or b.id in gone:
            continue
        better = (score_of[a.id], a.seq) >= (score_of[b.id], b.seq)
        keep, drop = (a, b) if better else (b, a)
        if drop.id in keepers:
            continue
        pairs.append(MergePair(gone=drop, keep=keep, similarity=value))
        gone.add(drop.id)
        keepers.add(keep.id)
    return pairs


def similar_pairs(
    memories: Sequence[Memory],
    words: Sequence[Sequence[str]],
    vocabulary: Vocabulary,
    threshold: float = NEAR_DUPLICATE_COSINE,
) -> list[tuple[float, Memory, Memory]]:
    """Every neighbouring pair at or above `threshold`, found through shared neighbour keys;
    only memories that have a neighbour get a vector."""
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, text in enumerate(words):
        for key in neighbour_keys(vocabulary.signature(text)):
            groups.setdefault(key, []).append(i)
    profiles: dict[int, Profile] = {}

    def profile(i: int) -> Profile:
        if i not in profiles:
            profiles[i] = Profile(memories[i], vocabulary, words[i])
        return profiles[i]

    seen: set[tuple[int, int]] = set()
    edges = []
    for members in groups.values():
        for i, j in itertools.combinations(members, 2):
            if (i, j) in seen:
                continue
            seen.add((i, j))
            value = cosine(profile(i), profile(j))
            if value >= threshold:
                edges.append((value, memories[i], memories[j]))
    return edges


# ------------------------------------------------------------------ with the store


async def vocabulary(repo: Repository, texts: Iterable[Sequence[str]]) -> Vocabulary:
    """The index terms of every word of `texts` (each a list of words) and their document
    frequencies. A run of ASCII digits is its own term (no stemming applies to it)."""
    words = {w for text in texts for w in text}
    terms: dict[str, list[str]] = {w: [w] for w in words if w.isascii() and w.isdigit()}
    for word, term in await repo.analyze_terms(sorted(words - terms.keys())):
        terms.setdefault(word, []).append(term)
    distinct = sorted({t for ts in terms.values() for t in ts})
    doc_freq: dict[str, int] = {}
    total = 0
    for start in range(0, max(len(distinct), 1), _STATS_CHUNK):
        stats = await repo.term_stats(distinct[start:start + _STATS_CHUNK])
        doc_freq.update(stats.content_freq)
        total = stats.total_docs
    return Vocabulary(terms={w: tuple(ts) for w, ts in terms.items()},
                      doc_freq=doc_freq, total=total)


async def profiles(repo: Repository, memories: Sequence[Memory]) -> list[Profile]:
    words = [lexicon.words(m.content) for m in memories]
    vocab = await vocabulary(repo, words)
    return [Profile(m, vocab, w) for m, w in zip(memories, words, strict=True)]


def _current(memories: Iterable[Memory]) -> list[Memory]:
    # A corrected memory and its correction are alike by nature; merging them could keep the
    # wrong one, so superseded memories never take part.
    return [m for m in memories if m.superseded_by is None]


async def near_duplicates(
    repo: Repository, memories: Sequence[Memory], score_of: ScoreOf
) -> list[MergePair]:
    """The merges of a GC plan over `memories` (one namespace)."""
    current = _current(memories)
    if len(current) < 2:
        return []
    words = [lexicon.words(m.content) for m in current]
    edges = similar_pairs(current, words, await vocabulary(repo, words))
    return select(edges, {m.id: score_of(m) for e in edges for m in e[1:]})


async def merge_of(repo: Repository, memory: Memory, score_of: ScoreOf) -> MergePair | None:
    """The merge the namespace plan makes of `memory` into another, if any, computed from its
    chain of near-duplicates alone (found through the full-text index)."""
    if memory.superseded_by is not None:
        return None
    found: dict[str, Profile] = {}
    pending = [memory]
    edges: dict[tuple[str, str], tuple[float, Memory, Memory]] = {}
    while pending and len(found) < MAX_COMPONENT:
        fresh = await profiles(repo, pending)
        found.update((p.memory.id, p) for p in fresh)
        pending = []
        for p in fresh:
            if not p.signature:
                continue
            groups = [[p.probes[p.signature.index(t)] for t in key] for key in p.keys]
            others = [o for o in await repo.memories_matching_all(p.memory.namespace, groups)
                      if o.id != p.memory.id]
            known = [found[o.id] for o in others if o.id in found]
            new = await profiles(repo, [o for o in others if o.id not in found])
            for q in [*known, *new]:
                if not neighbours(p, q) or (value := cosine(p, q)) < NEAR_DUPLICATE_COSINE:
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
