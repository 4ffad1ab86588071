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
def _analyser() -> sqlite3.Connection:
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
        conn = _analyser()
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


# ------------------------------------------------------------------ term ids

TERM_ID_BYTES = 8


def _digest(term: str) -> bytes:
    import hashlib  # here: it loads OpenSSL, ~3 ms a process that only reads would pay

    return hashlib.blake2b(term.encode(), digest_size=TERM_ID_BYTES).digest()


def packed_ids(terms: Sequence[str]) -> bytes:
    """A term sequence as stored (`term_seq`): each term as a signed 64-bit BLAKE2b id,
    little-endian, in order; the same in every process and backend.

    Near-duplicate detection reads 100k memories' terms per GC plan; as integers they are one
    numpy array instead of two million Python strings (see consolidate.Vocabulary). Two terms
    collide with odds ~n²/2⁶⁵, ~3·10⁻⁸ for a million distinct terms, and a collision can only
    make two memories look lexically closer to the merge rule's candidate filter.
    """
    return b"".join(map(_digest, terms))


def packed_sequences(texts: Sequence[str]) -> list[bytes]:
    """`packed_ids` of each text's terms, from one pass of the analyser."""
    return [packed_ids(terms) for terms in term_sequences(texts)]


def content_ids(content: str) -> bytes:
    """`packed_sequences` of one text (SQLite's pma_term_seq, filling the column on
    migration)."""
    return packed_sequences([content])[0]
