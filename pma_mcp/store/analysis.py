"""Text → index terms, the same for every backend.

Terms are what SQLite's FTS5 `porter unicode61 remove_diacritics 2` tokenizer makes of a
text. Both stores compute term vectors and query stems here, so a memory gets the same terms
(and BM25 the same scores) whichever backend holds it. The tokenizer runs in a private
in-memory SQLite database of this process (a scratch FTS5 table read back through
fts5vocab): the exact stems the SQLite store's full-text index uses, whatever its version.
Calls take microseconds and never touch a store, so they run inline.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections.abc import Sequence

TOKENIZER = "porter unicode61 remove_diacritics 2"

_lock = threading.Lock()


@functools.cache
def _analyzer() -> sqlite3.Connection:
    """The process's scratch database (made on first use, under `_lock`)."""
    conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    conn.execute(f"CREATE VIRTUAL TABLE scratch USING fts5(q, tokenize = '{TOKENIZER}')")
    conn.execute("CREATE VIRTUAL TABLE scratch_vocab USING fts5vocab(scratch, instance)")
    return conn


def tokens(texts: Sequence[str]) -> list[tuple[str, int]]:
    """(term, text number) for every token of `texts`, in order."""
    if not texts:
        return []
    with _lock:
        conn = _analyzer()
        conn.execute("BEGIN")
        try:
            conn.executemany("INSERT INTO scratch (rowid, q) VALUES (?, ?)",
                             list(enumerate(texts)))
            rows = conn.execute(
                "SELECT term, doc FROM scratch_vocab ORDER BY doc, offset").fetchall()
        finally:
            conn.execute("ROLLBACK")
    return [(str(term), int(doc)) for term, doc in rows]


def term_sequences(texts: Sequence[str]) -> list[list[str]]:
    """Each text's terms in order."""
    out: list[list[str]] = [[] for _ in texts]
    for term, doc in tokens(texts):
        out[doc].append(term)
    return out


def stems(words: Sequence[str]) -> list[tuple[str, str]]:
    """(word, term) pairs, in word order: each word as the index stems it."""
    return [(words[doc], term) for term, doc in tokens(words)]
