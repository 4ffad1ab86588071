"""The near-duplicate rule over stored term ids gives what it gives over the terms.

A GC plan reads every memory's terms as 64-bit ids (analysis.packed_ids) and looks them up in
numpy; `inspect` works from the terms themselves. These pin that both see the same ranks,
signatures and TF-IDF weights, on vocabularies large enough for buckets holding several terms.
"""

from __future__ import annotations

import random

import numpy as np

from pma_mcp import consolidate
from pma_mcp.store import analysis

SYLLABLES = ["ka", "lo", "mi", "ne", "qu", "ru", "sa", "te", "vo", "wa", "xe", "zo"]


def vocabulary(size: int, seed: int) -> consolidate.Vocabulary:
    rng = random.Random(seed)
    terms: set[str] = set()
    while len(terms) < size:
        terms.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 5))))
    counts = {t: rng.choice([1, 1, 2, 3, 7, 40, 999, 1000, 1001, 5000]) for t in terms}
    return consolidate.Vocabulary(counts, total=6000)


def test_id_lookup_is_the_term_lookup_for_known_and_unknown_ids() -> None:
    vocab = vocabulary(20_000, seed=1)
    terms = list(vocab.doc_freq)
    rng = random.Random(2)
    asked = [rng.choice(terms) for _ in range(50_000)] + ["absent", "zzzz", "q"]
    ids = np.frombuffer(analysis.packed_ids(asked), dtype="<i8")
    table = vocab._ids()
    assert table._sizes.max() >= 3  # some buckets hold several terms: every round is used
    ranks = table.lookup(ids, consolidate._IdTable.RANK).tolist()
    counts = table.lookup(ids, consolidate._IdTable.DOC_FREQ).tolist()
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


def test_tf_idf_over_ids_is_the_same_floats_as_over_terms() -> None:
    vocab = vocabulary(3_000, seed=5)
    terms = list(vocab.doc_freq)
    rng = random.Random(6)
    for _ in range(200):
        text = [rng.choice(terms[:200]) for _ in range(rng.randint(1, 40))]
        packed = analysis.packed_ids(text)
        by_id = consolidate._tf_idf(consolidate._term_ids(packed), vocab.idf_of([packed]))
        by_term = consolidate._tf_idf(text, {t: vocab.idf(t) for t in text})
        assert list(by_id.values()) == list(by_term.values())  # exactly, in the same order
