"""The near-duplicate rule over stored term ids gives what it gives over the terms.

A GC plan reads every memory's terms as 64-bit ids (analysis.packed_ids) and looks them up in
numpy; `inspect` works from the terms themselves. These pin that both see the same ranks,
signatures and TF-IDF weights, on vocabularies large enough for buckets holding several terms.
"""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter

import numpy as np
import pytest

from pma_mcp.core import consolidation
from pma_mcp.core.text import analysis

SYLLABLES = ["ka", "lo", "mi", "ne", "qu", "ru", "sa", "te", "vo", "wa", "xe", "zo"]


def vocabulary(size: int, seed: int) -> consolidation.Vocabulary:
    rng = random.Random(seed)
    terms: set[str] = set()
    while len(terms) < size:
        terms.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 5))))
    counts = {t: rng.choice([1, 1, 2, 3, 7, 40, 999, 1000, 1001, 5000]) for t in terms}
    return consolidation.Vocabulary(counts, total=6000)


def test_id_lookup_is_the_term_lookup_for_known_and_unknown_ids() -> None:
    vocab = vocabulary(20_000, seed=1)
    terms = list(vocab.doc_freq)
    rng = random.Random(2)
    asked = [rng.choice(terms) for _ in range(50_000)] + ["absent", "zzzz", "q"]
    ids = np.frombuffer(analysis.packed_ids(asked), dtype="<i8")
    table = vocab.ids()
    assert table._sizes.max() >= 3  # some buckets hold several terms: every round is used
    ranks = table.lookup(ids, consolidation._IdTable.RANK).tolist()
    counts = table.lookup(ids, consolidation._IdTable.DOC_FREQ).tolist()
    vocab.signature(())  # builds the term -> rank map the string rule uses
    assert vocab._rank is not None
    assert ranks == [vocab._rank.get(t, 0) for t in asked]
    assert counts == [vocab.doc_freq.get(t, 0) for t in asked]


def test_signatures_from_ids_are_the_signatures_from_terms() -> None:
    vocab = vocabulary(5_000, seed=3)
    terms = list(vocab.doc_freq)
    rng = random.Random(4)
    texts = [[rng.choice(terms) for _ in range(rng.randint(0, 30))] for _ in range(2_000)]
    texts += [texts[7][:], texts[7][:-1], texts[9] + texts[9]]  # repeats and near-copies
    _, table = vocab.signatures([analysis.packed_ids(t) for t in texts])
    for text, row in zip(texts, table.tolist(), strict=True):
        assert vocab.of_ranks(row) == vocab.signature(dict.fromkeys(text))


def reference_vector(text: list[str], vocab: consolidation.Vocabulary) -> dict[object, float]:
    """The rule written out plainly: sublinear tf × smoothed idf over terms and adjacent
    pairs (a pair weighing as its rarer term), L2-normalised."""
    def idf(t: str) -> float:
        return math.log((1 + vocab.total) / (1 + vocab.doc_freq.get(t, 0))) + 1.0

    weights: dict[object, float] = {
        t: (1 + math.log(n)) * idf(t) for t, n in Counter(text).items()}
    for (a, b), n in Counter(itertools.pairwise(text)).items():
        weights[a, b] = (1 + math.log(n)) * max(idf(a), idf(b))
    norm = math.sqrt(sum(w * w for w in weights.values())) or 1.0
    return {k: w / norm for k, w in weights.items()}


def test_cosines_are_the_rule_and_the_same_floats_in_any_batch() -> None:
    vocab = vocabulary(3_000, seed=5)
    terms = list(vocab.doc_freq)
    rng = random.Random(6)
    texts = [[rng.choice(terms[:300]) for _ in range(rng.randint(0, 40))] for _ in range(300)]
    texts += [texts[3] + ["extra"], texts[3][:], []]
    packed = [analysis.packed_ids(t) for t in texts]
    whole = consolidation.Vectors(packed, vocab)
    pairs = [(i, j) for i in range(len(texts)) for j in range(i + 1, len(texts))
             if rng.random() < 0.02] + [(3, 300), (3, 301), (0, 302)]
    values = whole.cosines([i for i, _ in pairs], [j for _, j in pairs])
    for (i, j), value in zip(pairs, values, strict=True):
        a, b = reference_vector(texts[i], vocab), reference_vector(texts[j], vocab)
        assert value == pytest.approx(min(sum(w * b.get(k, 0.0) for k, w in a.items()), 1.0),
                                      abs=1e-12)
        alone = consolidation.Vectors([packed[i], packed[j]], vocab).cosines([0], [1])
        assert alone == [value]  # exactly: inspect compares a few, the plan thousands
    assert values[-3] >= consolidation.NEAR_DUPLICATE_COSINE  # one word added
    assert values[-2] == pytest.approx(1.0, abs=1e-12) and values[-1] == 0.0  # SIMD sums
