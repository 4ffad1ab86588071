"""Near-duplicate detection with scikit-learn TF-IDF cosine, for GC merges.

scikit-learn costs about a second to import, so it is imported here, lazily, and only the
server and CLI call this (never the hook fast path). Exact duplicates never reach this point:
`add` recognises them by content hash.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pma_mcp.models import Memory, MergePair

NEAR_DUPLICATE_COSINE = 0.85
"""TF-IDF cosine (word unigrams and bigrams, sublinear tf) at or above which two memories of
one namespace are the same fact said twice. Chosen so rewordings like "The user prefers dark
mode." / "User prefers dark mode" merge while memories sharing a topic do not."""
MAX_WINDOW = 5_000
"""At most this many memories (the newest) are compared in one GC run."""


def near_duplicates(
    memories: Sequence[Memory],
    scores: Mapping[str, float],
    threshold: float = NEAR_DUPLICATE_COSINE,
) -> list[MergePair]:
    """Pairs to merge, most similar first; each memory takes part in at most one merge
    as the one that goes, and a memory that goes never absorbs another."""
    # A corrected memory and its correction are alike by nature; merging them could keep the
    # wrong one, so superseded memories never take part.
    current = [m for m in memories if m.superseded_by is None]
    window = sorted(current, key=lambda m: m.seq)[-MAX_WINDOW:]
    if len(window) < 2:
        return []
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectorizer = TfidfVectorizer(
        sublinear_tf=True, ngram_range=(1, 2), token_pattern=r"(?u)\b\w+\b"
    )
    try:
        matrix = vectorizer.fit_transform([m.content for m in window])
    except ValueError:  # every document empty after tokenising
        return []
    similarity = (matrix @ matrix.T).tocoo()
    candidates = sorted(
        (
            (float(v), int(i), int(j))
            for i, j, v in zip(similarity.row, similarity.col, similarity.data, strict=True)
            if i < j and v >= threshold
        ),
        reverse=True,
    )
    gone: set[str] = set()
    keepers: set[str] = set()
    pairs: list[MergePair] = []
    for value, i, j in candidates:
        a, b = window[i], window[j]
        if a.id in gone or b.id in gone:
            continue
        keep, drop = (a, b) if (scores[a.id], a.seq) >= (scores[b.id], b.seq) else (b, a)
        if drop.id in keepers:
            continue
        pairs.append(MergePair(gone=drop, keep=keep, similarity=min(value, 1.0)))
        gone.add(drop.id)
        keepers.add(keep.id)
    return pairs
