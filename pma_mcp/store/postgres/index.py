"""Inside one write transaction: a memory's row, labels, term vectors, postings and statistics.

`Writer` is what every PostgresStore write runs with. It is the SQLite store's write path
(store/sqlite/repository.py) over PostgreSQL: the same vectors (analysis.tokens), the same
session-neighbour context (CONTEXT_RADIUS), the same per-namespace statistics and lineage.

Locking (several processes write one database at once, each write one transaction in READ
COMMITTED):
- `lock` takes a transaction-scoped advisory lock per namespace written, in sorted order, first
  thing: writers of one namespace run one after another, so dedupe by content hash, session
  neighbours, `namespace_terms` and `namespace_stats` are read and written as if alone.
- `term_df` (store-wide) is shared by every namespace: its changes are summed in memory and
  written once, at `flush`, in term order, so two writers of different namespaces lock its
  rows in the same order and cannot deadlock on them.
- postings of a memory are rewritten from its vectors at `flush` (once per memory however
  many times its vectors changed in the transaction).
Anything else that could still deadlock (hook records shared by sessions) is retried by the
store (faults.RETRYABLE_IN_TRANSACTION).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from pma_mcp.core.models import GCDecision, Memory, MemoryType, to_datetime
from pma_mcp.core.text import analysis, bm25
from pma_mcp.core.text.lexicon import speaker_of
from pma_mcp.core.text.relevance import CONTEXT_RADIUS
from pma_mcp.store.postgres.schema import MIGRATION_LOCK

Conn = asyncpg.Connection | PoolConnectionProxy
"""A connection, or the pool's proxy of one."""

WRITE_LOCK_CLASS = MIGRATION_LOCK[0] + 1
"""Advisory lock class of namespace write locks (objid: hashtext(namespace))."""

COLUMNS = (
    "seq, id, namespace, content, memory_type, importance, tags, linked_entities, token_count, "
    "access_count, created_at, accessed_at, metadata, session_id, content_hash, superseded_by, "
    "author"
)
M_COLUMNS = ", ".join(f"m.{c.strip()}" for c in COLUMNS.split(","))


def memory_of(row: asyncpg.Record) -> Memory:
    return Memory(
        seq=int(row["seq"]),
        id=row["id"],
        namespace=row["namespace"],
        content=row["content"],
        memory_type=MemoryType(row["memory_type"]),
        importance=float(row["importance"]),
        tags=_json_list(row["tags"]),
        linked_entities=_json_list(row["linked_entities"]),
        token_count=int(row["token_count"]),
        access_count=int(row["access_count"]),
        created_at=to_datetime(row["created_at"]),
        accessed_at=to_datetime(row["accessed_at"]),
        metadata={} if row["metadata"] == "{}" else json.loads(row["metadata"]),
        session_id=row["session_id"],
        content_hash=row["content_hash"],
        superseded_by=row["superseded_by"],
        author=row["author"],
    )


def _json_list(text: str) -> list[str]:
    return [] if text == "[]" else list(json.loads(text))


def labels_text(tags: Iterable[str], entities: Iterable[str]) -> str:
    return " ".join([*tags, *entities])


class Writer:
    """The helpers of one write transaction on `conn` (see the module docstring)."""

    def __init__(self, conn: Conn) -> None:
        self.conn = conn
        self._term_df: Counter[str] = Counter()
        self._dirty: set[int] = set()

    async def lock(self, namespaces: Iterable[str]) -> None:
        for namespace in sorted(set(namespaces)):
            await self.conn.execute("SELECT pg_advisory_xact_lock($1, hashtext($2))",
                                    WRITE_LOCK_CLASS, namespace)

    async def flush(self) -> None:
        """Write what was deferred: postings of changed memories, store-wide term counts."""
        if self._dirty:
            await self._write_postings(sorted(self._dirty))
            self._dirty.clear()
        changed = sorted(t for t, n in self._term_df.items() if n)
        if changed:
            await self.conn.execute(
                "INSERT INTO term_df (term, df) SELECT * FROM unnest($1::text[], $2::int[]) "
                "ON CONFLICT (term) DO UPDATE SET df = term_df.df + excluded.df",
                changed, [self._term_df[t] for t in changed])
            await self.conn.execute("DELETE FROM term_df WHERE term = ANY($1) AND df <= 0",
                                    changed)
        self._term_df.clear()

    def mark(self, seq: int) -> None:
        """Rewrite `seq`'s postings from its vectors at `flush`."""
        self._dirty.add(seq)

    async def fetch_one(self, sql: str, *args: Any) -> Memory | None:
        row = await self.conn.fetchrow(sql, *args)
        return memory_of(row) if row is not None else None

    async def fetch_all(self, sql: str, *args: Any) -> list[Memory]:
        return [memory_of(r) for r in await self.conn.fetch(sql, *args)]

    async def by_seq(self, seq: int) -> Memory | None:
        return await self.fetch_one(f"SELECT {COLUMNS} FROM memories WHERE seq = $1", seq)

    # ------------------------------------------------------------- rows

    async def insert_row(self, memory: Memory, reason: str) -> int:
        """Memory row, labels, vectors, neighbours' context and the `created` event; seq."""
        seq = int(await self.conn.fetchval(
            "INSERT INTO memories (id, namespace, content, memory_type, importance, tags, "
            "linked_entities, token_count, access_count, created_at, accessed_at, metadata, "
            "session_id, content_hash, superseded_by, speaker, author) VALUES ($1, $2, $3, $4, "
            "$5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17) RETURNING seq",
            memory.id, memory.namespace, memory.content, memory.memory_type.value,
            memory.importance, json.dumps(memory.tags), json.dumps(memory.linked_entities),
            memory.token_count, memory.access_count, memory.created_at.timestamp(),
            memory.accessed_at.timestamp(), json.dumps(memory.metadata), memory.session_id,
            memory.content_hash, memory.superseded_by, speaker_of(memory.content),
            memory.author))
        await self.write_labels(seq, memory.tags, memory.linked_entities)
        await self.conn.execute(
            "INSERT INTO namespace_stats (namespace, docs, length) VALUES ($1, 1, 0) "
            "ON CONFLICT (namespace) DO UPDATE SET docs = namespace_stats.docs + 1",
            memory.namespace)
        content_terms = await self.set_own_terms(
            seq, memory.namespace, memory.content,
            labels_text(memory.tags, memory.linked_entities))
        around = await self.neighbours(memory.namespace, memory.session_id, seq)
        await self.set_context_terms(seq, memory.namespace, around)
        await self.refresh_context(memory.namespace, memory.session_id, around)
        self.count_terms(content_terms, +1)
        await self.lineage(memory.id, memory.namespace, "created",
                           memory.created_at.timestamp(), to_tier=memory.memory_type,
                           reason=reason)
        return seq

    async def write_labels(self, seq: int, tags: Iterable[str], entities: Iterable[str]) -> None:
        rows = [("tag", t) for t in tags] + [("entity", e) for e in entities]
        if rows:
            await self.conn.execute(
                "INSERT INTO memory_labels (seq, kind, value) "
                "SELECT $1, * FROM unnest($2::text[], $3::text[]) ON CONFLICT DO NOTHING",
                seq, [k for k, _ in rows], [v for _, v in rows])

    async def lineage(
        self,
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
        await self.conn.execute(
            "INSERT INTO lineage (memory_id, namespace, event, at, from_tier, to_tier, score, "
            "reason) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            memory_id, namespace, event, at,
            from_tier.value if from_tier else None, to_tier.value if to_tier else None,
            score if score is None or math.isfinite(score) else None, reason)

    async def touch(self, memories: Sequence[Memory], now: float, reason: str) -> None:
        """Bump access counts; coalesce into the latest lineage row when it is an access."""
        await self.conn.execute(
            "UPDATE memories SET access_count = access_count + 1, accessed_at = $1 "
            "WHERE seq = ANY($2)", now, [m.seq for m in memories])
        ids = [m.id for m in memories]
        coalesced = {str(r[0]) for r in await self.conn.fetch(
            "UPDATE lineage SET count = count + 1, last_at = $1 WHERE event = 'accessed' "
            "AND id IN (SELECT max(id) FROM lineage WHERE memory_id = ANY($2) "
            "GROUP BY memory_id) RETURNING memory_id", now, ids)}
        fresh = [m for m in memories if m.id not in coalesced]
        if fresh:
            await self.conn.execute(
                "INSERT INTO lineage (memory_id, namespace, event, at, reason, last_at) "
                "SELECT i, n, 'accessed', $3, $4, $3 FROM unnest($1::text[], $2::text[]) "
                "AS f(i, n)", [m.id for m in fresh], [m.namespace for m in fresh], now, reason)

    async def delete(
        self, memory: Memory, now: float, reason: str, score: float | None = None
    ) -> bool:
        """Delete the memory (labels and postings cascade); False if it was already gone."""
        around = await self.neighbours(memory.namespace, memory.session_id, memory.seq)
        gone = await self.conn.fetchrow(
            "DELETE FROM memories WHERE seq = $1 RETURNING terms, label_terms, doc_len",
            memory.seq)
        if gone is None:
            return False
        self._dirty.discard(memory.seq)
        content_terms = set(bm25.decode(gone["terms"]))
        self.count_terms(content_terms, -1)
        await self.count_namespace_terms(
            memory.namespace, content_terms | set(bm25.decode(gone["label_terms"])), -1)
        await self.conn.execute(
            "UPDATE namespace_stats SET docs = docs - 1, length = length - $1 "
            "WHERE namespace = $2", int(gone["doc_len"]), memory.namespace)
        await self.refresh_context(memory.namespace, memory.session_id, around)
        await self.lineage(memory.id, memory.namespace, "deleted", now,
                           from_tier=memory.memory_type, score=score, reason=reason)
        return True

    async def supersede(self, old: Memory, new_id: str, now: float) -> None:
        """Archive `old` and point it at its correction."""
        await self.conn.execute(
            "UPDATE memories SET memory_type = 'archived', superseded_by = $1 WHERE seq = $2",
            new_id, old.seq)
        self.mark(old.seq)  # no longer current: its postings say so
        await self.lineage(old.id, old.namespace, "supersede", now, from_tier=old.memory_type,
                           to_tier=MemoryType.ARCHIVED, reason=f"superseded by {new_id}")

    async def merge(
        self, gone: Memory, keep: Memory, now: float, reason: str, score: float
    ) -> None:
        """Fold `gone` into `keep`: union of labels, summed access counts; `gone` is deleted.

        Skipped when either memory is gone by now (the plan came from an earlier snapshot).
        """
        current = await self.by_seq(keep.seq)
        gone_now = await self.by_seq(gone.seq)
        if current is None or gone_now is None:
            return
        gone = gone_now
        tags = list(dict.fromkeys([*current.tags, *gone.tags]))
        entities = list(dict.fromkeys([*current.linked_entities, *gone.linked_entities]))
        await self.conn.execute(
            "UPDATE memories SET tags = $1, linked_entities = $2, "
            "access_count = access_count + $3 WHERE seq = $4",
            json.dumps(tags), json.dumps(entities), gone.access_count, keep.seq)
        await self.write_labels(keep.seq, tags, entities)
        await self.set_own_terms(keep.seq, keep.namespace, current.content,
                                 labels_text(tags, entities))
        await self.lineage(keep.id, keep.namespace, "merge", now, from_tier=keep.memory_type,
                           to_tier=keep.memory_type, score=score,
                           reason=f"absorbed {gone.id}: {reason}")
        await self.lineage(gone.id, gone.namespace, "merge", now, from_tier=gone.memory_type,
                           score=score, reason=f"merged into {keep.id}: {reason}")
        await self.delete(gone, now, reason=f"merged into {keep.id}")

    async def apply_decision(
        self, decision: GCDecision, memories: dict[str, Memory], now: float
    ) -> None:
        """One change of a GC plan with its lineage; skipped if the memory changed since."""
        memory = memories[decision.memory_id]
        if decision.action == "merge":
            assert decision.merge_into is not None
            await self.merge(memory, memories[decision.merge_into], now, decision.reason,
                             decision.breakdown.composite)
        elif decision.action == "delete":
            await self.delete(memory, now, decision.reason, score=decision.breakdown.composite)
        elif decision.action in ("promote", "demote", "archive"):
            assert decision.to_tier is not None
            moved = await self.conn.fetchval(
                "UPDATE memories SET memory_type = $1 WHERE seq = $2 AND memory_type = $3 "
                "RETURNING seq", decision.to_tier.value, memory.seq, decision.from_tier.value)
            if moved is None:
                return  # changed since the plan was made (another process's GC)
            await self.lineage(memory.id, memory.namespace, decision.action, now,
                               from_tier=memory.memory_type, to_tier=decision.to_tier,
                               score=decision.breakdown.composite, reason=decision.reason)

    # ---------------------------------------------------------- vectors

    async def neighbours(self, namespace: str, session_id: str | None, seq: int) -> list[int]:
        """Seqs of up to CONTEXT_RADIUS memories of the session on each side of `seq`."""
        if session_id is None:
            return []
        rows = await self.conn.fetch(
            "(SELECT seq FROM memories WHERE namespace = $1 AND session_id = $2 AND seq < $3 "
            "ORDER BY seq DESC LIMIT $4) UNION ALL (SELECT seq FROM memories "
            "WHERE namespace = $1 AND session_id = $2 AND seq > $3 ORDER BY seq LIMIT $4) "
            "ORDER BY seq", namespace, session_id, seq, CONTEXT_RADIUS)
        return [int(r[0]) for r in rows]

    async def refresh_context(
        self, namespace: str, session_id: str | None, seqs: Sequence[int]
    ) -> None:
        """Rewrite the context vector of `seqs` from their current neighbours."""
        for seq in seqs:
            await self.set_context_terms(
                seq, namespace, await self.neighbours(namespace, session_id, seq))

    async def set_own_terms(self, seq: int, namespace: str, content: str, labels: str) -> set[str]:
        """(Re)write a memory's own-text vectors, keeping its namespace's document counts and
        length in step; returns the terms of its content."""
        counts: tuple[Counter[str], Counter[str]] = (Counter(), Counter())
        sequence: list[str] = []
        for term, doc in analysis.tokens([content, labels]):
            counts[doc][term] += 1
            if doc == 0:
                sequence.append(term)
        row = await self.conn.fetchrow(
            "SELECT terms, label_terms FROM memories WHERE seq = $1", seq)
        old_terms, old_labels = (row["terms"], row["label_terms"]) if row else ("", "")
        before = set(bm25.decode(old_terms)) | set(bm25.decode(old_labels))
        after = set(counts[0]) | set(counts[1])
        await self.count_namespace_terms(namespace, after - before, +1)
        await self.count_namespace_terms(namespace, before - after, -1)
        delta = (sum(counts[0].values()) + sum(counts[1].values())
                 - bm25.length(old_terms) - bm25.length(old_labels))
        await self.conn.execute(
            "UPDATE memories SET terms = $1, label_terms = $2, doc_len = doc_len + $3, "
            "term_seq = $5 WHERE seq = $4", bm25.encode(counts[0]), bm25.encode(counts[1]),
            delta, seq, analysis.packed_ids(sequence))
        await self._add_length(namespace, delta)
        self._dirty.add(seq)
        return set(counts[0])

    async def set_context_terms(self, seq: int, namespace: str, neighbours: Sequence[int]) -> None:
        """A memory's context vector: the sum of its neighbours' content vectors."""
        vectors: list[str] = []
        if neighbours:
            vectors = [str(r[0]) for r in await self.conn.fetch(
                "SELECT terms FROM memories WHERE seq = ANY($1)", list(neighbours))]
        context = bm25.add(vectors)
        old = await self.conn.fetchval("SELECT context_terms FROM memories WHERE seq = $1", seq)
        delta = sum(context.values()) - bm25.length(str(old or ""))
        await self.conn.execute(
            "UPDATE memories SET context_terms = $1, doc_len = doc_len + $2 WHERE seq = $3",
            bm25.encode(context), delta, seq)
        await self._add_length(namespace, delta)
        self._dirty.add(seq)

    async def _add_length(self, namespace: str, delta: int) -> None:
        if delta:
            await self.conn.execute(
                "UPDATE namespace_stats SET length = length + $1 WHERE namespace = $2",
                delta, namespace)

    async def count_namespace_terms(
        self, namespace: str, terms: AbstractSet[str], delta: int
    ) -> None:
        if not terms:
            return
        ordered = sorted(terms)
        await self.conn.execute(
            "INSERT INTO namespace_terms (namespace, term, df) "
            "SELECT $1, t, $3 FROM unnest($2::text[]) AS t "
            "ON CONFLICT (namespace, term) DO UPDATE SET df = namespace_terms.df + excluded.df",
            namespace, ordered, delta)
        if delta < 0:
            await self.conn.execute(
                "DELETE FROM namespace_terms WHERE namespace = $1 AND term = ANY($2) "
                "AND df <= 0", namespace, ordered)

    def count_terms(self, content_terms: AbstractSet[str], delta: int) -> None:
        """Add `delta` to the store-wide own-content document frequency of each term (the
        candidate search's cost bound), written at `flush`."""
        for term in content_terms:
            self._term_df[term] += delta

    async def _write_postings(self, seqs: list[int]) -> None:
        """Postings of `seqs` as their stored vectors say (memories gone meanwhile: none)."""
        rows = await self.conn.fetch(
            "SELECT seq, namespace, terms, label_terms, context_terms, doc_len, "
            "superseded_by IS NULL AS current FROM memories WHERE seq = ANY($1)", seqs)
        await self.conn.execute("DELETE FROM postings WHERE seq = ANY($1)", seqs)
        columns: tuple[list[Any], ...] = ([], [], [], [], [], [], [], [])
        for row in rows:
            for posting in postings_of(row["terms"], row["label_terms"], row["context_terms"]):
                for column, value in zip(columns, (posting[0], row["namespace"], row["seq"],
                                                   *posting[1:], row["doc_len"],
                                                   row["current"]), strict=True):
                    column.append(value)
        if columns[0]:
            await self.conn.execute(
                "INSERT INTO postings (term, namespace, seq, content_tf, label_tf, context_tf, "
                "doc_len, current) SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], "
                "$4::int[], $5::int[], $6::int[], $7::int[], $8::bool[])", *columns)

    async def fold_statistics(self, old: str, new: str) -> None:
        """Add namespace `old`'s term statistics to `new`'s (its memories moved there)."""
        await self.conn.execute(
            "INSERT INTO namespace_terms (namespace, term, df) "
            "SELECT $1, term, df FROM namespace_terms WHERE namespace = $2 "
            "ON CONFLICT (namespace, term) DO UPDATE SET df = namespace_terms.df + excluded.df",
            new, old)
        await self.conn.execute(
            "INSERT INTO namespace_stats (namespace, docs, length) "
            "SELECT $1, docs, length FROM namespace_stats WHERE namespace = $2 "
            "ON CONFLICT (namespace) DO UPDATE SET docs = namespace_stats.docs + excluded.docs, "
            "length = namespace_stats.length + excluded.length", new, old)
        await self.conn.execute("DELETE FROM namespace_terms WHERE namespace = $1", old)
        await self.conn.execute("DELETE FROM namespace_stats WHERE namespace = $1", old)


def postings_of(
    terms: str, label_terms: str, context_terms: str
) -> list[tuple[str, int, int, int]]:
    """(term, content tf, label tf, context tf) for every term of a memory's three vectors."""
    own, labels = bm25.decode(terms), bm25.decode(label_terms)
    context = bm25.decode(context_terms)
    return [(t, own.get(t, 0), labels.get(t, 0), context.get(t, 0))
            for t in sorted(own.keys() | labels.keys() | context.keys())]
