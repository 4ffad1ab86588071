"""All SQL: memories, their tags/entities, the FTS5 index, lineage, and the schema.

Every write is one `BEGIN IMMEDIATE` transaction that keeps the memory row, its label rows and
its FTS row in step, so a crash leaves either all of them or none. Policy (what to score, what
to demote) lives elsewhere; this module only stores and fetches.

Layout notes:
- `memories.seq` is the rowid: monotonic insertion order, and the FTS rowid.
- Tags and entities live twice: as JSON on the row (cheap to return) and as `memory_labels`
  rows (indexed, so tag filters and graph lookups are SQL). Both change in the same transaction.
- `memory_fts` holds `content`, `labels` (tags and entities as words) and `context` (the text
  of up to CONTEXT_RADIUS earlier and later memories of the same session, kept current as
  neighbours arrive or go), with Porter stemming. `memories.speaker` is the "Name:" a
  conversation turn starts with (lexicon.speaker_of).
- `lineage` has no foreign key: a memory's history outlives the memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import math
import operator
import sqlite3
import time
from collections import Counter
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Callable,
    Iterable,
    Sequence,
)
from collections.abc import (
    Set as AbstractSet,
)
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiosqlite

from pma_mcp.core.errors import InvalidInputError, NotFoundError, StorageError
from pma_mcp.core.models import (
    Browse,
    GCDecision,
    GCFacts,
    LineageEvent,
    Memory,
    MemoryType,
    Scope,
    TierFacts,
    stored_epoch,
    to_datetime,
)
from pma_mcp.core.scoring import Weights
from pma_mcp.core.text import analysis, bm25, relevance
from pma_mcp.core.text.lexicon import speaker_of
from pma_mcp.core.text.relevance import CONTEXT_RADIUS, ScopeStats, TermStats
from pma_mcp.store import ranked_read
from pma_mcp.store.base import Candidate, Consistency, GCBatching, LineageRow, SessionState
from pma_mcp.store.sqlite import db
from pma_mcp.store.sqlite.schema import MIGRATIONS

log = logging.getLogger(__name__)

OWN_TEXT = "{content labels}"
"""FTS5 column filter: a memory's own text and labels, not its neighbours' context."""
NARROW_RANGE_S = 31 * 86_400.0
"""A date filter at most this wide is read by the creation-time index (see `browse`)."""

_COLUMNS = (
    "seq, id, namespace, content, memory_type, importance, tags, linked_entities, token_count, "
    "access_count, created_at, accessed_at, metadata, session_id, content_hash, superseded_by, "
    "author"
)
_M_COLUMNS = ", ".join(f"m.{c.strip()}" for c in _COLUMNS.split(","))
_STATIC_SCORE = (
    "(? * m.importance + ? * exp(-0.1 * max(0.0, (? - m.created_at) / 3600.0)) "
    "+ ? * min(ln(1 + m.access_count) / 10.0, 1.0))"
)
"""The query-less composite of scoring.score over alias m; parameters: the importance,
recency and access weights around `now`."""


def _memory(row: sqlite3.Row) -> Memory:
    return Memory(
        seq=row["seq"],
        id=row["id"],
        namespace=row["namespace"],
        content=row["content"],
        memory_type=MemoryType(row["memory_type"]),
        importance=row["importance"],
        tags=_json_list(row["tags"]),
        linked_entities=_json_list(row["linked_entities"]),
        token_count=row["token_count"],
        access_count=row["access_count"],
        created_at=to_datetime(row["created_at"]),
        accessed_at=to_datetime(row["accessed_at"]),
        metadata={} if row["metadata"] == "{}" else json.loads(row["metadata"]),
        session_id=row["session_id"],
        content_hash=row["content_hash"],
        superseded_by=row["superseded_by"],
        author=row["author"],
    )


_TIER_COLUMNS = ("seq, memory_type, importance, token_count, access_count, created_at, "
                 "accessed_at, superseded_by")
"""TierFacts, in the order `_tier_facts` reads them (all in the memories_gc index)."""
_FACT_COLUMNS = f"{_TIER_COLUMNS}, id, namespace, content"
_TIER_COLUMNS_M = ", ".join(f"m.{c.strip()}" for c in _TIER_COLUMNS.split(","))
_TIER_IMPORTANCE = 2
_TIER_ACCESSED = 6
_TIER_SUPERSEDED = 7
_TIERS = {t.value: t for t in MemoryType}  # a dict look-up: MemoryType(value) costs 0.3 µs


def _tier_facts(row: Sequence[Any]) -> TierFacts:
    return TierFacts(
        seq=row[0], memory_type=_TIERS[row[1]], importance=row[2], token_count=row[3],
        access_count=row[4], created_epoch=stored_epoch(row[5]),
        accessed_epoch=stored_epoch(row[6]), superseded_by=row[7],
    )


def _facts(row: Sequence[Any]) -> GCFacts:
    """Positional (_FACT_COLUMNS order): a plan makes 100k of these."""
    return GCFacts(row[0], _TIERS[row[1]], row[2], row[3], row[4], stored_epoch(row[5]),
                   stored_epoch(row[6]), row[7], row[8], row[9], row[10])


_DOCUMENT = "m.terms, m.label_terms, m.context_terms, m.doc_len"


def _document(row: Sequence[Any]) -> bm25.Document:
    return bm25.Document(str(row[0]), str(row[1]), str(row[2]), int(row[3]))


def _ranked(row: Sequence[Any], semantic: float) -> Candidate:
    """A Candidate from (seq, importance, created_at, access_count, ...)."""
    return Candidate(seq=int(row[0]), semantic=semantic, importance=float(row[1]),
                     created_at=float(row[2]), access_count=int(row[3]))


def match_expression(words: Sequence[str], own_text_only: Sequence[str] = ()) -> str:
    """An FTS5 query that ORs the words as quoted strings: plain terms, never operators.

    Words in `own_text_only` are restricted to the memory's own text and labels.
    """
    restricted = set(own_text_only)
    return " OR ".join(
        f'{OWN_TEXT}: "{w}"' if w in restricted else f'"{w}"' for w in words
    )


def _json_list(text: str) -> list[str]:
    """A JSON list column; the common empty one without the parser (GC reads 100k rows)."""
    return [] if text == "[]" else list(json.loads(text))


def _editable(m: Memory) -> tuple[object, ...]:
    return (m.content, m.importance, m.memory_type, m.tags, m.linked_entities, m.metadata)


def _labels_text(tags: Iterable[str], entities: Iterable[str]) -> str:
    return " ".join([*tags, *entities])


def _placeholders(n: int) -> str:
    return ", ".join("?" * n)


def _scope_sql(scope: Scope) -> tuple[str, list[Any]]:
    """WHERE fragment (over alias m) for namespace → memory_type → tags, the seed's order."""
    if not scope.namespaces:
        raise ValueError("a scope needs at least one namespace")
    parts = [f"m.namespace IN ({_placeholders(len(scope.namespaces))})"]
    params: list[Any] = list(scope.namespaces)
    if scope.memory_type is not None:
        parts.append("m.memory_type = ?")
        params.append(scope.memory_type.value)
    if scope.memory_type != MemoryType.ARCHIVED:  # corrected memories only when asked for
        parts.append("m.superseded_by IS NULL")
    if scope.tags:
        parts.append(
            "EXISTS (SELECT 1 FROM memory_labels l WHERE l.seq = m.seq AND l.kind = 'tag' "
            f"AND l.value IN ({_placeholders(len(scope.tags))}))"
        )
        params.extend(scope.tags)
    return " AND ".join(parts), params


@db.maps_driver_errors
class SQLiteStore:
    """The one door to the database. Open with `await SQLiteStore.open(database)`."""

    def __init__(
        self, conn: aiosqlite.Connection, busy_timeout_ms: int = db.BUSY_TIMEOUT_MS
    ) -> None:
        self._conn = conn
        self._busy_timeout_ms = busy_timeout_ms
        self._write_lock = asyncio.Lock()

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[aiosqlite.Connection]:
        """One write transaction at a time on this connection: coroutines sharing it (parallel
        tool calls) would otherwise issue BEGIN inside each other's transaction."""
        async with (
            self._write_lock,
            db.transaction(self._conn, self._busy_timeout_ms) as conn,
        ):
            yield conn

    @classmethod
    async def open(cls, database: str, busy_timeout_ms: int = db.BUSY_TIMEOUT_MS) -> SQLiteStore:
        conn = await db.connect(database, busy_timeout_ms)
        try:
            await conn.create_function("pma_speaker", 1, speaker_of, deterministic=True)
            await conn.create_function("pma_term_seq", 1, analysis.content_ids,
                                       deterministic=True)
            await db.migrate(conn, MIGRATIONS)
        except BaseException as exc:
            await conn.close()
            if isinstance(exc, sqlite3.DatabaseError):
                raise StorageError(f"cannot prepare database {database}: {exc}") from exc
            raise
        return cls(conn, busy_timeout_ms)

    @classmethod
    async def open_read_only(cls, path: Path) -> SQLiteStore:
        """The file as it is, never created or migrated (doctor); StorageError if it cannot
        be opened."""
        uri = f"file:{quote(str(path))}?mode=ro"
        try:
            conn = await db.Connection(
                str(path), lambda: sqlite3.connect(uri, uri=True, isolation_level=None))
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open {path}: {exc}") from exc
        conn.row_factory = sqlite3.Row
        return cls(conn)

    async def close(self) -> None:
        await self._conn.close()

    @property
    def backend(self) -> str:
        return "sqlite"

    @property
    def location(self) -> str:
        return self._conn_database()

    def _conn_database(self) -> str:
        return self._conn.database if isinstance(self._conn, db.Connection) else db.MEMORY

    async def schema_version(self) -> int:
        return await db.schema_version(self._conn)

    # ---------------------------------------------------------------- writes

    async def insert(
        self, memory: Memory, *, supersedes: Memory | None = None, reason: str = ""
    ) -> tuple[Memory, bool]:
        """Store `memory` unless its namespace already holds the same content.

        Returns (stored memory, deduplicated). An exact duplicate is not stored again: the
        existing memory is reinforced (one more access) and returned. With `supersedes`, the
        old memory is archived and points at the new one, in the same transaction.
        """
        now = memory.created_at.timestamp()
        async with self._write() as conn:
            existing = await self._fetch_one(
                conn,
                f"SELECT {_COLUMNS} FROM memories m WHERE namespace = ? AND content_hash = ?",
                (memory.namespace, memory.content_hash),
            )
            if existing is not None:
                if existing.superseded_by is not None:
                    # Stored again after being corrected away: it is current once more.
                    await conn.execute(
                        "UPDATE memories SET superseded_by = NULL, memory_type = ? WHERE seq = ?",
                        (memory.memory_type.value, existing.seq),
                    )
                    await self._lineage(
                        conn, existing.id, existing.namespace, "promote", now,
                        from_tier=existing.memory_type, to_tier=memory.memory_type,
                        reason="stored again after it was superseded: current again",
                    )
                if supersedes is not None and supersedes.seq != existing.seq:
                    await self._supersede(conn, supersedes, existing.id, now)
                await self._touch(conn, [existing], now, reason="exact duplicate stored again")
                refreshed = await self._fetch_one(
                    conn, f"SELECT {_COLUMNS} FROM memories m WHERE seq = ?", (existing.seq,)
                )
                assert refreshed is not None
                return refreshed, True
            seq = await self._insert_row(conn, memory, reason or "stored")
            if supersedes is not None:
                await self._supersede(conn, supersedes, memory.id, now)
        return dataclasses.replace(memory, seq=seq), False

    async def insert_many(
        self,
        memories: Sequence[Memory],
        *,
        skip_existing: bool,
        progress: Callable[[int], None] | None = None,
        lineage: bool = True,
    ) -> int:
        """Import memories verbatim (ids, counts, timestamps) in ONE transaction.

        With `skip_existing`, a memory whose id or content already exists is skipped; without
        it, such a memory aborts the whole import (nothing is half-imported). `progress` is
        called with the number of records handled so far (a CLI progress bar).
        """
        stored = 0
        async with self._write() as conn:
            for done, memory in enumerate(memories, 1):
                if progress is not None:
                    progress(done)
                clash = await self._fetch_one(
                    conn,
                    f"SELECT {_COLUMNS} FROM memories m WHERE id = ? "
                    "OR (namespace = ? AND content_hash = ?)",
                    (memory.id, memory.namespace, memory.content_hash),
                )
                if clash is not None:
                    if skip_existing:
                        continue
                    raise StorageError(
                        f"record {done}: memory {memory.id} already exists (or its content "
                        f"does, as {clash.id}); use --skip-existing to leave existing memories "
                        "alone"
                    )
                await self._insert_row(conn, memory, "imported" if lineage else None)
                stored += 1
        return stored

    async def touch(self, memories: Sequence[Memory], now: float, reason: str = "") -> None:
        """Count one access for each memory (access_count, accessed_at, lineage): one write.

        Skipped on a file recorded as damaged: reads still work there, writes do not.
        """
        if not memories or db.damage_recorded(self._conn_database()) is not None:
            return
        async with self._write() as conn:
            await self._touch(conn, memories, now, reason=reason)

    async def delete(self, memory: Memory, now: float, reason: str) -> None:
        async with self._write() as conn:
            await self._delete(conn, memory, now, reason)

    async def edit(self, old: Memory, new: Memory, now: float, reason: str) -> Memory:
        """Rewrite `old`'s editable fields as `new`'s in one transaction, keeping its id.

        The label rows, the FTS row (content and labels), term counts, the speaker and the
        `context` column of its session neighbours follow, and an `edited` lineage event is
        written. Refused if the memory changed or went since `old` was read (another process),
        or if the new content is another memory's in the namespace.
        """
        async with self._write() as conn:
            row = f"SELECT {_COLUMNS} FROM memories m WHERE seq = ?"
            current = await self._fetch_one(conn, row, (old.seq,))
            if current is None or current.id != old.id:
                raise NotFoundError(f"memory {old.id} was deleted meanwhile; nothing was edited")
            if _editable(current) != _editable(old):
                raise StorageError(f"memory {old.id} was changed by another writer meanwhile; "
                                   "nothing was edited: read it again and retry")
            if new.content_hash != old.content_hash:
                async with conn.execute(
                    "SELECT id FROM memories WHERE namespace = ? AND content_hash = ? "
                    "AND seq != ?", (old.namespace, new.content_hash, old.seq),
                ) as cur:
                    clash = await cur.fetchone()
                if clash is not None:
                    raise InvalidInputError("content", f"is already stored as memory {clash[0]}; "
                                       "edit or forget that one instead")
            await conn.execute(
                "UPDATE memories SET content = ?, content_hash = ?, token_count = ?, "
                "speaker = ?, importance = ?, memory_type = ?, tags = ?, linked_entities = ?, "
                "metadata = ? WHERE seq = ?",
                (new.content, new.content_hash, new.token_count, speaker_of(new.content),
                 new.importance, new.memory_type.value, json.dumps(new.tags),
                 json.dumps(new.linked_entities), json.dumps(new.metadata), old.seq),
            )
            await conn.execute("DELETE FROM memory_labels WHERE seq = ?", (old.seq,))
            await self._write_labels(conn, old.seq, new.tags, new.linked_entities)
            labels = _labels_text(new.tags, new.linked_entities)
            await conn.execute(
                "UPDATE memory_fts SET content = ?, labels = ? WHERE rowid = ?",
                (new.content, labels, old.seq),
            )
            async with conn.execute("SELECT terms FROM memories WHERE seq = ?",
                                    (old.seq,)) as cur:
                before = await cur.fetchone()
            old_terms = set(bm25.decode(str(before[0]))) if before else set()
            new_terms = await self._set_own_terms(conn, old.seq, old.namespace, new.content,
                                                  labels)
            if new.content != old.content:
                await self._count_terms(conn, old_terms, -1)
                await self._count_terms(conn, new_terms, +1)
                around = await self._neighbours(conn, old.namespace, old.session_id, old.seq)
                await self._refresh_context(conn, old.namespace, old.session_id,
                                            [s for s, _ in around])
            moved = new.memory_type != old.memory_type
            await self._lineage(
                conn, old.id, old.namespace, "edited", now,
                from_tier=old.memory_type if moved else None,
                to_tier=new.memory_type if moved else None, reason=reason,
            )
            edited = await self._fetch_one(conn, row, (old.seq,))
        assert edited is not None
        return edited

    async def apply_gc(
        self,
        decisions: Sequence[GCDecision],
        memories: dict[str, Memory],
        now: float,
        cursor: tuple[str, int] | None = None,
        *,
        batch: GCBatching | None = None,
    ) -> int:
        """Apply a collector plan in short transactions, writing lineage with every change.

        Each transaction holds at most `batch.changes` changes and ends early once it has
        held the write lock for `batch.seconds`; between transactions GC pauses
        `batch.pause` seconds, longer than SQLite's busy handler sleeps between retries, so
        a writer waiting in another process gets the lock (a 2,500-merge plan in one
        transaction kept other writers waiting ~10 s). Every change is whole within its
        transaction, so a crash between batches leaves a consistent store; the rest of the
        plan is re-planned by the next run.

        The plan was made from a snapshot; a step whose memory has since been deleted or moved
        (a concurrent GC in another process, a forget) is skipped, so nothing is applied twice.
        `cursor` (namespace, seq) records where a bounded run's window ended; it is written
        with the last batch. Returns the number of transactions used.
        """
        limits = batch or GCBatching()
        pending = list(decisions)
        done = 0
        transactions = 0
        while True:
            async with self._write() as conn:
                transactions += 1
                started = time.monotonic()
                in_batch = 0
                while done < len(pending) and in_batch < limits.changes and (
                    in_batch == 0 or time.monotonic() - started < limits.seconds
                ):
                    await self._apply_decision(conn, pending[done], memories, now)
                    done += 1
                    in_batch += 1
                if done >= len(pending) and cursor is not None:
                    await conn.execute(
                        "INSERT INTO gc_cursors (namespace, seq) VALUES (?, ?) "
                        "ON CONFLICT (namespace) DO UPDATE SET seq = excluded.seq",
                        cursor,
                    )
            if done >= len(pending):
                return transactions
            await asyncio.sleep(limits.pause)

    async def _apply_decision(
        self,
        conn: aiosqlite.Connection,
        decision: GCDecision,
        memories: dict[str, Memory],
        now: float,
    ) -> None:
        """One change of a GC plan with its lineage; skipped if the memory changed since."""
        memory = memories[decision.memory_id]
        if decision.action == "merge":
            assert decision.merge_into is not None
            await self._merge(conn, memory, memories[decision.merge_into], now,
                              decision.reason, decision.breakdown.composite)
        elif decision.action == "delete":
            await self._delete(conn, memory, now, decision.reason,
                               score=decision.breakdown.composite)
        elif decision.action in ("promote", "demote", "archive"):
            assert decision.to_tier is not None
            moved = await conn.execute(
                "UPDATE memories SET memory_type = ? WHERE seq = ? AND memory_type = ?",
                (decision.to_tier.value, memory.seq, decision.from_tier.value),
            )
            if moved.rowcount != 1:
                return  # changed since the plan was made (another process's GC)
            await self._lineage(
                conn, memory.id, memory.namespace, decision.action, now,
                from_tier=memory.memory_type, to_tier=decision.to_tier,
                score=decision.breakdown.composite, reason=decision.reason,
            )

    # ----------------------------------------------------------------- reads

    async def get(self, memory_id: str) -> Memory | None:
        return await self._fetch_one(
            self._conn, f"SELECT {_COLUMNS} FROM memories m WHERE id = ?", (memory_id,)
        )

    async def find_by_prefix(
        self, prefix: str, namespaces: Sequence[str], limit: int = 20
    ) -> list[Memory]:
        """Memories in `namespaces` whose id starts with `prefix` (hex only, so no LIKE escapes).

        `+namespace` keeps the planner on the id index: without statistics it preferred a
        namespace index and read the whole namespace (~0.1 s at 100k) to find one id."""
        sql = (
            f"SELECT {_COLUMNS} FROM memories m WHERE id >= ? AND id < ? "
            f"AND +namespace IN ({_placeholders(len(namespaces))}) ORDER BY id LIMIT ?"
        )
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        return await self._fetch_all(self._conn, sql, (prefix, upper, *namespaces, limit))

    async def term_stats(self, terms: Sequence[str]) -> TermStats:
        """Rows in the index and per term how many hold it (estimated, see
        relevance.term_stats) — what bounds a MATCH's cost.

        From `term_df`, kept at write time: fts5vocab derives a count by walking the term's
        whole posting list (~8 ms for a term in most of 100k memories).
        """
        async with self._conn.execute(
            "SELECT value FROM counters WHERE name = 'memories'"
        ) as cur:
            row = await cur.fetchone()
        own = dict.fromkeys(terms, 0)
        if terms:
            async with self._conn.execute(
                f"SELECT term, df FROM term_df WHERE term IN ({_placeholders(len(terms))})",
                tuple(terms),
            ) as cur:
                for term, df in await cur.fetchall():
                    own[str(term)] = int(df)
        return relevance.term_stats(int(row[0]) if row else 0, own)

    async def scope_stats(self, terms: Sequence[str], namespaces: Sequence[str]) -> ScopeStats:
        """Memories, their total length and per term how many hold it in their own text,
        summed over `namespaces` only."""
        marks = _placeholders(len(namespaces))
        async with self._conn.execute(
            f"SELECT coalesce(sum(docs), 0), coalesce(sum(length), 0) FROM namespace_stats "
            f"WHERE namespace IN ({marks})", tuple(namespaces),
        ) as cur:
            row = await cur.fetchone()
        docs, length = (int(row[0]), int(row[1])) if row else (0, 0)
        freq = dict.fromkeys(terms, 0)
        if terms:
            async with self._conn.execute(
                f"SELECT term, sum(df) FROM namespace_terms WHERE namespace IN ({marks}) "
                f"AND term IN ({_placeholders(len(terms))}) GROUP BY term",
                (*namespaces, *terms),
            ) as cur:
                for term, df in await cur.fetchall():
                    freq[str(term)] = int(df)
        return ScopeStats(docs, length, freq)

    async def _analyse(
        self, query: str, namespaces: Sequence[str]
    ) -> relevance.AnalysedQuery | None:
        terms = relevance.query_terms(query)
        if not terms:
            return None
        return relevance.analysed(query, terms, await self.term_stats(list(terms)),
                                await self.scope_stats(list(terms), namespaces))

    async def lexical_candidates(self, query: str, scope: Scope, limit: int) -> list[Candidate]:
        """FTS5 picks the candidates (its bm25 over the whole file's statistics, best first);
        store.lexical scores them from their term vectors and the scope's statistics.

        The query is reduced to plain words (no user text is read as FTS syntax), each quoted
        and OR-ed; a term too common for the row budget is searched in own text only
        (OWN_TEXT). CROSS JOIN pins the join order: without it the planner may scan
        `memories` and probe the index per row (seconds at 100k) instead of walking the
        FTS matches.
        """
        analysed = await self._analyse(query, scope.namespaces)
        if analysed is None:
            return []
        words = analysed.words
        match = match_expression(list(dict.fromkeys(words[t] for t in analysed.searched)),
                                 [words[t] for t in analysed.own_text_only])
        where, params = _scope_sql(scope)
        sql = (
            "SELECT m.seq, m.importance, m.created_at, m.access_count, m.speaker, "
            f"{_DOCUMENT} FROM memory_fts CROSS JOIN memories m ON m.seq = memory_fts.rowid "
            f"WHERE memory_fts MATCH ? AND {where} "
            "ORDER BY bm25(memory_fts, ?, ?, ?) LIMIT ?"
        )
        async with self._conn.execute(
            sql, (match, *params, *relevance.COLUMN_WEIGHTS, limit)
        ) as cur:
            rows = await cur.fetchall()
        sims = relevance.similarities([(_document(r[5:]), r[4]) for r in rows], analysed)
        return [_ranked(r, sim) for r, sim in zip(rows, sims, strict=True)]

    async def similarity_of(self, query: str, memory: Memory, namespaces: Sequence[str]) -> float:
        analysed = await self._analyse(query, namespaces)
        if analysed is None:
            return 0.0
        async with self._conn.execute(
            f"SELECT {_DOCUMENT}, m.speaker FROM memories m WHERE seq = ?", (memory.seq,)
        ) as cur:
            row = await cur.fetchone()
        if row is None:
            return 0.0
        return relevance.similarities([(_document(row[:4]), row[4])], analysed)[0]

    async def memories_by_seq(self, seqs: Sequence[int]) -> dict[int, Memory]:
        if not seqs:
            return {}
        found = await self._fetch_all(
            self._conn,
            f"SELECT {_COLUMNS} FROM memories m WHERE seq IN ({_placeholders(len(seqs))})",
            seqs,
        )
        return {m.seq: m for m in found}

    async def has_content(self, namespace: str, content_hash: str) -> bool:
        async with self._conn.execute(
            "SELECT 1 FROM memories WHERE namespace = ? AND content_hash = ?",
            (namespace, content_hash),
        ) as cur:
            return await cur.fetchone() is not None

    async def static_candidates(
        self, scope: Scope, limit: int, now: float, weights: Weights
    ) -> list[Candidate]:
        """The `limit` best memories by the query-less composite (semantic = 0).

        The expression mirrors `scoring.score` only to order rows inside SQLite; callers
        rescore the candidates with scoring.py, which stays the source of truth.
        """
        where, params = _scope_sql(scope)
        sql = (
            "SELECT m.seq, m.importance, m.created_at, m.access_count "
            f"FROM memories m WHERE {where} ORDER BY "
            f"{_STATIC_SCORE} DESC, m.seq DESC LIMIT ?"
        )
        args = (*params, weights.importance, weights.recency, now, weights.access, limit)
        async with self._conn.execute(sql, args) as cur:
            rows = await cur.fetchall()
        return [_ranked(r, 0.0) for r in rows]

    async def memories_matching_all(
        self, namespace: str, groups: Sequence[Sequence[str]], limit: int = 5_000
    ) -> list[Memory]:
        """Current memories of `namespace` whose own text holds every word of at least one
        group (the near-duplicate neighbours of consolidate). Words are letters and digits."""
        clauses = [" AND ".join(f'"{w}"' for w in group) for group in groups if group]
        if not clauses:
            return []
        match = "content : (" + " OR ".join(f"({c})" for c in clauses) + ")"
        sql = (
            f"SELECT {_M_COLUMNS} FROM memory_fts CROSS JOIN memories m "
            "ON m.seq = memory_fts.rowid WHERE memory_fts MATCH ? AND m.namespace = ? "
            "AND m.superseded_by IS NULL LIMIT ?"
        )
        return await self._fetch_all(self._conn, sql, (match, namespace, limit))

    async def content_vectors(self, seqs: Sequence[int]) -> dict[int, str]:
        """Stored content term vectors (" stem:tf", see bm25.encode) of memories by seq."""
        return {seq: str(v) for seq, v in (await self._column_by_seq("terms", seqs)).items()}

    async def term_sequences(self, seqs: Sequence[int]) -> dict[int, bytes]:
        """Stored content term sequences (analysis.packed_ids) of memories by seq."""
        return {seq: bytes(v) for seq, v in (await self._column_by_seq("term_seq", seqs)).items()}

    async def _column_by_seq(self, column: str, seqs: Sequence[int]) -> dict[int, Any]:
        """One column of memories by seq, read 900 seqs a statement (SQLite's host-parameter
        limit is 999)."""
        out: dict[int, Any] = {}
        for start in range(0, len(seqs), 900):
            chunk = tuple(seqs[start:start + 900])
            async with self._conn.execute(
                f"SELECT seq, {column} FROM memories "
                f"WHERE seq IN ({_placeholders(len(chunk))})", chunk,
            ) as cur:
                out.update((int(seq), value) for seq, value in await cur.fetchall())
        return out

    async def namespace_term_sequences(self, namespace: str) -> dict[int, bytes]:
        """`term_sequences` of every current memory of one namespace, in one read."""
        async with self._conn.execute(
            "SELECT seq, term_seq FROM memories WHERE namespace = ? AND superseded_by IS NULL",
            (namespace,),
        ) as cur:
            return {int(seq): bytes(ids) for seq, ids in await cur.fetchall()}

    async def namespace_doc_freq(
        self, namespace: str, terms: Sequence[str] | None = None
    ) -> tuple[int, dict[str, int]]:
        """(memories, per-term document count) of one namespace: every term it holds, or
        only `terms`. Another namespace's words never count (see consolidate)."""
        stats = await self.scope_stats(terms or (), [namespace])
        if terms is not None:
            return stats.docs, dict(stats.doc_freq)
        async with self._conn.execute(
            "SELECT term, df FROM namespace_terms WHERE namespace = ?", (namespace,)
        ) as cur:
            rows: Iterable[tuple[str, int]] = await cur.fetchall()  # type: ignore[assignment]
            return stats.docs, dict(rows)

    async def tier_facts_by_score(
        self,
        namespace: str,
        now: float,
        weights: Weights,
        *,
        at_least: float,
        archived_at_least: float,
    ) -> AsyncGenerator[TierFacts, None]:
        """See store.ranked_read. The recent memories come from the created_at index, pages
        from memories_gc, which holds every TierFacts column (inspect feeds ~1,000 of them to
        collector.Prediction at 100k), the most accesses from the access_count index."""
        head = (weights.importance, weights.recency, now, weights.access)
        keep = "gc_score >= ? AND (m.memory_type != 'archived' OR gc_score >= ?)"
        select = (f"SELECT {_TIER_COLUMNS_M}, {_STATIC_SCORE} AS gc_score FROM memories m "
                  "INDEXED BY {index} WHERE m.namespace = ? AND m.superseded_by IS NULL ")
        since = ranked_read.recent_since(now)

        def scored(r: Any) -> ranked_read.Scored[TierFacts]:
            return ranked_read.Scored(float(r[-1]), int(r[0]), float(r[_TIER_IMPORTANCE]),
                                      _tier_facts(r))

        async with self._conn.execute(
            select.format(index="memories_created") + f"AND m.created_at >= ? AND {keep}",
            (*head, namespace, since, at_least, archived_at_least),
        ) as cur:
            recent = [scored(r) for r in await cur.fetchall()]
        async with self._conn.execute(
            "SELECT max(access_count) FROM memories INDEXED BY memories_accessed "
            "WHERE namespace = ?", (namespace,),
        ) as cur:
            most = await cur.fetchone()
        rest = (select.format(index="memories_gc")
                + "AND m.created_at < ? AND m.importance >= ? {after} AND " + keep
                + " ORDER BY m.importance DESC, m.seq DESC LIMIT ?")

        async def page(
            lowest: float, after: ranked_read.After
        ) -> list[ranked_read.Scored[TierFacts]]:
            where = ("" if after is None
                     else "AND (m.importance < ? OR (m.importance = ? AND m.seq < ?))")
            args = (*head, namespace, since, lowest,
                    *(() if after is None else (after[0], after[0], after[1])),
                    at_least, archived_at_least, ranked_read.PAGE)
            async with self._conn.execute(rest.format(after=where), args) as cur:
                return [scored(r) for r in await cur.fetchall()]

        most_accesses = int(most[0]) if most and most[0] is not None else 0
        async with contextlib.aclosing(ranked_read.best_first(
                recent, most_accesses, weights, at_least, page)) as rows:
            async for row in rows:
                yield row

    async def namespace_memories(
        self,
        namespace: str,
        *,
        limit: int | None = None,
        tiers: Sequence[MemoryType] | None = None,
    ) -> list[Memory]:
        """Memories of one namespace, longest idle first."""
        sql = f"SELECT {_COLUMNS} FROM memories m WHERE namespace = ?"
        params: list[Any] = [namespace]
        if tiers:
            sql += f" AND memory_type IN ({_placeholders(len(tiers))})"
            params.extend(t.value for t in tiers)
        sql += " ORDER BY accessed_at, seq"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return await self._fetch_all(self._conn, sql, params)

    async def gc_facts(self, namespace: str) -> list[GCFacts]:
        """`namespace_memories` (same order) as the collector's lighter rows (see GCFacts)."""
        return (await self._gc_rows(namespace, vectors=False))[0]

    async def gc_facts_and_sequences(
        self, namespace: str
    ) -> tuple[list[GCFacts], dict[int, bytes]]:
        """`gc_facts`, and `namespace_term_sequences` from the same read (a whole-namespace
        plan with merges needs both: one pass over 100k rows instead of two)."""
        return await self._gc_rows(namespace, vectors=True)

    async def _gc_rows(
        self, namespace: str, *, vectors: bool
    ) -> tuple[list[GCFacts], dict[int, bytes]]:
        """Sorted here: SQLite would sort the rows, text included, in a temporary b-tree."""
        columns = f"{_FACT_COLUMNS}, term_seq" if vectors else _FACT_COLUMNS
        async with self._conn.execute(
            f"SELECT {columns} FROM memories WHERE namespace = ?", (namespace,),
        ) as cur:
            cur.row_factory = None  # tuples: 100k Rows cost more
            rows = list(await cur.fetchall())
        rows.sort(key=operator.itemgetter(_TIER_ACCESSED, 0))  # accessed_at, seq
        current = (r for r in rows if vectors and r[_TIER_SUPERSEDED] is None)
        return [_facts(r) for r in rows], {int(r[0]): bytes(r[-1]) for r in current}

    async def gc_window(self, namespace: str, limit: int) -> list[Memory]:
        """The next `limit` memories of a bounded GC run: after the namespace's cursor in
        insertion order, wrapping around, so repeated runs cover the whole namespace."""
        async with self._conn.execute(
            "SELECT seq FROM gc_cursors WHERE namespace = ?", (namespace,)
        ) as cur:
            row = await cur.fetchone()
        after = int(row[0]) if row else 0
        sql = (f"SELECT {_COLUMNS} FROM memories m WHERE namespace = ? AND seq > ? "
               "ORDER BY seq LIMIT ?")
        window = await self._fetch_all(self._conn, sql, (namespace, after, limit))
        if len(window) < limit and after > 0:
            more = await self._fetch_all(self._conn, sql, (namespace, 0, limit - len(window)))
            seen = {m.seq for m in window}
            window.extend(m for m in more if m.seq not in seen)
        return window

    async def session_memories(self, namespace: str, session_id: str) -> list[Memory]:
        return await self._fetch_all(
            self._conn,
            f"SELECT {_COLUMNS} FROM memories m WHERE namespace = ? AND session_id = ? "
            "ORDER BY seq",
            (namespace, session_id),
        )

    async def tier_tokens(self, namespace: str) -> dict[MemoryType, tuple[int, int]]:
        """Per tier: (memory count, token total)."""
        async with self._conn.execute(
            "SELECT memory_type, count(*), coalesce(sum(token_count), 0) FROM memories "
            "WHERE namespace = ? GROUP BY memory_type",
            (namespace,),
        ) as cur:
            rows = await cur.fetchall()
        return {MemoryType(t): (int(n), int(tok)) for t, n, tok in rows}

    async def count(self, namespace: str | None = None) -> int:
        sql = "SELECT count(*) FROM memories"
        params: tuple[str, ...] = ()
        if namespace is not None:
            sql, params = f"{sql} WHERE namespace = ?", (namespace,)
        async with self._conn.execute(sql, params) as cur:
            row = await cur.fetchone()
        return int(row[0]) if row else 0

    async def namespaces(self) -> list[str]:
        """Every namespace holding memories, sorted.

        A skip-scan down the namespace index (one seek per namespace): every open runs it
        (`store.open_store` folds path spellings), and DISTINCT walks the whole index instead
        (0.05 ms against 4 ms at 100,000 memories in 40 namespaces).
        """
        async with self._conn.execute(
            "WITH RECURSIVE ns(name) AS (SELECT min(namespace) FROM memories UNION ALL "
            "SELECT (SELECT min(namespace) FROM memories WHERE namespace > name) FROM ns "
            "WHERE name IS NOT NULL) SELECT name FROM ns WHERE name IS NOT NULL"
        ) as cur:
            return [str(r[0]) for r in await cur.fetchall()]

    async def labelled(
        self, value: str, namespaces: Sequence[str], limit: int
    ) -> list[Memory]:
        """Memories tagged with `value` or linking it as an entity (the graph's edges)."""
        sql = (
            f"SELECT DISTINCT {_M_COLUMNS} FROM memory_labels l "
            "JOIN memories m ON m.seq = l.seq "
            f"WHERE l.value = ? AND m.namespace IN ({_placeholders(len(namespaces))}) "
            "AND m.superseded_by IS NULL "
            "ORDER BY m.importance DESC, m.seq DESC LIMIT ?"
        )
        return await self._fetch_all(self._conn, sql, (value, *namespaces, limit))

    async def browse(self, where: Browse, before_seq: int | None, limit: int) -> list[Memory]:
        """Up to `limit` memories matching `where`, newest first, below `before_seq` (keyset
        pagination: a page costs the same at any depth)."""
        parts: list[str] = ["m.namespace = ?"]
        params: list[Any] = [where.namespace]
        if before_seq is not None:
            parts.append("m.seq < ?")
            params.append(before_seq)
        if where.memory_type is not None:
            parts.append("m.memory_type = ?")
            params.append(where.memory_type.value)
        for kind, value in (("tag", where.tag), ("entity", where.entity)):
            if value:
                parts.append("EXISTS (SELECT 1 FROM memory_labels l WHERE l.seq = m.seq "
                             "AND l.kind = ? AND l.value = ?)")
                params.extend((kind, value))
        if where.source:
            parts.append("json_extract(m.metadata, '$.source') = ?")
            params.append(where.source)
        # A narrow date range is read from the (namespace, created_at) index; a wide one
        # ("+" hides the index) walks seq order, which the newest-first page needs anyway.
        narrow = (where.since is not None and where.until is not None
                  and where.until - where.since <= NARROW_RANGE_S)
        column = "m.created_at" if narrow else "+m.created_at"
        if where.since is not None:
            parts.append(f"{column} >= ?")
            params.append(where.since)
        if where.until is not None:
            parts.append(f"{column} < ?")
            params.append(where.until)
        sql = (f"SELECT {_COLUMNS} FROM memories m WHERE {' AND '.join(parts)} "
               "ORDER BY m.seq DESC LIMIT ?")
        return await self._fetch_all(self._conn, sql, (*params, limit))

    async def created_range(self, namespace: str) -> tuple[float, float] | None:
        """(earliest, latest) creation time in the namespace, None when it is empty."""
        async with self._conn.execute(
            # One aggregate per subquery: SQLite then reads each end of the index only.
            "SELECT (SELECT min(created_at) FROM memories WHERE namespace = ?), "
            "(SELECT max(created_at) FROM memories WHERE namespace = ?)",
            (namespace, namespace),
        ) as cur:
            row = await cur.fetchone()
        return None if row is None or row[0] is None else (float(row[0]), float(row[1]))

    async def created_counts(
        self, namespace: str, starts: Sequence[float], width: float
    ) -> list[int]:
        """Memories created in [start, start + width) for each start: one range count per
        period on the (namespace, created_at) index, whatever the namespace's size."""
        async with self._conn.execute(
            "SELECT (SELECT count(*) FROM memories WHERE namespace = ? AND created_at >= "
            "j.value AND created_at < j.value + ?) FROM json_each(?) AS j ORDER BY j.key",
            (namespace, width, json.dumps(list(starts))),
        ) as cur:
            return [int(r[0]) for r in await cur.fetchall()]

    async def tagged_count(self, namespace: str, tag: str) -> int:
        async with self._conn.execute(
            "SELECT count(*) FROM memory_labels l JOIN memories m ON m.seq = l.seq "
            "WHERE l.value = ? AND l.kind = 'tag' AND m.namespace = ?", (tag, namespace),
        ) as cur:
            row = await cur.fetchone()
        return int(row[0]) if row else 0

    async def lineage(self, memory_id: str) -> list[LineageEvent]:
        async with self._conn.execute(
            "SELECT memory_id, event, at, from_tier, to_tier, score, reason, count, last_at "
            "FROM lineage WHERE memory_id = ? ORDER BY id",
            (memory_id,),
        ) as cur:
            rows = await cur.fetchall()
        return [
            LineageEvent(
                memory_id=r["memory_id"],
                event=r["event"],
                at=to_datetime(r["at"]),
                from_tier=MemoryType(r["from_tier"]) if r["from_tier"] else None,
                to_tier=MemoryType(r["to_tier"]) if r["to_tier"] else None,
                score=r["score"],
                reason=r["reason"],
                count=r["count"],
                last_at=to_datetime(r["last_at"]) if r["last_at"] is not None else None,
            )
            for r in rows
        ]

    async def lineage_namespace(self, memory_id: str) -> str | None:
        """The namespace a (possibly deleted) memory lived in, from its lineage."""
        async with self._conn.execute(
            "SELECT namespace FROM lineage WHERE memory_id = ? ORDER BY id LIMIT 1",
            (memory_id,),
        ) as cur:
            row = await cur.fetchone()
        return str(row[0]) if row else None

    async def check_consistency(self) -> Consistency:
        """Compare memories with the FTS index and label rows; used by tests and doctor."""
        conn = self._conn
        missing = await self._ints(
            conn,
            "SELECT seq FROM memories WHERE seq NOT IN (SELECT rowid FROM memory_fts) LIMIT 100",
        )
        orphaned = await self._ints(
            conn,
            "SELECT rowid FROM memory_fts WHERE rowid NOT IN (SELECT seq FROM memories) "
            "LIMIT 100",
        )
        mismatched = await self._ints(
            conn,
            "SELECT m.seq FROM memories m JOIN memory_fts f ON f.rowid = m.seq "
            "WHERE f.content IS NOT m.content LIMIT 100",
        )
        async with conn.execute(
            "SELECT seq, tags, linked_entities FROM memories"
        ) as cur:
            rows = list(await cur.fetchall())
        async with conn.execute("SELECT seq, kind, value FROM memory_labels") as cur:
            label_rows = await cur.fetchall()
        labels: dict[int, set[tuple[str, str]]] = {}
        for seq, kind, value in label_rows:
            labels.setdefault(int(seq), set()).add((str(kind), str(value)))
        for seq, tags, entities in rows:
            expected = {("tag", t) for t in json.loads(tags)} | {
                ("entity", e) for e in json.loads(entities)
            }
            if labels.get(int(seq), set()) != expected and len(mismatched) < 100:
                mismatched.append(int(seq))
        async with conn.execute("SELECT count(*) FROM memory_fts") as cur:
            row = await cur.fetchone()
        fts_rows = int(row[0]) if row else 0
        async with conn.execute(
            "SELECT coalesce(v.term, d.term) FROM "
            "(SELECT term, doc FROM memory_fts_colvocab WHERE col = 'content') AS v "
            "FULL JOIN term_df AS d ON d.term = v.term "
            "WHERE v.doc IS NOT d.df LIMIT 100"
        ) as cur:
            counts_off = [str(r[0]) for r in await cur.fetchall()]
        return Consistency(len(rows), fts_rows, missing, orphaned, mismatched, counts_off,
                           await self._vectors_off(), await self._namespace_stats_off())

    async def _vectors_off(self) -> list[int]:
        """Memories whose term vectors, term sequence or length differ from what their index
        row holds."""
        async with self._write_lock:  # temp-schema DDL on the shared connection
            await self._conn.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.consistency_instances "
                "USING fts5vocab(main, memory_fts, instance)"
            )
        expected: dict[int, dict[str, Counter[str]]] = {}
        async with self._conn.execute(
            "SELECT doc, col, term, count(*) FROM temp.consistency_instances "
            "GROUP BY doc, col, term"
        ) as cur:
            for doc, col, term, n in await cur.fetchall():
                expected.setdefault(int(doc), {}).setdefault(str(col), Counter())[str(term)] = n
        sequences: dict[int, list[str]] = {}
        async with self._conn.execute(
            "SELECT doc, term FROM temp.consistency_instances WHERE col = 'content' "
            "ORDER BY doc, offset"
        ) as cur:
            for doc, term in await cur.fetchall():
                sequences.setdefault(int(doc), []).append(str(term))
        off: list[int] = []
        async with self._conn.execute(
            "SELECT seq, terms, label_terms, context_terms, doc_len, term_seq FROM memories"
        ) as cur:
            for seq, *vectors, length, term_seq in await cur.fetchall():
                want = expected.get(int(seq), {})
                got = [bm25.decode(str(v)) for v in vectors]
                cols = [dict(want.get(c, {})) for c in ("content", "labels", "context")]
                packed = analysis.packed_ids(sequences.get(int(seq), []))
                if (got != cols or int(length) != sum(sum(c.values()) for c in cols)
                        or bytes(term_seq) != packed) and len(off) < 100:
                    off.append(int(seq))
        return off

    async def _namespace_stats_off(self) -> list[str]:
        """Namespaces whose kept document count, length or term counts are not their rows'."""
        async with self._conn.execute(
            "SELECT coalesce(m.namespace, s.namespace) FROM "
            "(SELECT namespace, count(*) AS docs, sum(doc_len) AS length FROM memories "
            " GROUP BY namespace) AS m FULL JOIN namespace_stats AS s "
            "ON s.namespace = m.namespace "
            "WHERE coalesce(m.docs, 0) IS NOT s.docs AND NOT (m.docs IS NULL AND s.docs = 0) "
            "OR coalesce(m.length, 0) IS NOT coalesce(s.length, 0)"
        ) as cur:
            off = [str(r[0]) for r in await cur.fetchall()]
        expected: dict[tuple[str, str], int] = {}
        async with self._conn.execute(
            "SELECT namespace, terms, label_terms FROM memories"
        ) as cur:
            for namespace, terms, labels in await cur.fetchall():
                for term in set(bm25.decode(str(terms))) | set(bm25.decode(str(labels))):
                    key = (str(namespace), term)
                    expected[key] = expected.get(key, 0) + 1
        async with self._conn.execute("SELECT namespace, term, df FROM namespace_terms") as cur:
            kept = {(str(a), str(b)): int(c) for a, b, c in await cur.fetchall()}
        off += sorted({ns for (ns, _), _ in (set(expected.items()) ^ set(kept.items()))})
        return sorted(set(off))[:100]

    # ------------------------------------------------------ hook injections

    async def injected_ids(self, session_id: str) -> set[str]:
        """Ids of the memories already injected into `session_id`'s context."""
        async with self._conn.execute(
            "SELECT memory_id FROM hook_injections WHERE session_id = ?", (session_id,)
        ) as cur:
            return {str(r[0]) for r in await cur.fetchall()}

    async def record_injections(
        self,
        session_id: str | None,
        memories: Sequence[Memory],
        now: float,
        *,
        forget_before: float,
        reason: str = "",
    ) -> None:
        """Count an access for memories put into a session's context and remember them there.

        One write: the access bump, the session's record (skipped without a session id) and
        dropping records older than `forget_before`, so the table cannot grow without bound.
        """
        if not memories:
            return
        async with self._write() as conn:
            await self._touch(conn, memories, now, reason=reason)
            if session_id is None:
                return
            await conn.execute("DELETE FROM hook_injections WHERE at < ?", (forget_before,))
            await conn.executemany(
                "INSERT OR REPLACE INTO hook_injections (session_id, memory_id, at) "
                "VALUES (?, ?, ?)",
                [(session_id, m.id, now) for m in memories],
            )

    async def clear_injections(
        self, session_id: str, now: float, *, forget_before: float
    ) -> int:
        """Forget what was injected into `session_id` and note when: its context was compacted
        or cleared, so it no longer holds what it had (see `context_reset_at`)."""
        async with self._write() as conn:
            cur = await conn.execute(
                "DELETE FROM hook_injections WHERE session_id = ?", (session_id,)
            )
            await conn.execute("DELETE FROM context_resets WHERE at < ?", (forget_before,))
            await conn.execute(
                "INSERT OR REPLACE INTO context_resets (session_id, at) VALUES (?, ?)",
                (session_id, now),
            )
            return max(cur.rowcount, 0)

    async def context_reset_at(self, session_id: str) -> float | None:
        """When `session_id`'s context was last compacted or cleared, if it was."""
        async with self._conn.execute(
            "SELECT at FROM context_resets WHERE session_id = ?", (session_id,)
        ) as cur:
            row = await cur.fetchone()
        return float(row[0]) if row else None

    async def integrity_check(self) -> str:
        async with self._conn.execute("PRAGMA integrity_check") as cur:
            rows = await cur.fetchall()
        return "\n".join(str(r[0]) for r in rows)

    async def move_namespace(self, old: str, new: str, now: float) -> int:
        """Fold namespace `old` into `new` (one project spelled two ways); how many moved.

        Its memories and their lineage move; one whose exact text `new` already holds is
        merged into that memory (labels united, accesses summed), as GC merges duplicates.
        Per-namespace state that only indexes `old` (the GC cursor) is dropped.
        """
        row = f"SELECT {_COLUMNS} FROM memories m WHERE namespace = ?"
        async with self._write() as conn:
            moving = await self._fetch_all(conn, row, (old,))
            for memory in moving:
                keep = await self._fetch_one(conn, row + " AND content_hash = ?",
                                             (new, memory.content_hash))
                if keep is not None:
                    await self._merge(conn, memory, keep, now, f"{old!r} is {new!r}",
                                      score=math.nan)
            await conn.execute("UPDATE memories SET namespace = ? WHERE namespace = ?",
                               (new, old))
            await conn.execute("UPDATE lineage SET namespace = ? WHERE namespace = ?",
                               (new, old))
            await conn.execute("DELETE FROM gc_cursors WHERE namespace = ?", (old,))
            await self._fold_statistics(conn, old, new)
            for session in {m.session_id for m in moving if m.session_id is not None}:
                async with conn.execute(
                    "SELECT seq FROM memories WHERE namespace = ? AND session_id = ?",
                    (new, session),
                ) as cur:
                    seqs = [int(r[0]) for r in await cur.fetchall()]
                await self._refresh_context(conn, new, session, seqs)
        return len(moving)

    @staticmethod
    async def _fold_statistics(conn: aiosqlite.Connection, old: str, new: str) -> None:
        """Add namespace `old`'s term statistics to `new`'s (its memories moved there)."""
        # "WHERE true": SQLite's parser needs it before ON CONFLICT in an INSERT ... SELECT.
        await conn.execute(
            "INSERT INTO namespace_terms (namespace, term, df) "
            "SELECT ?, term, df FROM namespace_terms WHERE namespace = ? AND true "
            "ON CONFLICT (namespace, term) DO UPDATE SET df = df + excluded.df",
            (new, old),
        )
        await conn.execute(
            "INSERT INTO namespace_stats (namespace, docs, length) "
            "SELECT ?, docs, length FROM namespace_stats WHERE namespace = ? AND true "
            "ON CONFLICT (namespace) DO UPDATE SET docs = docs + excluded.docs, "
            "length = length + excluded.length",
            (new, old),
        )
        await conn.execute("DELETE FROM namespace_terms WHERE namespace = ?", (old,))
        await conn.execute("DELETE FROM namespace_stats WHERE namespace = ?", (old,))

    async def memories_after(self, after_seq: int, limit: int) -> list[Memory]:
        return await self._fetch_all(
            self._conn, f"SELECT {_COLUMNS} FROM memories m WHERE seq > ? ORDER BY seq LIMIT ?",
            (after_seq, limit))

    async def lineage_after(self, after_id: int, limit: int) -> list[tuple[int, LineageRow]]:
        async with self._conn.execute(
            "SELECT id, memory_id, namespace, event, at, from_tier, to_tier, score, reason, "
            "count, last_at FROM lineage WHERE id > ? ORDER BY id LIMIT ?", (after_id, limit),
        ) as cur:
            return [(int(r[0]), tuple(r[1:])) for r in await cur.fetchall()]

    async def session_state(self) -> SessionState:
        async with self._conn.execute(
            "SELECT session_id, memory_id, at FROM hook_injections") as cur:
            injections = [(str(a), str(b), float(c)) for a, b, c in await cur.fetchall()]
        async with self._conn.execute("SELECT session_id, at FROM context_resets") as cur:
            resets = [(str(a), float(b)) for a, b in await cur.fetchall()]
        return SessionState(injections, resets)

    async def restore_session_state(self, state: SessionState) -> None:
        async with self._write() as conn:
            await conn.executemany(
                "INSERT INTO hook_injections (session_id, memory_id, at) VALUES (?, ?, ?) "
                "ON CONFLICT (session_id, memory_id) DO UPDATE SET at = max(at, excluded.at)",
                state.injections)
            await conn.executemany(
                "INSERT INTO context_resets (session_id, at) VALUES (?, ?) "
                "ON CONFLICT (session_id) DO UPDATE SET at = max(at, excluded.at)",
                state.resets)

    async def refresh_statistics(self) -> None:
        """Nothing: the SQLite store keeps no planner statistics (its queries and indexes are
        chosen for SQLite's defaults; ANALYZE would change plans measured without it)."""

    async def restore_lineage(self, rows: Sequence[Sequence[Any]]) -> int:
        """Insert lineage rows as read from another store (`doctor --repair`); how many.

        Each row holds memory_id, namespace, event, at, from_tier, to_tier, score, reason,
        count, last_at; one that does not fit the table is left out.
        """
        restored = 0
        async with self._write() as conn:
            for row in rows:
                try:
                    await conn.execute(
                        "INSERT INTO lineage (memory_id, namespace, event, at, from_tier, "
                        "to_tier, score, reason, count, last_at) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", tuple(row))
                except sqlite3.IntegrityError:
                    continue
                restored += 1
        return restored

    # -------------------------------------------------------------- internals

    @staticmethod
    async def _fetch_one(
        conn: aiosqlite.Connection, sql: str, params: Sequence[Any]
    ) -> Memory | None:
        async with conn.execute(sql, tuple(params)) as cur:
            row = await cur.fetchone()
        return _memory(row) if row is not None else None

    @staticmethod
    async def _fetch_all(
        conn: aiosqlite.Connection, sql: str, params: Sequence[Any]
    ) -> list[Memory]:
        async with conn.execute(sql, tuple(params)) as cur:
            rows = await cur.fetchall()
        return [_memory(r) for r in rows]

    @staticmethod
    async def _ints(conn: aiosqlite.Connection, sql: str) -> list[int]:
        async with conn.execute(sql) as cur:
            return [int(r[0]) for r in await cur.fetchall()]

    async def _insert_row(
        self, conn: aiosqlite.Connection, memory: Memory, reason: str | None
    ) -> int:
        """Memory row, label rows, FTS row and (with a reason) the `created` lineage event;
        returns seq."""
        cur = await conn.execute(
            f"INSERT INTO memories ({_COLUMNS.split(', ', 1)[1]}) VALUES ({_placeholders(16)})",
            (
                memory.id, memory.namespace, memory.content, memory.memory_type.value,
                memory.importance, json.dumps(memory.tags), json.dumps(memory.linked_entities),
                memory.token_count, memory.access_count, memory.created_at.timestamp(),
                memory.accessed_at.timestamp(), json.dumps(memory.metadata),
                memory.session_id, memory.content_hash, memory.superseded_by, memory.author,
            ),
        )
        seq = cur.lastrowid
        assert seq is not None
        await conn.execute(
            "UPDATE memories SET speaker = ? WHERE seq = ?", (speaker_of(memory.content), seq)
        )
        await self._write_labels(conn, seq, memory.tags, memory.linked_entities)
        labels = _labels_text(memory.tags, memory.linked_entities)
        await conn.execute(
            "INSERT INTO namespace_stats (namespace, docs, length) VALUES (?, 1, 0) "
            "ON CONFLICT (namespace) DO UPDATE SET docs = docs + 1",
            (memory.namespace,),
        )
        content_terms = await self._set_own_terms(conn, seq, memory.namespace,
                                                  memory.content, labels)
        earlier = await self._neighbours(conn, memory.namespace, memory.session_id, seq)
        await conn.execute(
            "INSERT INTO memory_fts (rowid, content, labels, context) VALUES (?, ?, ?, ?)",
            (seq, memory.content, labels, " ".join(text for _, text in earlier)),
        )
        await self._set_context_terms(conn, seq, memory.namespace, [s for s, _ in earlier])
        await self._refresh_context(conn, memory.namespace, memory.session_id,
                                    [s for s, _ in earlier])
        await self._count_terms(conn, content_terms, +1)
        if reason is not None:
            await self._lineage(
                conn, memory.id, memory.namespace, "created", memory.created_at.timestamp(),
                to_tier=memory.memory_type, reason=reason,
            )
        return seq

    @staticmethod
    async def _neighbours(
        conn: aiosqlite.Connection, namespace: str, session_id: str | None, seq: int
    ) -> list[tuple[int, str]]:
        """(seq, content) of up to CONTEXT_RADIUS memories of the session on each side."""
        if session_id is None:
            return []
        async with conn.execute(
            "SELECT seq, content FROM (SELECT seq, content FROM memories "
            "WHERE namespace = ? AND session_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?) "
            "UNION ALL SELECT seq, content FROM (SELECT seq, content FROM memories "
            "WHERE namespace = ? AND session_id = ? AND seq > ? ORDER BY seq LIMIT ?) "
            "ORDER BY seq",
            (namespace, session_id, seq, CONTEXT_RADIUS) * 2,
        ) as cur:
            return [(int(r[0]), str(r[1])) for r in await cur.fetchall()]

    async def _refresh_context(
        self,
        conn: aiosqlite.Connection,
        namespace: str,
        session_id: str | None,
        seqs: Sequence[int],
    ) -> None:
        """Rewrite the `context` column and vector of `seqs` from their current neighbours."""
        for seq in seqs:
            around = await self._neighbours(conn, namespace, session_id, seq)
            await conn.execute(
                "UPDATE memory_fts SET context = ? WHERE rowid = ?",
                (" ".join(text for _, text in around), seq),
            )
            await self._set_context_terms(conn, seq, namespace, [s for s, _ in around])

    async def _set_own_terms(
        self, conn: aiosqlite.Connection, seq: int, namespace: str, content: str, labels: str
    ) -> set[str]:
        """(Re)write a memory's own-text vectors, keeping its namespace's document counts and
        length in step; returns the terms of its content."""
        counts: tuple[Counter[str], Counter[str]] = (Counter(), Counter())
        sequence: list[str] = []
        for term, doc in analysis.tokens([content, labels]):
            counts[doc][term] += 1
            if doc == 0:
                sequence.append(term)
        async with conn.execute(
            "SELECT terms, label_terms FROM memories WHERE seq = ?", (seq,)
        ) as cur:
            row = await cur.fetchone()
        old_terms, old_labels = (str(row[0]), str(row[1])) if row else ("", "")
        before = set(bm25.decode(old_terms)) | set(bm25.decode(old_labels))
        after = set(counts[0]) | set(counts[1])
        await self._count_namespace_terms(conn, namespace, after - before, +1)
        await self._count_namespace_terms(conn, namespace, before - after, -1)
        delta = (sum(counts[0].values()) + sum(counts[1].values())
                 - bm25.length(old_terms) - bm25.length(old_labels))
        await conn.execute(
            "UPDATE memories SET terms = ?, label_terms = ?, term_seq = ?, "
            "doc_len = doc_len + ? WHERE seq = ?",
            (bm25.encode(counts[0]), bm25.encode(counts[1]), analysis.packed_ids(sequence),
             delta, seq),
        )
        await self._add_length(conn, namespace, delta)
        return set(counts[0])

    async def _set_context_terms(
        self, conn: aiosqlite.Connection, seq: int, namespace: str, neighbours: Sequence[int]
    ) -> None:
        """A memory's context vector: the sum of its neighbours' content vectors (the
        `context` column holds their text)."""
        vectors: list[str] = []
        if neighbours:
            async with conn.execute(
                f"SELECT terms FROM memories WHERE seq IN ({_placeholders(len(neighbours))})",
                tuple(neighbours),
            ) as cur:
                vectors = [str(r[0]) for r in await cur.fetchall()]
        context = bm25.add(vectors)
        async with conn.execute(
            "SELECT context_terms FROM memories WHERE seq = ?", (seq,)
        ) as cur:
            row = await cur.fetchone()
        delta = sum(context.values()) - bm25.length(str(row[0]) if row else "")
        await conn.execute(
            "UPDATE memories SET context_terms = ?, doc_len = doc_len + ? WHERE seq = ?",
            (bm25.encode(context), delta, seq),
        )
        await self._add_length(conn, namespace, delta)

    @staticmethod
    async def _add_length(conn: aiosqlite.Connection, namespace: str, delta: int) -> None:
        if delta:
            await conn.execute(
                "UPDATE namespace_stats SET length = length + ? WHERE namespace = ?",
                (delta, namespace),
            )

    @staticmethod
    async def _count_namespace_terms(
        conn: aiosqlite.Connection, namespace: str, terms: AbstractSet[str], delta: int
    ) -> None:
        if not terms:
            return
        ordered = sorted(terms)
        await conn.executemany(
            "INSERT INTO namespace_terms (namespace, term, df) VALUES (?, ?, ?) "
            "ON CONFLICT (namespace, term) DO UPDATE SET df = df + excluded.df",
            [(namespace, t, delta) for t in ordered],
        )
        if delta < 0:
            await conn.execute(
                "DELETE FROM namespace_terms WHERE df <= 0 AND namespace = ? "
                f"AND term IN ({_placeholders(len(ordered))})",
                (namespace, *ordered),
            )

    @staticmethod
    async def _count_terms(
        conn: aiosqlite.Connection, content_terms: AbstractSet[str], delta: int
    ) -> None:
        """Add `delta` to the index-wide document frequency of each term of a content (what
        bounds a query's cost: FTS5 walks a term's postings across every namespace)."""
        terms = sorted(content_terms)
        if not terms:
            return
        await conn.executemany(
            "INSERT INTO term_df (term, df) VALUES (?, ?) "
            "ON CONFLICT (term) DO UPDATE SET df = df + excluded.df",
            [(t, delta) for t in terms],
        )
        if delta < 0:
            await conn.execute(
                f"DELETE FROM term_df WHERE df <= 0 AND term IN ({_placeholders(len(terms))})",
                terms,
            )

    @staticmethod
    async def _write_labels(
        conn: aiosqlite.Connection, seq: int, tags: Iterable[str], entities: Iterable[str]
    ) -> None:
        rows = [(seq, "tag", t) for t in tags] + [(seq, "entity", e) for e in entities]
        if rows:
            await conn.executemany(
                "INSERT OR IGNORE INTO memory_labels (seq, kind, value) VALUES (?, ?, ?)", rows
            )

    @staticmethod
    async def _lineage(
        conn: aiosqlite.Connection,
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
        await conn.execute(
            "INSERT INTO lineage (memory_id, namespace, event, at, from_tier, to_tier, score, "
            "reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                memory_id, namespace, event, at,
                from_tier.value if from_tier else None,
                to_tier.value if to_tier else None,
                score if score is None or math.isfinite(score) else None,
                reason,
            ),
        )

    async def _touch(
        self, conn: aiosqlite.Connection, memories: Sequence[Memory], now: float, reason: str
    ) -> None:
        """Bump access counts; coalesce into the latest lineage row when it is an access."""
        seqs = [m.seq for m in memories]
        await conn.execute(
            "UPDATE memories SET access_count = access_count + 1, accessed_at = ? "
            f"WHERE seq IN ({_placeholders(len(seqs))})",
            (now, *seqs),
        )
        ids = [m.id for m in memories]
        async with conn.execute(
            "UPDATE lineage SET count = count + 1, last_at = ? WHERE event = 'accessed' AND id IN "
            "(SELECT max(id) FROM lineage "
            f"WHERE memory_id IN ({_placeholders(len(ids))}) GROUP BY memory_id) "
            "RETURNING memory_id",
            (now, *ids),
        ) as cur:
            coalesced = {str(r[0]) for r in await cur.fetchall()}
        fresh = [m for m in memories if m.id not in coalesced]
        if fresh:
            await conn.executemany(
                "INSERT INTO lineage (memory_id, namespace, event, at, reason, last_at) "
                "VALUES (?, ?, 'accessed', ?, ?, ?)",
                [(m.id, m.namespace, now, reason, now) for m in fresh],
            )

    async def _delete(
        self,
        conn: aiosqlite.Connection,
        memory: Memory,
        now: float,
        reason: str,
        score: float | None = None,
    ) -> bool:
        """Delete the memory with its index rows; False if it was already gone."""
        around = await self._neighbours(conn, memory.namespace, memory.session_id, memory.seq)
        async with conn.execute(
            "DELETE FROM memories WHERE seq = ? RETURNING terms, label_terms, doc_len",
            (memory.seq,),
        ) as cur:
            gone = await cur.fetchone()
        if gone is None:
            return False
        await conn.execute("DELETE FROM memory_fts WHERE rowid = ?", (memory.seq,))
        content_terms = set(bm25.decode(str(gone[0])))
        await self._count_terms(conn, content_terms, -1)
        await self._count_namespace_terms(
            conn, memory.namespace, content_terms | set(bm25.decode(str(gone[1]))), -1)
        await conn.execute(
            "UPDATE namespace_stats SET docs = docs - 1, length = length - ? WHERE namespace = ?",
            (int(gone[2]), memory.namespace),
        )
        await self._refresh_context(conn, memory.namespace, memory.session_id,
                                    [s for s, _ in around])
        await self._lineage(
            conn, memory.id, memory.namespace, "deleted", now,
            from_tier=memory.memory_type, score=score, reason=reason,
        )
        return True

    async def _supersede(
        self, conn: aiosqlite.Connection, old: Memory, new_id: str, now: float
    ) -> None:
        """Archive `old` and point it at its correction."""
        await conn.execute(
            "UPDATE memories SET memory_type = 'archived', superseded_by = ? WHERE seq = ?",
            (new_id, old.seq),
        )
        await self._lineage(
            conn, old.id, old.namespace, "supersede", now, from_tier=old.memory_type,
            to_tier=MemoryType.ARCHIVED, reason=f"superseded by {new_id}",
        )

    async def _merge(
        self,
        conn: aiosqlite.Connection,
        gone: Memory,
        keep: Memory,
        now: float,
        reason: str,
        score: float,
    ) -> None:
        """Fold `gone` into `keep`: union of labels, summed access counts; `gone` is deleted.

        Skipped when either memory is gone by now (the plan came from an earlier snapshot).
        """
        row = f"SELECT {_COLUMNS} FROM memories m WHERE seq = ?"
        current = await self._fetch_one(conn, row, (keep.seq,))
        gone_now = await self._fetch_one(conn, row, (gone.seq,))
        if current is None or gone_now is None:
            return
        gone = gone_now
        tags = list(dict.fromkeys([*current.tags, *gone.tags]))
        entities = list(dict.fromkeys([*current.linked_entities, *gone.linked_entities]))
        await conn.execute(
            "UPDATE memories SET tags = ?, linked_entities = ?, "
            "access_count = access_count + ? WHERE seq = ?",
            (json.dumps(tags), json.dumps(entities), gone.access_count, keep.seq),
        )
        await self._write_labels(conn, keep.seq, tags, entities)
        labels = _labels_text(tags, entities)
        await conn.execute("UPDATE memory_fts SET labels = ? WHERE rowid = ?", (labels, keep.seq))
        await self._set_own_terms(conn, keep.seq, keep.namespace, current.content, labels)
        await self._lineage(
            conn, keep.id, keep.namespace, "merge", now, from_tier=keep.memory_type,
            to_tier=keep.memory_type, score=score, reason=f"absorbed {gone.id}: {reason}",
        )
        await self._lineage(
            conn, gone.id, gone.namespace, "merge", now, from_tier=gone.memory_type,
            score=score, reason=f"merged into {keep.id}: {reason}",
        )
        await self._delete(conn, gone, now, reason=f"merged into {keep.id}")
