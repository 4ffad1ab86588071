"""Which memories GC merges: near-duplicates (TF-IDF cosine between lexical neighbours) and
restatements (content-term overlap), when their specifics agree.

Two current memories of one namespace are the same fact said twice when the cosine of their
TF-IDF vectors is at least NEAR_DUPLICATE_COSINE. The vectors are over the index's own terms
(the FTS tokenizer's Porter stems, in the order the tokenizer reads the content) and
adjacent-term pairs, with sublinear tf and smoothed idf from the namespace's own document
frequencies (`namespace_terms`): a pair's similarity depends on the pair and its namespace,
never on which other memories happen to be compared with it nor on another namespace's words.

Only lexical neighbours are compared, never all pairs: a memory's signature is its
SIGNATURE_TERMS rarest terms (document frequency ≤ MAX_SIGNATURE_DF), and two memories are
compared when their signatures share two terms (one, if a signature has a single term). Two
texts at cosine 0.85 share nearly all their weight, which sits on their rarest terms, so this
finds the merges all-pairs found (benchmarks/bench_gc.py compares both) in time linear in the
namespace. The namespace plan reads each memory's terms as the store keeps them, a sequence
of 64-bit term ids (analysis.packed_ids), and works on them as numpy arrays: no re-tokenising
and no strings (`Vocabulary.signatures`, `Vectors`). `inspect` finds one memory's neighbours
through the full-text index by the same rule and scores them with the same `Vectors`, whose
floats do not depend on the batch, so both agree (`merge_of`).

Restatements say one thing in other words ("…lags; point it at the primary at 02:00." /
"…lags, so point it at the primary at 02:00 UTC."), below the cosine: two memories are one
when their content terms (stopwords aside) overlap by RESTATEMENT_OVERLAP (Jaccard), found
by `ContentTerms`' own neighbour keys. Every merge, of either kind, also needs the two texts'
specifics to agree (core/restatement.py: numbers, names, negations, qualifiers, speaker), so
"…at 03:00." never merges into "…at 02:00.". `edge` is the whole rule; MergePair.overlap
records which kind a merge was.

Exact duplicates never reach this point: `add` recognises them by content hash.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pma_mcp.core import restatement
from pma_mcp.core.models import MergePair, Planned
from pma_mcp.core.text import analysis, lexicon

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

ScoreOf = Callable[[Planned], float]


class Vocabulary:
    """One namespace's document counts: each term's, and the memories it holds. Terms that
    may sign a memory are those the namespace counts at most MAX_SIGNATURE_DF times, ranked
    rarest first, ties by term id (analysis.packed_ids, unsigned): integers, so a namespace's
    115k terms are ranked by one numpy sort, with the same order in any vocabulary holding
    them (`inspect` ranks only the terms of the memories it looks at)."""

    def __init__(self, doc_freq: Mapping[str, int], total: int) -> None:
        self.doc_freq = doc_freq
        self.total = total
        self._by_id: _IdTable | None = None
        self._ranked: list[str] = []
        self._rank: dict[str, int] | None = None

    def signature(self, terms: Iterable[str]) -> tuple[str, ...]:
        """The SIGNATURE_TERMS rarest signing terms among `terms` (distinct)."""
        if self._rank is None:
            self.ids()
            self._rank = {t: i for i, t in enumerate(self._ranked) if i}
        ranks = sorted(filter(None, map(self._rank.get, terms)))
        return self.of_ranks(ranks[:SIGNATURE_TERMS])

    def of_ranks(self, ranks: Iterable[int]) -> tuple[str, ...]:
        """The terms of signing ranks (0: none)."""
        self.ids()
        return tuple(self._ranked[r] for r in ranks if r)

    def ids(self) -> _IdTable:
        """The terms by id, ranked (made once, on first use)."""
        if self._by_id is None:
            import numpy as np

            terms = list(self.doc_freq)
            ids = np.frombuffer(analysis.packed_ids(terms), dtype="<u8")
            counts = np.fromiter(self.doc_freq.values(), dtype=np.int64, count=len(terms))
            signing = np.flatnonzero((counts >= 1) & (counts <= MAX_SIGNATURE_DF))
            order = signing[np.lexsort((ids[signing], counts[signing]))]
            ranks = np.zeros(len(terms), dtype=np.int64)
            ranks[order] = np.arange(1, len(order) + 1)
            self._ranked = ["", *(terms[i] for i in order.tolist())]  # 0 is never a rank
            self._by_id = _IdTable(ids, ranks, counts)
        return self._by_id

    def signatures(self, sequences: Sequence[bytes]) -> tuple[list[list[int]], Any]:
        """The groups of memories sharing a neighbour key (`neighbour_keys`; indexes into
        `sequences`, for keys shared at all) among many stored term sequences, and each one's
        signature ranks (a row of SIGNATURE_TERMS ranks, 0 for none; `of_ranks` names
        them). The same rule as `signature`, vectorised: a namespace's every memory."""
        import numpy as np

        n = len(sequences)
        lengths = np.fromiter(map(len, sequences), dtype=np.int64, count=n)
        ids = np.frombuffer(b"".join(sequences), dtype="<i8")
        ranks = self.ids().lookup(ids, _IdTable.RANK)
        owner = np.repeat(np.arange(n, dtype=np.int64), lengths // analysis.TERM_ID_BYTES)
        m = len(self._ranked)
        signing = ranks > 0
        # Distinct (memory, rank) pairs, by memory and rarest first.
        pairs = _distinct(owner[signing] * m + ranks[signing])
        owner, ranks = pairs // m, pairs % m
        position = np.arange(len(owner)) - np.searchsorted(owner, owner, side="left")
        top = position < SIGNATURE_TERMS
        table = np.zeros((n, SIGNATURE_TERMS), dtype=np.int64)
        table[owner[top], position[top]] = ranks[top]
        # Neighbour keys as integers a·M + b (a < b, b = 0 for a one-term signature).
        count = (table > 0).sum(axis=1)
        first, second, third = table[:, 0], table[:, 1], table[:, 2]
        parts = [(first * m, count == 1), (first * m + second, count >= 2),
                 (first * m + third, count == 3), (second * m + third, count == 3)]
        keys = np.concatenate([k[w] for k, w in parts])
        members = np.concatenate([np.flatnonzero(w) for _, w in parts])
        return _shared(keys, members), table


def _shared(keys: Any, members: Any) -> list[list[int]]:
    """The groups of `members` (an integer array beside `keys`) holding one key, for keys
    held more than once, in key order."""
    import numpy as np

    order = np.argsort(keys, kind="stable")
    keys, members = keys[order], members[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    sizes = np.diff(np.r_[starts, len(keys)])
    return [members[a:a + size].tolist() for a, size in zip(
        starts[sizes > 1].tolist(), sizes[sizes > 1].tolist(), strict=True)]


class _IdTable:
    """One namespace's terms by id (analysis.packed_ids): columns RANK (signing rank, 0 for
    none) and DOC_FREQ, found for millions of ids at once.

    Ids are uniform 64-bit hashes, so their top bits spread them evenly over buckets (at least
    two per term); the terms sit sorted by unsigned id, and each bucket's run of them starts
    at `starts[bucket]`. A look-up compares each id with its bucket's first term, then the
    few ids whose bucket holds more with the next, and so on: ~0.05 s for 2.5M ids at 115k
    terms, where sorting the ids (or binary search) costs ~0.25 s."""

    RANK = 0
    DOC_FREQ = 1
    INDEX = 2
    """A term's place among the table's terms, from 1 (`column(INDEX)[i - 1]` is i)."""

    def __init__(self, ids: Any, ranks: Any, counts: Any) -> None:
        """`ids` unsigned, with each term's rank and document count."""
        import numpy as np

        order = np.argsort(ids, kind="stable")
        self._known = ids[order]
        self._columns = (ranks[order], counts[order], np.arange(1, len(ids) + 1))
        bits = max(1, (2 * len(ids)).bit_length())
        self._shift = np.uint64(64 - bits)
        buckets = (self._known >> self._shift).astype(np.int64)
        self._sizes = np.bincount(buckets, minlength=1 << bits)
        self._starts = np.cumsum(self._sizes) - self._sizes

    def column(self, column: int) -> Any:
        """`column` for every term, in INDEX order."""
        return self._columns[column]

    def lookup(self, ids: Any, column: int) -> Any:
        """`column` for each of `ids` (int64 term ids; 0 where the namespace lacks one)."""
        import numpy as np

        if not len(self._known) or not len(ids):
            return np.zeros(len(ids), dtype=np.int64)
        unsigned = ids.view(np.uint64)
        bucket = (unsigned >> self._shift).astype(np.int64)
        at, held = self._starts[bucket], self._sizes[bucket]
        values = self._columns[column]
        candidate = np.minimum(at, len(self._known) - 1)
        hit = (held > 0) & (self._known[candidate] == unsigned)
        found = np.where(hit, values[candidate], 0)
        pending = np.flatnonzero(~hit & (held > 1))
        step = 1
        while len(pending):
            candidate = at[pending] + step
            hit = self._known[candidate] == unsigned[pending]
            found[pending[hit]] = values[candidate[hit]]
            pending = pending[~hit]
            step += 1
            pending = pending[held[pending] > step]
        return found


def _distinct(values: Any) -> Any:
    """Sorted distinct values of an integer array (numpy 2's `unique` hashes: ~15x slower
    than sorting here)."""
    import numpy as np

    ordered = np.sort(values)
    return ordered[np.r_[True, ordered[1:] != ordered[:-1]]] if len(ordered) else ordered


def _smoothed_idf(total: int, doc_freq: int) -> float:
    """sklearn's smoothed idf: ln((1 + N) / (1 + df)) + 1."""
    return math.log((1 + total) / (1 + doc_freq)) + 1.0


def vector_terms(vector: str) -> list[str]:
    """The distinct terms of a stored term vector (" term:tf term:tf", see bm25.encode);
    tokenizer terms never hold a space or a colon."""
    return vector.replace(":", " ").split()[::2]


def neighbour_keys(signature: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    """Two memories are neighbours when they share one of these: the pairs of their signature
    terms (the term itself for a one-term signature)."""
    if len(signature) == 1:
        return (signature,)
    return tuple(tuple(sorted(pair)) for pair in itertools.combinations(signature, 2))


class Profile:
    """One memory as the merge rule sees it: its signature and neighbour keys."""

    def __init__(self, memory: Planned, signature: tuple[str, ...]) -> None:
        self.memory = memory
        self.signature = signature
        self.keys = neighbour_keys(signature)


def neighbours(a: Profile, b: Profile) -> bool:
    """Whether the rule compares `a` with `b` at all."""
    return not set(a.keys).isdisjoint(b.keys)


_PAIR_MIX = (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F)
"""Odd multipliers making an adjacent-term pair's feature key from its two term ids."""


class Vectors:
    """TF-IDF vectors of stored term sequences (analysis.packed_ids), one row each: sublinear
    tf × idf over terms and adjacent-term pairs (a pair weighs as its rarer term: its own
    document count is not kept), L2-normalised.

    Built for a whole namespace's candidates at once with numpy. Each row holds its features
    sorted by key, and every sum (a row's norm, a pair's dot product) adds in that order, so
    a row and a cosine are the same floats in any batch: `inspect`'s handful of memories and
    a plan's ten thousand agree (`tests/test_consolidate_ids.py`)."""

    def __init__(self, sequences: Sequence[bytes], vocabulary: Vocabulary) -> None:
        import numpy as np

        rows = len(sequences)
        lengths = np.fromiter(map(len, sequences), dtype=np.int64, count=rows)
        ids = np.frombuffer(b"".join(sequences), dtype="<i8")
        owner = np.repeat(np.arange(rows, dtype=np.int64), lengths // analysis.TERM_ID_BYTES)
        idf = _per_value(vocabulary.ids().lookup(ids, _IdTable.DOC_FREQ),
                         lambda df: _smoothed_idf(vocabulary.total, df))
        adjacent = owner[1:] == owner[:-1]
        with np.errstate(over="ignore"):
            pair = (ids[:-1][adjacent].view(np.uint64) * np.uint64(_PAIR_MIX[0])
                    + ids[1:][adjacent].view(np.uint64) * np.uint64(_PAIR_MIX[1])
                    ).view(np.int64)
        owners = np.concatenate([owner, owner[:-1][adjacent]])
        keys = np.concatenate([ids, pair])
        weights = np.concatenate([idf, np.maximum(idf[:-1][adjacent], idf[1:][adjacent])])
        order = np.lexsort((keys, owners))
        owners, keys, weights = owners[order], keys[order], weights[order]
        first = np.flatnonzero(np.r_[True, (owners[1:] != owners[:-1])
                                     | (keys[1:] != keys[:-1])])[:len(keys)]
        counts = np.diff(np.r_[first, len(keys)])
        owners, self.keys = owners[first], keys[first]
        weights = _per_value(counts, lambda n: 1.0 + math.log(n)) * weights[first]
        self.starts = np.searchsorted(owners, np.arange(rows + 1))
        norms = _row_sums(weights * weights, self.starts)
        norms = np.where(norms > 0, np.sqrt(norms), 1.0)
        self.weights = weights / norms[owners]

    def cosines(self, left: Sequence[int], right: Sequence[int]) -> list[float]:
        """cos(row left[k], row right[k]) for every k, at most 1."""
        import numpy as np

        values: list[float] = np.minimum(
            _pair_sums(self.keys, self.weights, self.starts, left, right), 1.0).tolist()
        return values


def _pair_sums(keys: Any, values: Any, starts: Any, left: Sequence[int],
               right: Sequence[int]) -> Any:
    """For rows of (key, value) entries (each row's keys distinct and sorted, rows
    delimited by `starts` as a CSR matrix's indptr): the sum over the keys rows left[k] and
    right[k] share of their values' products, added in key order, for every k."""
    import numpy as np
    from scipy import sparse  # type: ignore[import-untyped]

    if not left:
        return np.zeros(0, dtype=np.float64)
    columns = np.searchsorted(_distinct(keys), keys)
    matrix = sparse.csr_array((values, columns, starts),
                              shape=(len(starts) - 1, int(columns.max(initial=0)) + 1))
    products = matrix[np.asarray(left)].multiply(matrix[np.asarray(right)]).tocsr()
    products.sort_indices()  # summed in key order (the columns follow the keys)
    return _row_sums(products.data, products.indptr)


RESTATEMENT_OVERLAP = (4, 5)
"""Jaccard overlap of content terms, as a fraction, at or above which two memories with equal
specifics are one statement said twice (`restated`). Measured on benchmarks/bench_merge.py's
pairs: one content word added to five, or changed in ten, still merges; one changed in
seven does not."""
MIN_RESTATEMENT_TERMS = 3
MAX_RESTATEMENT_TERMS = 40
"""Restatements are short statements; longer memories are said twice only as near-duplicates
(the bound keeps each memory's neighbour keys under 50)."""


@functools.cache
def _stopword_ids() -> Any:
    """Term ids of the stopwords' stems (lexicon.STOPWORDS as the index stems them)."""
    import numpy as np

    stems = sorted({t for terms in analysis.term_sequences(sorted(lexicon.STOPWORDS))
                    for t in terms})
    return np.sort(np.frombuffer(analysis.packed_ids(stems), dtype="<i8"))


class ContentTerms:
    """Each stored term sequence's content terms: its distinct term ids minus the stopwords'
    (numbers and names stay; restatement.Specifics compares those exactly), one row each.

    Two memories are compared by the restatement rule when their `neighbour_keys` meet:
    each memory's content terms ranked rarest first (Vocabulary's order, the same in every
    vocabulary holding them), its prefix of n − ⌈t·n⌉ + 2 terms (t = RESTATEMENT_OVERLAP),
    and every pair of signing terms in it. Two sets at Jaccard ≥ t share at least ⌈t·n⌉ terms, so
    both prefixes hold the two rarest shared ones: no restatement is missed but for terms
    in more than MAX_SIGNATURE_DF memories, which sign nothing. Rare-term pairs make small
    groups, so the cost follows the namespace's size, not its square."""

    def __init__(self, sequences: Sequence[bytes], vocabulary: Vocabulary) -> None:
        """Terms are keyed by their INDEX in the vocabulary's table: small integers, so each
        row's distinct terms come from one sort (the vocabulary must hold every term)."""
        import numpy as np

        rows = len(sequences)
        lengths = np.fromiter(map(len, sequences), dtype=np.int64, count=rows)
        table = vocabulary.ids()
        index = table.lookup(np.frombuffer(b"".join(sequences), dtype="<i8"), _IdTable.INDEX)
        owner = np.repeat(np.arange(rows, dtype=np.int64), lengths // analysis.TERM_ID_BYTES)
        width = len(table.column(_IdTable.INDEX)) + 1
        content = np.ones(width, dtype=bool)
        content[table.lookup(_stopword_ids(), _IdTable.INDEX)] = False
        content[0] = False  # a term the vocabulary lacks
        entries = _distinct(owner[content[index]] * width + index[content[index]])
        self.owner, self.ids = entries // width, entries % width
        self.ranks = np.r_[0, table.column(_IdTable.RANK)][self.ids]
        self.starts = np.searchsorted(self.owner, np.arange(rows + 1))
        self.counts = np.diff(self.starts)
        self._vocabulary = vocabulary

    def eligible(self, row: int) -> bool:
        return MIN_RESTATEMENT_TERMS <= int(self.counts[row]) <= MAX_RESTATEMENT_TERMS

    def neighbour_keys(self) -> tuple[Any, Any]:
        """(row, key) arrays: every row's neighbour keys as integers a·M + b (ranks a < b)."""
        import numpy as np

        ranks = self.ranks
        m = len(self._vocabulary._ranked)
        counts = self.counts[self.owner]
        signing = (ranks > 0) & (counts >= MIN_RESTATEMENT_TERMS) & (
            counts <= MAX_RESTATEMENT_TERMS)
        owner, ranks = self.owner[signing], ranks[signing]
        order = np.lexsort((ranks, owner))
        owner, ranks = owner[order], ranks[order]
        position = np.arange(len(owner)) - np.searchsorted(owner, owner, side="left")
        n = self.counts[owner]
        top, bottom = RESTATEMENT_OVERLAP
        prefix = n - (top * n + bottom - 1) // bottom + 2
        owner, ranks = owner[position < prefix], ranks[position < prefix]
        rows, keys = [], []
        for d in range(1, int(prefix.max(initial=0))):
            same = owner[d:] == owner[:-d]
            rows.append(owner[d:][same])
            keys.append(ranks[:-d][same] * m + ranks[d:][same])
        if not rows:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return np.concatenate(rows), np.concatenate(keys)

    def key_terms(self, key: int) -> tuple[str, ...]:
        """The two terms of a neighbour key."""
        return self._vocabulary.of_ranks(divmod(key, len(self._vocabulary._ranked)))

    def groups(self) -> list[list[int]]:
        """The groups of rows sharing a neighbour key."""
        rows, keys = self.neighbour_keys()
        return _shared(keys, rows)

    def overlaps(self, left: Sequence[int], right: Sequence[int]) -> list[float | None]:
        """The Jaccard overlap of rows left[k] and right[k] if they are restatements by it
        (≥ RESTATEMENT_OVERLAP, both of MIN..MAX_RESTATEMENT_TERMS terms), else None."""
        import numpy as np

        shared = _pair_sums(self.ids, np.ones(len(self.ids)), self.starts, left, right)
        top, bottom = RESTATEMENT_OVERLAP
        out: list[float | None] = []
        for i, j, o in zip(left, right, np.rint(shared).astype(np.int64).tolist(),
                           strict=True):
            union = int(self.counts[i] + self.counts[j]) - o
            restated = self.eligible(i) and self.eligible(j) and bottom * o >= top * union
            out.append(o / union if restated else None)
        return out


Edge = tuple[float, Planned, Planned, float | None]
"""A pair that merges: (cosine, a, b, content-term overlap if a restatement, else None)."""


@functools.lru_cache(maxsize=4096)
def _specifics(content: str) -> restatement.Specifics:
    return restatement.specifics(content)


def edge(a: Planned, b: Planned, cosine: float, neighbours: bool,
         overlap: float | None) -> Edge | None:
    """Whether `a` and `b` merge: their specifics agree, and they are near-duplicates
    (lexical neighbours at cosine ≥ NEAR_DUPLICATE_COSINE) or restatements (`overlap`, see
    ContentTerms.overlaps)."""
    if not (neighbours and cosine >= NEAR_DUPLICATE_COSINE) and overlap is None:
        return None
    if not _specifics(a.content).agree(_specifics(b.content)):
        return None
    return (cosine, a, b, None if neighbours and cosine >= NEAR_DUPLICATE_COSINE else overlap)


def _per_value(values: Any, of: Callable[[int], float]) -> Any:
    """`of(v)` for each of an integer array's values, computed once per distinct value in
    Python (math's log, not numpy's: the same floats everywhere)."""
    import numpy as np

    distinct = _distinct(values)
    table = np.array([of(v) for v in distinct.tolist()], dtype=np.float64)
    return table[np.searchsorted(distinct, values)]


def _row_sums(values: Any, starts: Any) -> Any:
    """Sum of each row's values (rows delimited as a CSR matrix's indptr), 0 for an empty
    row; each row added left to right by the same reduction, wherever it sits."""
    import numpy as np

    sums = np.zeros(len(starts) - 1, dtype=np.float64)
    filled = np.flatnonzero(starts[1:] > starts[:-1])
    if len(filled):
        sums[filled] = np.add.reduceat(values, starts[:-1][filled])
    return sums


def select(edges: Iterable[Edge], score_of: Mapping[str, float]) -> list[MergePair]:
    """Merges from similar pairs, most similar (by cosine) first; each memory goes at most
    once, and a memory that goes never absorbs another (nor one that absorbed another
    goes)."""
    ordered: list[Edge] = sorted(
        ((value, a, b, o) if a.seq < b.seq else (value, b, a, o) for value, a, b, o in edges),
        key=lambda e: (e[0], e[1].seq, e[2].seq), reverse=True,
    )
    gone: set[str] = set()
    keepers: set[str] = set()
    pairs: list[MergePair] = []
    for value, a, b, overlap in ordered:
        if a.id in gone or b.id in gone:
            continue
        better = (score_of[a.id], a.seq) >= (score_of[b.id], b.seq)
        keep, drop = (a, b) if better else (b, a)
        if drop.id in keepers:
            continue
        pairs.append(MergePair(gone=drop, keep=keep, similarity=value, overlap=overlap))
        gone.add(drop.id)
        keepers.add(keep.id)
    return pairs


def similar_pairs(
    groups: Iterable[Sequence[int]],
    profiles: Mapping[int, Profile],
    vectors: Vectors,
    row: Mapping[int, int],
    restating: Iterable[Sequence[int]] = (),
    terms: ContentTerms | None = None,
) -> list[Edge]:
    """Every pair that merges (`edge`) within a neighbour group (`groups`) or a restatement
    group (`restating`, rows of `terms`), each pair once (`row`: each profile's row in
    `vectors`; `profiles` and `terms` indexed alike)."""
    near = {(i, j) if i < j else (j, i)
            for members in groups for i, j in itertools.combinations(members, 2)}
    said = {(i, j) if i < j else (j, i)
            for members in restating for i, j in itertools.combinations(members, 2)}
    pairs = sorted(near | said)
    values = vectors.cosines([row[i] for i, _ in pairs], [row[j] for _, j in pairs])
    restated = [p for p in pairs if p in said]
    overlaps = dict(zip(restated, terms.overlaps([i for i, _ in restated],
                                                 [j for _, j in restated]), strict=True)
                    ) if terms is not None and restated else {}
    found = (edge(profiles[i].memory, profiles[j].memory, value, (i, j) in near,
                  overlaps.get((i, j)))
             for (i, j), value in zip(pairs, values, strict=True))
    return [e for e in found if e is not None]
