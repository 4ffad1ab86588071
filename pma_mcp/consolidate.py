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
from dataclasses import dataclass

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
MAX_COMPONENT = 64
"""At most this many memories are followed through chains of near-duplicates by `inspect`."""

ScoreOf = Callable[[Memory], float]


@dataclass(frozen=True)
class Vocabulary:
    """How the store reads words: each word's index terms and each term's document count."""

    terms: Mapping[str, tuple[str, ...]]
    doc_freq: Mapping[str, int]
    total: int

    def idf(self, term: str) -> float:
        return math.log((1 + self.total) / (1 + self.doc_freq.get(term, 0))) + 1.0


@dataclass(frozen=True)
class Profile:
    """One memory as the merge rule sees it."""

    memory: Memory
    vector: Mapping[str, float]
    signature: tuple[str, ...]
    probes: tuple[str, ...]
    """A word of the memory's text for each signature term (what the FTS index matches)."""

    def neighbour_keys(self) -> set[tuple[str, ...]]:
        if len(self.signature) == 1:
            return {self.signature}
        return {tuple(sorted(pair)) for pair in itertools.combinations(self.signature, 2)}


def profile(memory: Memory, vocabulary: Vocabulary) -> Profile:
    """Vector and signature of one memory."""
    sequence: list[tuple[str, str]] = [
        (term, word)
        for word in lexicon.words(memory.content)
        for term in vocabulary.terms.get(word, ())
    ]
    terms = [t for t, _ in sequence]
    weights: dict[str, float] = {}
    for term, n in Counter(terms).items():
        weights[term] = (1.0 + math.log(n)) * vocabulary.idf(term)
    for (a, b), n in Counter(itertools.pairwise(terms)).items():
        weights[f"{a} {b}"] = (1.0 + math.log(n)) * max(vocabulary.idf(a), vocabulary.idf(b))
    norm = math.sqrt(sum(w * w for w in weights.values())) or 1.0
    word_of = dict(reversed(sequence))  # each term with the first word that gave it
    rare = sorted(
        (vocabulary.doc_freq.get(t, 0), t) for t in word_of
        if vocabulary.doc_freq.get(t, 0) <= MAX_SIGNATURE_DF
    )[:SIGNATURE_TERMS]
    signature = tuple(t for _, t in rare)
    return Profile(
        memory=memory,
        vector={k: w / norm for k, w in weights.items()},
        signature=signature,
        probes=tuple(word_of[t] for t in signature),
    )


def neighbours(a: Profile, b: Profile) -> bool:
    """Whether the rule compares `a` with `b` at all."""
    return bool(a.neighbour_keys() & b.neighbour_keys())


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
    profiles: Sequence[Profile], threshold: float = NEAR_DUPLICATE_COSINE
) -> list[tuple[float, Memory, Memory]]:
    """Every neighbouring pair at or above `threshold`, found through shared signature keys."""
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, p in enumerate(profiles):
        for key in p.neighbour_keys():
            groups.setdefault(key, []).append(i)
    seen: set[tuple[int, int]] = set()
    edges = []
    for members in groups.values():
        for i, j in itertools.combinations(members, 2):
            if (i, j) in seen:
                continue
            seen.add((i, j))
            value = cosine(profiles[i], profiles[j])
            if value >= threshold:
                edges.append((value, profiles[i].memory, profiles[j].memory))
    return edges


# ------------------------------------------------------------------ with the store


async def vocabulary(repo: Repository, texts: Iterable[str]) -> Vocabulary:
    """The index terms of every word of `texts` and their document frequencies."""
    words = sorted({w for text in texts for w in lexicon.words(text)})
    terms: dict[str, list[str]] = {}
    for word, term in await repo.analyze_terms(words):
        terms.setdefault(word, []).append(term)
    distinct = sorted({t for ts in terms.values() for t in ts})
    stats = await repo.term_stats(distinct)
    return Vocabulary(terms={w: tuple(ts) for w, ts in terms.items()},
                      doc_freq=stats.content_freq, total=stats.total_docs)


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
    vocab = await vocabulary(repo, (m.content for m in current))
    profiles = [profile(m, vocab) for m in current]
    edges = similar_pairs(profiles)
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
        vocab = await vocabulary(repo, (m.content for m in pending))
        fresh = [profile(m, vocab) for m in pending if m.id not in found]
        pending = []
        for p in fresh:
            found[p.memory.id] = p
        for p in fresh:
            if not p.signature:
                continue
            keys = [[p.probes[p.signature.index(t)] for t in key] for key in p.neighbour_keys()]
            others = [o for o in await repo.memories_matching_all(p.memory.namespace, keys)
                      if o.id != p.memory.id]
            if not others:
                continue
            other_vocab = await vocabulary(repo, (o.content for o in others))
            for o in others:
                q = found.get(o.id) or profile(o, other_vocab)
                if not neighbours(p, q):
                    continue
                value = cosine(p, q)
                if value < NEAR_DUPLICATE_COSINE:
                    continue
                edges[min(p.memory.id, o.id), max(p.memory.id, o.id)] = (value, p.memory, o)
                if o.id not in found and all(o.id != m.id for m in pending):
                    pending.append(o)
    members = {m.id: m for e in edges.values() for m in e[1:]}
    for pair in select(edges.values(), {i: score_of(m) for i, m in members.items()}):
        if pair.gone.id == memory.id:
            return pair
    return None
