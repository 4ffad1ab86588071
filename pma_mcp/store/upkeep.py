"""Inside one write transaction: what keeps a memory's vectors, statistics, labels, session
neighbours' context and lineage in step with its row, on every backend.

A memory's own text is analysed here (analysis.tokens) into a content vector, a label vector
and its content's term sequence; its context vector is the sum of the content vectors of up to
CONTEXT_RADIUS memories of its session on each side. Per namespace, `namespace_terms` counts
the memories holding each term of their own text and `namespace_stats` their number and total
length; `term_df` counts content terms store-wide. The backend's full-text index hears of each
change through Tx.index / Tx.unindex.

`term_df` is shared by every namespace, so its changes are summed in `Work` and written once,
in term order, when the transaction's work is done: two writers of different namespaces then
lock its rows in the same order and cannot deadlock on them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from collections.abc import Set as AbstractSet
from typing import TypeVar

from pma_mcp.core.models import Memory, MemoryType
from pma_mcp.core.text import analysis, bm25
from pma_mcp.core.text.relevance import CONTEXT_RADIUS
from pma_mcp.store import rows
from pma_mcp.store.seam import Backend, Tx

T = TypeVar("T")


class Work:
    """One write transaction as the store conducts it: the backend's Tx and the store-wide
    term counts it will write at `flush`."""

    def __init__(self, tx: Tx) -> None:
        self.tx = tx
        self._term_df: Counter[str] = Counter()

    def count_terms(self, content_terms: set[str], delta: int) -> None:
        """Add `delta` to the store-wide document frequency of each content term (what bounds
        a query's cost: the candidate search walks a term's postings in every namespace)."""
        for term in content_terms:
            self._term_df[term] += delta

    async def flush(self) -> None:
        changed = sorted(t for t, n in self._term_df.items() if n)
        if changed:
            await self.tx.executemany(
                "INSERT INTO term_df (term, df) VALUES (?, ?) "
                "ON CONFLICT (term) DO UPDATE SET df = term_df.df + excluded.df",
                [(t, self._term_df[t]) for t in changed])
            fewer = [t for t in changed if self._term_df[t] < 0]
            for chunk in rows.chunks(fewer):
                await self.tx.execute("DELETE FROM term_df WHERE df <= 0 AND term IN ?", chunk)
        self._term_df.clear()


async def run(
    backend: Backend, namespaces: Iterable[str], fn: Callable[[Work], Awaitable[T]]
) -> T:
    """`fn` in one write transaction of `backend` holding the namespaces' locks."""
    async def body(tx: Tx) -> T:
        work = Work(tx)
        result = await fn(work)
        await work.flush()
        return result

    return await backend.write(namespaces, body)


async def by_seq(tx: Tx, seq: int) -> Memory | None:
    row = await tx.fetchrow(f"{rows.SELECT} WHERE seq = ?", seq)
    return rows.memory(row) if row is not None else None


async def write_labels(tx: Tx, seq: int, tags: Iterable[str], entities: Iterable[str]) -> None:
    labels = [(seq, "tag", t) for t in tags] + [(seq, "entity", e) for e in entities]
    if labels:
        await tx.executemany("INSERT INTO memory_labels (seq, kind, value) VALUES (?, ?, ?) "
                             "ON CONFLICT DO NOTHING", labels)


async def lineage(
    tx: Tx,
    memory_id: str,
    namespace: str,
    event: str,
    at: float,
    *,
    from_tier: MemoryType | None = None,
    to_tier: MemoryType | None = None,
    score: float | None = None,
    reason: str = "",
) -> None:
    """One lineage event (a NaN score is stored as none)."""
    await tx.execute(rows.INSERT_LINEAGE, memory_id, namespace, event, at,
                     from_tier.value if from_tier else None, to_tier.value if to_tier else None,
                     score if score is None or math.isfinite(score) else None, reason, 1, None)


async def touch(tx: Tx, memories: Sequence[Memory], now: float, reason: str) -> None:
    """Bump access counts; coalesce into the latest lineage row when it is an access."""
    coalesced: set[str] = set()
    for chunk in rows.chunks(memories):
        await tx.execute("UPDATE memories SET access_count = access_count + 1, accessed_at = ? "
                         "WHERE seq IN ?", now, [m.seq for m in chunk])
        coalesced.update(str(r[0]) for r in await tx.fetch(
            "UPDATE lineage SET count = count + 1, last_at = ? WHERE event = 'accessed' "
            "AND id IN (SELECT max(id) FROM lineage WHERE memory_id IN ? GROUP BY memory_id) "
            "RETURNING memory_id", now, [m.id for m in chunk]))
    fresh = [m for m in memories if m.id not in coalesced]
    if fresh:
        await tx.executemany(
            "INSERT INTO lineage (memory_id, namespace, event, at, reason, last_at) "
            "VALUES (?, ?, 'accessed', ?, ?, ?)",
            [(m.id, m.namespace, now, reason, now) for m in fresh])


async def neighbours(
    tx: Tx, namespace: str, session_id: str | None, seq: int
) -> list[tuple[int, str]]:
    """(seq, content) of up to CONTEXT_RADIUS memories of the session on each side."""
    if session_id is None:
        return []
    found = await tx.fetch(
        "SELECT seq, content FROM (SELECT seq, content FROM memories WHERE namespace = ? "
        "AND session_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?) AS before "
        "UNION ALL SELECT seq, content FROM (SELECT seq, content FROM memories "
        "WHERE namespace = ? AND session_id = ? AND seq > ? ORDER BY seq LIMIT ?) AS after "
        "ORDER BY seq", *(namespace, session_id, seq, CONTEXT_RADIUS) * 2)
    return [(int(r[0]), str(r[1])) for r in found]


async def refresh_context(
    tx: Tx, namespace: str, session_id: str | None, seqs: Sequence[int]
) -> None:
    """Rewrite the context text and vector of `seqs` from their current neighbours."""
    for seq in seqs:
        around = await neighbours(tx, namespace, session_id, seq)
        await tx.index(seq, {"context": " ".join(text for _, text in around)})
        await set_context_terms(tx, seq, namespace, [s for s, _ in around])


async def set_own_terms(
    tx: Tx, seq: int, namespace: str, content: str, labels: str, *, new: bool = False
) -> set[str]:
    """(Re)write a memory's own-text vectors, keeping its namespace's document counts and
    length in step; returns the terms of its content. `new`: the row was inserted in this
    transaction, so its vectors are still the empty defaults and need no read."""
    counts: tuple[Counter[str], Counter[str]] = (Counter(), Counter())
    sequence: list[str] = []
    for term, doc in analysis.tokens([content, labels]):
        counts[doc][term] += 1
        if doc == 0:
            sequence.append(term)
    row = None if new else await tx.fetchrow(
        "SELECT terms, label_terms FROM memories WHERE seq = ?", seq)
    old_terms, old_labels = (str(row[0]), str(row[1])) if row else ("", "")
    before = set(bm25.decode(old_terms)) | set(bm25.decode(old_labels))
    after = set(counts[0]) | set(counts[1])
    await count_namespace_terms(tx, namespace, after - before, +1)
    await count_namespace_terms(tx, namespace, before - after, -1)
    delta = (sum(counts[0].values()) + sum(counts[1].values())
             - bm25.length(old_terms) - bm25.length(old_labels))
    await tx.execute(
        "UPDATE memories SET terms = ?, label_terms = ?, term_seq = ?, doc_len = doc_len + ? "
        "WHERE seq = ?", bm25.encode(counts[0]), bm25.encode(counts[1]),
        analysis.packed_ids(sequence), delta, seq)
    await add_length(tx, namespace, delta)
    await tx.index(seq)
    return set(counts[0])


async def set_context_terms(
    tx: Tx, seq: int, namespace: str, around: Sequence[int], *, new: bool = False
) -> None:
    """A memory's context vector: the sum of its neighbours' content vectors (`new`: as in
    set_own_terms)."""
    vectors: list[str] = []
    if around:
        vectors = [str(r[0]) for r in await tx.fetch(
            "SELECT terms FROM memories WHERE seq IN ?", list(around))]
    context = bm25.add(vectors)
    old = None if new else await tx.fetchval(
        "SELECT context_terms FROM memories WHERE seq = ?", seq)
    delta = sum(context.values()) - bm25.length(str(old or ""))
    await tx.execute("UPDATE memories SET context_terms = ?, doc_len = doc_len + ? "
                     "WHERE seq = ?", bm25.encode(context), delta, seq)
    await add_length(tx, namespace, delta)
    await tx.index(seq)


async def add_length(tx: Tx, namespace: str, delta: int) -> None:
    if delta:
        await tx.execute("UPDATE namespace_stats SET length = length + ? WHERE namespace = ?",
                         delta, namespace)


async def count_namespace_terms(
    tx: Tx, namespace: str, terms: AbstractSet[str], delta: int
) -> None:
    if not terms:
        return
    ordered = sorted(terms)
    await tx.executemany(
        "INSERT INTO namespace_terms (namespace, term, df) VALUES (?, ?, ?) "
        "ON CONFLICT (namespace, term) DO UPDATE SET df = namespace_terms.df + excluded.df",
        [(namespace, t, delta) for t in ordered])
    if delta < 0:
        for chunk in rows.chunks(ordered):
            await tx.execute("DELETE FROM namespace_terms WHERE df <= 0 AND namespace = ? "
                             "AND term IN ?", namespace, chunk)


async def fold_statistics(tx: Tx, old: str, new: str) -> None:
    """Add namespace `old`'s term statistics to `new`'s (its memories moved there)."""
    # "AND true": SQLite's parser needs a WHERE before ON CONFLICT in an INSERT … SELECT.
    await tx.execute(
        "INSERT INTO namespace_terms (namespace, term, df) "
        "SELECT ?, term, df FROM namespace_terms WHERE namespace = ? AND true "
        "ON CONFLICT (namespace, term) DO UPDATE SET df = namespace_terms.df + excluded.df",
        new, old)
    await tx.execute(
        "INSERT INTO namespace_stats (namespace, docs, length) "
        "SELECT ?, docs, length FROM namespace_stats WHERE namespace = ? AND true "
        "ON CONFLICT (namespace) DO UPDATE SET docs = namespace_stats.docs + excluded.docs, "
        "length = namespace_stats.length + excluded.length", new, old)
    await tx.execute("DELETE FROM namespace_terms WHERE namespace = ?", old)
    await tx.execute("DELETE FROM namespace_stats WHERE namespace = ?", old)
