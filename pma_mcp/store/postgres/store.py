"""PostgresStore: the `Store` on a PostgreSQL server shared by a team.

Connections: an asyncpg pool of MIN_CONNECTIONS..MAX_CONNECTIONS (libpq conventions:
PGPASSWORD, ~/.pgpass, PG* variables, sslmode; `options=-csearch_path=...` in the URL picks
the schema). Reads take any pooled connection; writes are serialised by this store (one write
transaction at a time per process, as SQLiteStore does) and across processes by the
namespace advisory locks of index.Writer. A write transaction that loses a deadlock or a
serialization check is run again (WRITE_ATTEMPTS); a write is acknowledged only once its
COMMIT returned. A connection cut by a restart or a network fault fails that call with
StorageUnavailableError; the pool replaces the connection, so the next call works again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import random
import time
from collections import Counter
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Sequence,
)
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import asyncpg

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
from pma_mcp.store.postgres import bulk, faults, schema, search
from pma_mcp.store.postgres import url as urls
from pma_mcp.store.postgres.index import COLUMNS, M_COLUMNS, Conn, Writer, memory_of, postings_of
from pma_mcp.store.postgres.index import labels_text as _labels_text

log = logging.getLogger(__name__)

T = TypeVar("T")

MIN_CONNECTIONS = 1
MAX_CONNECTIONS = 4
BUSY_TIMEOUT_MS = 15_000
"""lock_timeout of every connection: how long a write waits for another writer."""
WRITE_ATTEMPTS = 5
APPLICATION_NAME = "pma-mcp"
"""How the server lists our connections, unless the URL names one (application_name=)."""
NARROW_RANGE_S = 31 * 86_400.0


def _static_score(p: search.Params, weights: Weights, now: float) -> str:
    """The query-less composite of scoring.score over alias m, in float8 throughout (a bare
    literal would make it numeric, rounded unlike Python's floats, and reorder near-ties);
    recency's exponent is capped: PostgreSQL's exp() raises on underflow."""
    return (f"({p(weights.importance)}::float8 * m.importance + {p(weights.recency)}::float8 "
            "* exp(-least(0.1::float8 * greatest(0::float8, "
            f"({p(now)}::float8 - m.created_at) / 3600::float8), 700::float8)) "
            f"+ {p(weights.access)}::float8 * least(ln(1::float8 + m.access_count) "
            "/ 10::float8, 1::float8))")


_TIER_COLUMNS = ("seq, memory_type, importance, token_count, access_count, created_at, "
                 "accessed_at, superseded_by")
_FACT_COLUMNS = f"{_TIER_COLUMNS}, id, namespace, content"


def _tier_facts(row: asyncpg.Record) -> TierFacts:
    return TierFacts(
        seq=int(row["seq"]), memory_type=MemoryType(row["memory_type"]),
        importance=float(row["importance"]), token_count=int(row["token_count"]),
        access_count=int(row["access_count"]), created_epoch=stored_epoch(row["created_at"]),
        accessed_epoch=stored_epoch(row["accessed_at"]), superseded_by=row["superseded_by"])


def _facts(row: asyncpg.Record) -> GCFacts:
    return GCFacts(int(row[0]), MemoryType(row[1]), float(row[2]), int(row[3]), int(row[4]),
                   stored_epoch(row[5]), stored_epoch(row[6]), row[7], row[8], row[9],
                   row[10])


def _gc_rows(
    p: search.Params,
    weights: Weights,
    now: float,
    at_least: float,
    archived_at_least: float,
    where: str,
    tail: str = "",
) -> str:
    """tier_facts_by_score's SQL: TierFacts columns and gc_score of the memories `where`
    selects whose score reaches the thresholds (placeholders are numbered by `p`)."""
    columns = ", ".join(f"m.{c.strip()}" for c in _TIER_COLUMNS.split(","))
    return (f"SELECT * FROM (SELECT {columns}, "
            f"{_static_score(p, weights, now)} AS gc_score FROM memories m "
            f"WHERE {where}) s WHERE gc_score >= {p(at_least)}::float8 AND (memory_type "
            f"!= 'archived' OR gc_score >= {p(archived_at_least)}::float8) {tail}")


def _ranked(row: asyncpg.Record, semantic: float) -> Candidate:
    return Candidate(seq=int(row["seq"]), semantic=semantic, importance=float(row["importance"]),
                     created_at=float(row["created_at"]),
                     access_count=int(row["access_count"]))


def _document(row: asyncpg.Record) -> bm25.Document:
    return bm25.Document(row["terms"], row["label_terms"], row["context_terms"],
                         int(row["doc_len"]))


def _editable(m: Memory) -> tuple[object, ...]:
    return (m.content, m.importance, m.memory_type, m.tags, m.linked_entities, m.metadata)


class PostgresStore:
    """The one door to a PostgreSQL database. Open with `await PostgresStore.open(url)`."""

    def __init__(self, pool: asyncpg.Pool, url: str) -> None:
        self._pool = pool
        self._url = url
        self._write_lock = asyncio.Lock()

    @classmethod
    async def open(cls, url: str, *, busy_timeout_ms: int | None = None) -> PostgresStore:
        """Connect, migrate the schema forward and fold uncanonical namespaces.

        Raises StorageUnavailableError when the server cannot be reached, StorageError otherwise.
        """
        timeout = BUSY_TIMEOUT_MS if busy_timeout_ms is None else busy_timeout_ms
        with faults.mapped(url):
            try:
                pool = await asyncpg.create_pool(
                    url, min_size=MIN_CONNECTIONS, max_size=MAX_CONNECTIONS,
                    server_settings={"lock_timeout": str(int(timeout)),
                                     "application_name": urls.query_value(
                                         url, "application_name") or APPLICATION_NAME})
            except ValueError as exc:  # a malformed URL or option
                raise StorageError(f"cannot use database URL {urls.location(url)}: "
                                   f"{urls.redact(str(exc), url)}") from None
        store = cls(pool, url)
        try:
            with faults.mapped(url):
                async with pool.acquire() as conn:
                    try:
                        found, latest = await schema.migrate(conn)
                    except ValueError as exc:
                        raise StorageError(str(exc)) from None
            if found != latest:
                log.info("migrated PostgreSQL schema at %s from v%d to v%d",
                         urls.location(url), found, latest)
        except BaseException:
            await pool.close()
            raise
        return store

    @classmethod
    async def open_existing(cls, url: str) -> PostgresStore:
        """Connect without creating or migrating anything (doctor): one connection."""
        with faults.mapped(url):
            try:
                pool = await asyncpg.create_pool(
                    url, min_size=1, max_size=1,
                    server_settings={"application_name": urls.query_value(
                        url, "application_name") or APPLICATION_NAME})
            except ValueError as exc:
                raise StorageError(f"cannot use database URL {urls.location(url)}: "
                                   f"{urls.redact(str(exc), url)}") from None
        return cls(pool, url)

    async def close(self) -> None:
        with faults.mapped(self._url):
            await self._pool.close()

    @property
    def backend(self) -> str:
        return "postgresql"

    @property
    def location(self) -> str:
        return urls.location(self._url)

    async def schema_version(self) -> int:
        async with self._read() as conn:
            return await schema.current_version(conn)

    async def refresh_statistics(self) -> None:
        """VACUUM ANALYZE this store's tables: a bulk-loaded store otherwise answers with
        guessed plans until autovacuum gets to it."""
        async with self._read() as conn:
            await conn.execute(f"VACUUM ANALYZE {', '.join(schema.TABLES)}")

    # ------------------------------------------------------------ plumbing

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[Conn]:
        """A pooled connection, driver errors inside the block mapped (faults.mapped)."""
        with faults.mapped(self._url):
            async with self._pool.acquire() as conn:
                yield conn

    async def _query(self, method: str, sql: str, *args: Any) -> Any:
        """`conn.<method>(sql, *args)` on a pooled connection. A read changes nothing, so
        one that lost its connection (idle in the pool when the server restarted) is run
        once more on a new one before StorageUnavailableError."""
        with faults.mapped(self._url):
            for attempt in (1, 2):
                try:
                    async with self._pool.acquire() as conn:
                        return await getattr(conn, method)(sql, *args)
                except Exception as exc:
                    if attempt == 2 or not faults.lost(exc):
                        raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def _fetch(self, sql: str, *args: Any) -> list[asyncpg.Record]:
        return list(await self._query("fetch", sql, *args))

    async def _fetchrow(self, sql: str, *args: Any) -> asyncpg.Record | None:
        row: asyncpg.Record | None = await self._query("fetchrow", sql, *args)
        return row

    async def _fetchval(self, sql: str, *args: Any) -> Any:
        return await self._query("fetchval", sql, *args)

    async def _memories(self, sql: str, *args: Any) -> list[Memory]:
        return [memory_of(r) for r in await self._fetch(sql, *args)]

    async def _transact(
        self, namespaces: Iterable[str], body: Callable[[Writer], Awaitable[T]]
    ) -> T:
        """Run `body` in one write transaction holding the namespaces' locks; returns once
        COMMIT did. Deadlock and serialization losers are run again a few times, and so is
        a transaction whose BEGIN found its pooled connection gone (nothing was sent yet); a
        connection lost after BEGIN is StorageUnavailableError: the caller cannot know whether
        the COMMIT landed, and retries the call (inserts dedupe by content)."""
        locked = sorted(set(namespaces))
        async with self._write_lock:
            with faults.mapped(self._url):
                for attempt in range(1, WRITE_ATTEMPTS + 1):
                    begun = False
                    try:
                        async with self._pool.acquire() as conn, conn.transaction():
                            begun = True
                            writer = Writer(conn)
                            await writer.lock(locked)
                            result = await body(writer)
                            await writer.flush()
                        return result
                    except faults.RETRYABLE_IN_TRANSACTION:
                        if attempt == WRITE_ATTEMPTS:
                            raise
                    except Exception as exc:
                        if begun or attempt == WRITE_ATTEMPTS or not faults.lost(exc):
                            raise
                    await asyncio.sleep(random.uniform(0.005, 0.02) * 2 ** attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    # ---------------------------------------------------------------- writes

    async def insert(
        self, memory: Memory, *, supersedes: Memory | None = None, reason: str = ""
    ) -> tuple[Memory, bool]:
        now = memory.created_at.timestamp()

        async def body(w: Writer) -> tuple[Memory, bool]:
            existing = await w.fetch_one(
                f"SELECT {COLUMNS} FROM memories WHERE namespace = $1 AND content_hash = $2",
                memory.namespace, memory.content_hash)
            if existing is None:
                seq = await w.insert_row(memory, reason or "stored")
                if supersedes is not None:
                    await w.supersede(supersedes, memory.id, now)
                stored = await w.by_seq(seq)
                assert stored is not None
                return stored, False
            if existing.superseded_by is not None:
                # Stored again after being corrected away: it is current once more.
                await w.conn.execute(
                    "UPDATE memories SET superseded_by = NULL, memory_type = $1 WHERE seq = $2",
                    memory.memory_type.value, existing.seq)
                w.mark(existing.seq)
                await w.lineage(existing.id, existing.namespace, "promote", now,
                                from_tier=existing.memory_type, to_tier=memory.memory_type,
                                reason="stored again after it was superseded: current again")
            if supersedes is not None and supersedes.seq != existing.seq:
                await w.supersede(supersedes, existing.id, now)
            await w.touch([existing], now, reason="exact duplicate stored again")
            refreshed = await w.by_seq(existing.seq)
            assert refreshed is not None
            return refreshed, True

        spaces = [memory.namespace] + ([supersedes.namespace] if supersedes else [])
        return await self._transact(spaces, body)

    async def insert_many(
        self,
        memories: Sequence[Memory],
        *,
        skip_existing: bool,
        progress: Callable[[int], None] | None = None,
        lineage: bool = True,
    ) -> int:
        async def body(w: Writer) -> int:
            chosen = await bulk.accepted(w, memories, skip_existing, progress)
            await bulk.insert(w, chosen, "imported" if lineage else None)
            return len(chosen)

        return await self._transact({m.namespace for m in memories}, body)

    async def touch(self, memories: Sequence[Memory], now: float, reason: str = "") -> None:
        if not memories:
            return

        async def body(w: Writer) -> None:
            await w.touch(memories, now, reason)

        await self._transact({m.namespace for m in memories}, body)

    async def delete(self, memory: Memory, now: float, reason: str) -> None:
        async def body(w: Writer) -> None:
            await w.delete(memory, now, reason)

        await self._transact([memory.namespace], body)

    async def edit(self, old: Memory, new: Memory, now: float, reason: str) -> Memory:
        async def body(w: Writer) -> Memory:
            current = await w.by_seq(old.seq)
            if current is None or current.id != old.id:
                raise NotFoundError(f"memory {old.id} was deleted meanwhile; nothing was edited")
            if _editable(current) != _editable(old):
                raise StorageError(f"memory {old.id} was changed by another writer meanwhile; "
                                   "nothing was edited: read it again and retry")
            if new.content_hash != old.content_hash:
                clash = await w.conn.fetchval(
                    "SELECT id FROM memories WHERE namespace = $1 AND content_hash = $2 "
                    "AND seq != $3", old.namespace, new.content_hash, old.seq)
                if clash is not None:
                    raise InvalidInputError("content", f"is already stored as memory {clash}; "
                                       "edit or forget that one instead")
            before = await w.conn.fetchval("SELECT terms FROM memories WHERE seq = $1",
                                           old.seq)
            await w.conn.execute(
                "UPDATE memories SET content = $1, content_hash = $2, token_count = $3, "
                "speaker = $4, importance = $5, memory_type = $6, tags = $7, "
                "linked_entities = $8, metadata = $9 WHERE seq = $10",
                new.content, new.content_hash, new.token_count, speaker_of(new.content),
                new.importance, new.memory_type.value, json.dumps(new.tags),
                json.dumps(new.linked_entities), json.dumps(new.metadata), old.seq)
            await w.conn.execute("DELETE FROM memory_labels WHERE seq = $1", old.seq)
            await w.write_labels(old.seq, new.tags, new.linked_entities)
            new_terms = await w.set_own_terms(old.seq, old.namespace, new.content,
                                              _labels_text(new.tags, new.linked_entities))
            if new.content != old.content:
                w.count_terms(set(bm25.decode(str(before or ""))), -1)
                w.count_terms(new_terms, +1)
                await w.refresh_context(old.namespace, old.session_id,
                                        await w.neighbours(old.namespace, old.session_id,
                                                           old.seq))
            moved = new.memory_type != old.memory_type
            await w.lineage(old.id, old.namespace, "edited", now,
                            from_tier=old.memory_type if moved else None,
                            to_tier=new.memory_type if moved else None, reason=reason)
            edited = await w.by_seq(old.seq)
            assert edited is not None
            return edited

        return await self._transact([old.namespace], body)

    async def apply_gc(
        self,
        decisions: Sequence[GCDecision],
        memories: dict[str, Memory],
        now: float,
        cursor: tuple[str, int] | None = None,
        *,
        batch: GCBatching | None = None,
    ) -> int:
        """As SQLiteStore.apply_gc: short transactions (at most `batch.changes` changes or
        `batch.seconds` each), a pause between them, the cursor with the last one."""
        limits = batch or GCBatching()
        pending = list(decisions)
        spaces = {m.namespace for m in memories.values()} | ({cursor[0]} if cursor else set())
        done = 0
        transactions = 0
        while True:
            start = done

            async def body(w: Writer, start: int = start) -> int:
                began = time.monotonic()
                at = start
                while at < len(pending) and at - start < limits.changes and (
                    at == start or time.monotonic() - began < limits.seconds
                ):
                    await w.apply_decision(pending[at], memories, now)
                    at += 1
                if at >= len(pending) and cursor is not None:
                    await w.conn.execute(
                        "INSERT INTO gc_cursors (namespace, seq) VALUES ($1, $2) "
                        "ON CONFLICT (namespace) DO UPDATE SET seq = excluded.seq", *cursor)
                return at

            done = await self._transact(spaces, body)
            transactions += 1
            if done >= len(pending):
                return transactions
            await asyncio.sleep(limits.pause)

    async def record_injections(
        self,
        session_id: str | None,
        memories: Sequence[Memory],
        now: float,
        *,
        forget_before: float,
        reason: str = "",
    ) -> None:
        if not memories:
            return

        async def body(w: Writer) -> None:
            await w.touch(memories, now, reason)
            if session_id is None:
                return
            await w.conn.execute("DELETE FROM hook_injections WHERE at < $1", forget_before)
            await w.conn.execute(
                "INSERT INTO hook_injections (session_id, memory_id, at) "
                "SELECT $1, i, $3 FROM unnest($2::text[]) AS i "
                "ON CONFLICT (session_id, memory_id) DO UPDATE SET at = excluded.at",
                session_id, sorted({m.id for m in memories}), now)

        await self._transact({m.namespace for m in memories}, body)

    async def clear_injections(
        self, session_id: str, now: float, *, forget_before: float
    ) -> int:
        async def body(w: Writer) -> int:
            gone = await w.conn.fetch(
                "DELETE FROM hook_injections WHERE session_id = $1 RETURNING 1", session_id)
            await w.conn.execute("DELETE FROM context_resets WHERE at < $1", forget_before)
            await w.conn.execute(
                "INSERT INTO context_resets (session_id, at) VALUES ($1, $2) "
                "ON CONFLICT (session_id) DO UPDATE SET at = excluded.at", session_id, now)
            return len(gone)

        return await self._transact((), body)

    async def move_namespace(self, old: str, new: str, now: float) -> int:
        """As SQLiteStore.move_namespace: memories, postings and lineage move; one whose
        text `new` already holds is merged into that memory."""
        async def body(w: Writer) -> int:
            row = f"SELECT {COLUMNS} FROM memories WHERE namespace = $1"
            moving = await w.fetch_all(row + " ORDER BY seq", old)
            for memory in moving:
                keep = await w.fetch_one(row + " AND content_hash = $2", new,
                                         memory.content_hash)
                if keep is not None:
                    await w.merge(memory, keep, now, f"{old!r} is {new!r}", score=math.nan)
            for table in ("memories", "postings", "lineage"):
                await w.conn.execute(
                    f"UPDATE {table} SET namespace = $1 WHERE namespace = $2", new, old)
            await w.conn.execute("DELETE FROM gc_cursors WHERE namespace = $1", old)
            await w.fold_statistics(old, new)
            for session in sorted({m.session_id for m in moving if m.session_id is not None}):
                seqs = [int(r[0]) for r in await w.conn.fetch(
                    "SELECT seq FROM memories WHERE namespace = $1 AND session_id = $2 "
                    "ORDER BY seq", new, session)]
                await w.refresh_context(new, session, seqs)
            return len(moving)

        return await self._transact([old, new], body)

    async def restore_lineage(self, rows: Sequence[Sequence[Any]]) -> int:
        """Insert lineage rows as read from another store; one that does not fit is left
        out. The page goes in as one batch; only if some row does not fit is it inserted
        again row by row, each in a savepoint (which costs a round trip per row)."""
        insert = ("INSERT INTO lineage (memory_id, namespace, event, at, from_tier, to_tier, "
                  "score, reason, count, last_at) "
                  "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)")
        misfit = (asyncpg.IntegrityConstraintViolationError, asyncpg.DataError, TypeError,
                  ValueError)

        async def body(w: Writer) -> int:
            try:
                async with w.conn.transaction():
                    await w.conn.executemany(insert, rows)
                return len(rows)
            except misfit:
                pass
            restored = 0
            for row in rows:
                try:
                    async with w.conn.transaction():
                        await w.conn.execute(insert, *row)
                except misfit:
                    continue
                restored += 1
            return restored

        return await self._transact((), body)

    async def restore_session_state(self, state: SessionState) -> None:
        async def body(w: Writer) -> None:
            await w.conn.execute(
                "INSERT INTO hook_injections (session_id, memory_id, at) "
                "SELECT * FROM unnest($1::text[], $2::text[], $3::float8[]) "
                "ON CONFLICT (session_id, memory_id) "
                "DO UPDATE SET at = greatest(hook_injections.at, excluded.at)",
                [i[0] for i in state.injections], [i[1] for i in state.injections],
                [i[2] for i in state.injections])
            await w.conn.execute(
                "INSERT INTO context_resets (session_id, at) "
                "SELECT * FROM unnest($1::text[], $2::float8[]) ON CONFLICT (session_id) "
                "DO UPDATE SET at = greatest(context_resets.at, excluded.at)",
                [r[0] for r in state.resets], [r[1] for r in state.resets])

        await self._transact((), body)

    # ----------------------------------------------------------------- reads

    async def get(self, memory_id: str) -> Memory | None:
        found = await self._memories(f"SELECT {COLUMNS} FROM memories WHERE id = $1", memory_id)
        return found[0] if found else None

    async def find_by_prefix(
        self, prefix: str, namespaces: Sequence[str], limit: int = 20
    ) -> list[Memory]:
        """Memories in `namespaces` whose id starts with `prefix` (hex: a range on the id
        index, no LIKE escapes)."""
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        return await self._memories(
            f"SELECT {COLUMNS} FROM memories WHERE id >= $1 AND id < $2 "
            "AND namespace = ANY($3::text[]) ORDER BY id COLLATE \"C\" LIMIT $4",
            prefix, upper, list(namespaces), limit)

    async def memories_by_seq(self, seqs: Sequence[int]) -> dict[int, Memory]:
        if not seqs:
            return {}
        found = await self._memories(
            f"SELECT {COLUMNS} FROM memories WHERE seq = ANY($1::bigint[])", list(seqs))
        return {m.seq: m for m in found}

    async def has_content(self, namespace: str, content_hash: str) -> bool:
        return await self._fetchval(
            "SELECT 1 FROM memories WHERE namespace = $1 AND content_hash = $2",
            namespace, content_hash) is not None

    async def statistics(
        self, terms: Sequence[str], namespaces: Sequence[str]
    ) -> tuple[TermStats, ScopeStats]:
        """In one round trip: store-wide memories and own-content document count per term
        (the row budget's input), and the same summed over `namespaces` only, with their
        total length (the scores' input)."""
        rows = await self._fetch(
            "SELECT 'all' AS kind, NULL AS term, coalesce(sum(docs), 0) AS n, 0 AS length "
            "FROM namespace_stats UNION ALL SELECT 'scope', NULL, coalesce(sum(docs), 0), "
            "coalesce(sum(length), 0) FROM namespace_stats WHERE namespace = ANY($1::text[]) "
            "UNION ALL SELECT 'all', term, df, 0 FROM term_df WHERE term = ANY($2::text[]) "
            "UNION ALL SELECT 'scope', term, sum(df), 0 FROM namespace_terms "
            "WHERE namespace = ANY($1::text[]) AND term = ANY($2::text[]) GROUP BY term",
            list(namespaces), list(terms))
        counts: dict[str, dict[str, int]] = {"all": dict.fromkeys(terms, 0),
                                             "scope": dict.fromkeys(terms, 0)}
        totals: dict[str, tuple[int, int]] = {}
        for r in rows:
            if r["term"] is None:
                totals[r["kind"]] = (int(r["n"]), int(r["length"]))
            else:
                counts[r["kind"]][r["term"]] = int(r["n"])
        docs, length = totals["scope"]
        return (relevance.term_stats(totals["all"][0], counts["all"]),
                ScopeStats(docs, length, counts["scope"]))

    async def _analyse(
        self, query: str, namespaces: Sequence[str]
    ) -> relevance.AnalysedQuery | None:
        terms = relevance.query_terms(query)
        if not terms:
            return None
        return relevance.analysed(query, terms, *await self.statistics(list(terms), namespaces))

    async def lexical_candidates(self, query: str, scope: Scope, limit: int) -> list[Candidate]:
        """BM25 over postings picks the candidates (search.py); store.lexical scores them."""
        analysed = await self._analyse(query, scope.namespaces)
        if analysed is None or not analysed.searched:
            return []
        sql, args = search.candidates_sql(analysed, scope, limit)
        rows = await self._fetch(sql, *args)
        sims = relevance.similarities([(_document(r), r["speaker"]) for r in rows], analysed)
        return [_ranked(r, sim) for r, sim in zip(rows, sims, strict=True)]

    async def similarity_of(self, query: str, memory: Memory, namespaces: Sequence[str]) -> float:
        analysed = await self._analyse(query, namespaces)
        if analysed is None:
            return 0.0
        row = await self._fetchrow(
            f"SELECT {search.DOCUMENT}, m.speaker FROM memories m WHERE seq = $1", memory.seq)
        if row is None:
            return 0.0
        return relevance.similarities([(_document(row), row["speaker"])], analysed)[0]

    async def static_candidates(
        self, scope: Scope, limit: int, now: float, weights: Weights
    ) -> list[Candidate]:
        """The `limit` best memories by the query-less composite (semantic = 0); callers
        rescore them with scoring.py, the source of truth."""
        p = search.Params()
        score = _static_score(p, weights, now)
        where = search.scope_where(scope, p)
        rows = await self._fetch(
            "SELECT m.seq, m.importance, m.created_at, m.access_count FROM memories m "
            f"WHERE {where} ORDER BY {score} DESC, m.seq DESC LIMIT {p(limit)}", *p.values)
        return [_ranked(r, 0.0) for r in rows]

    async def memories_matching_all(
        self, namespace: str, groups: Sequence[Sequence[str]], limit: int = 5_000
    ) -> list[Memory]:
        """Current memories of `namespace` whose own text holds every word of at least one
        group: each word as the index stems it (analysis.stems), found in the postings."""
        stemmed = [sorted({term for _, term in analysis.stems(list(group))})
                   for group in groups if group]
        stemmed = [g for g in stemmed if g]
        if not stemmed:
            return []
        sql, args = search.matching_all_sql(namespace, stemmed, limit, M_COLUMNS)
        return await self._memories(sql, *args)

    async def content_vectors(self, seqs: Sequence[int]) -> dict[int, str]:
        return {seq: str(v) for seq, v in (await self._column_by_seq("terms", seqs)).items()}

    async def term_sequences(self, seqs: Sequence[int]) -> dict[int, bytes]:
        return {seq: bytes(v) for seq, v in (await self._column_by_seq("term_seq", seqs)).items()}

    async def _column_by_seq(self, column: str, seqs: Sequence[int]) -> dict[int, Any]:
        rows = await self._fetch(
            f"SELECT seq, {column} FROM memories WHERE seq = ANY($1::bigint[])", list(seqs))
        return {int(r[0]): r[1] for r in rows}

    async def namespace_term_sequences(self, namespace: str) -> dict[int, bytes]:
        rows = await self._fetch("SELECT seq, term_seq FROM memories WHERE namespace = $1 "
                                 "AND superseded_by IS NULL", namespace)
        return {int(r["seq"]): bytes(r["term_seq"]) for r in rows}

    async def namespace_doc_freq(
        self, namespace: str, terms: Sequence[str] | None = None
    ) -> tuple[int, dict[str, int]]:
        _, stats = await self.statistics(terms or (), [namespace])
        if terms is not None:
            return stats.docs, dict(stats.doc_freq)
        rows = await self._fetch("SELECT term, df FROM namespace_terms WHERE namespace = $1",
                                 namespace)
        return stats.docs, {r["term"]: int(r["df"]) for r in rows}

    def tier_facts_by_score(
        self,
        namespace: str,
        now: float,
        weights: Weights,
        *,
        at_least: float,
        archived_at_least: float,
    ) -> AsyncGenerator[TierFacts, None]:
        """See store.ranked_read; scores in float8 throughout (a bare literal would make
        PostgreSQL compute in numeric and order near-ties differently from Python)."""
        since = ranked_read.recent_since(now)

        def scored(r: asyncpg.Record) -> ranked_read.Scored[TierFacts]:
            return ranked_read.Scored(float(r["gc_score"]), int(r["seq"]),
                                      float(r["importance"]), _tier_facts(r))

        async def page(
            lowest: float, after: ranked_read.After
        ) -> list[ranked_read.Scored[TierFacts]]:
            p = search.Params()
            where = (f"m.namespace = {p(namespace)} AND m.superseded_by IS NULL "
                     f"AND m.created_at < {p(since)}::float8 "
                     f"AND m.importance >= {p(lowest)}::float8")
            if after is not None:
                where += (f" AND (m.importance, m.seq) < ({p(after[0])}::float8, "
                          f"{p(after[1])}::bigint)")
            sql = _gc_rows(p, weights, now, at_least, archived_at_least, where,
                           f"ORDER BY importance DESC, seq DESC LIMIT {p(ranked_read.PAGE)}")
            return [scored(r) for r in await self._fetch(sql, *p.values)]

        async def rows() -> AsyncGenerator[TierFacts, None]:
            p = search.Params()
            recent = _gc_rows(p, weights, now, at_least, archived_at_least,
                              f"m.namespace = {p(namespace)} AND m.superseded_by IS NULL "
                              f"AND m.created_at >= {p(since)}::float8")
            first = [scored(r) for r in await self._fetch(recent, *p.values)]
            most = await self._fetchval(
                "SELECT max(access_count) FROM memories WHERE namespace = $1", namespace)
            async with contextlib.aclosing(ranked_read.best_first(
                    first, int(most or 0), weights, at_least, page)) as ranked:
                async for row in ranked:
                    yield row

        return rows()

    async def gc_facts(self, namespace: str) -> list[GCFacts]:
        rows = await self._fetch(
            f"SELECT {_FACT_COLUMNS} FROM memories WHERE namespace = $1 "
            "ORDER BY accessed_at, seq", namespace)
        return [_facts(r) for r in rows]

    async def gc_facts_and_sequences(
        self, namespace: str
    ) -> tuple[list[GCFacts], dict[int, bytes]]:
        rows = await self._fetch(
            f"SELECT {_FACT_COLUMNS}, term_seq FROM memories WHERE namespace = $1 "
            "ORDER BY accessed_at, seq", namespace)
        return ([_facts(r) for r in rows],
                {int(r["seq"]): bytes(r["term_seq"]) for r in rows
                 if r["superseded_by"] is None})

    async def memories_after(self, after_seq: int, limit: int) -> list[Memory]:
        return await self._memories(
            f"SELECT {COLUMNS} FROM memories WHERE seq > $1 ORDER BY seq LIMIT $2",
            after_seq, limit)

    async def lineage_after(self, after_id: int, limit: int) -> list[tuple[int, LineageRow]]:
        rows = await self._fetch(
            "SELECT id, memory_id, namespace, event, at, from_tier, to_tier, score, reason, "
            "count, last_at FROM lineage WHERE id > $1 ORDER BY id LIMIT $2", after_id, limit)
        return [(int(r["id"]), tuple(r.values())[1:]) for r in rows]

    async def session_state(self) -> SessionState:
        injections = await self._fetch("SELECT session_id, memory_id, at FROM hook_injections")
        resets = await self._fetch("SELECT session_id, at FROM context_resets")
        return SessionState(
            [(str(r["session_id"]), str(r["memory_id"]), float(r["at"])) for r in injections],
            [(str(r["session_id"]), float(r["at"])) for r in resets])

    async def namespace_memories(
        self,
        namespace: str,
        *,
        limit: int | None = None,
        tiers: Sequence[MemoryType] | None = None,
    ) -> list[Memory]:
        p = search.Params()
        sql = f"SELECT {COLUMNS} FROM memories WHERE namespace = {p(namespace)}"
        if tiers:
            sql += f" AND memory_type = ANY({p([t.value for t in tiers])}::text[])"
        sql += " ORDER BY accessed_at, seq"
        if limit is not None:
            sql += f" LIMIT {p(limit)}"
        return await self._memories(sql, *p.values)

    async def gc_window(self, namespace: str, limit: int) -> list[Memory]:
        row = await self._fetchval("SELECT seq FROM gc_cursors WHERE namespace = $1", namespace)
        after = int(row) if row is not None else 0
        sql = (f"SELECT {COLUMNS} FROM memories WHERE namespace = $1 AND seq > $2 "
               "ORDER BY seq LIMIT $3")
        window = await self._memories(sql, namespace, after, limit)
        if len(window) < limit and after > 0:
            more = await self._memories(sql, namespace, 0, limit - len(window))
            seen = {m.seq for m in window}
            window.extend(m for m in more if m.seq not in seen)
        return window

    async def session_memories(self, namespace: str, session_id: str) -> list[Memory]:
        return await self._memories(
            f"SELECT {COLUMNS} FROM memories WHERE namespace = $1 AND session_id = $2 "
            "ORDER BY seq", namespace, session_id)

    async def tier_tokens(self, namespace: str) -> dict[MemoryType, tuple[int, int]]:
        rows = await self._fetch(
            "SELECT memory_type, count(*) AS n, coalesce(sum(token_count), 0) AS tokens "
            "FROM memories WHERE namespace = $1 GROUP BY memory_type", namespace)
        return {MemoryType(r["memory_type"]): (int(r["n"]), int(r["tokens"])) for r in rows}

    async def count(self, namespace: str | None = None) -> int:
        if namespace is None:
            return int(await self._fetchval("SELECT count(*) FROM memories"))
        return int(await self._fetchval("SELECT count(*) FROM memories WHERE namespace = $1",
                                        namespace))

    async def namespaces(self) -> list[str]:
        """Every namespace holding memories, sorted: a skip-scan down the namespace index
        (one probe per namespace) rather than DISTINCT over every row."""
        rows = await self._fetch(
            "WITH RECURSIVE ns (name) AS (SELECT min(namespace) FROM memories UNION ALL "
            "SELECT (SELECT min(namespace) FROM memories WHERE namespace > ns.name) FROM ns "
            "WHERE ns.name IS NOT NULL) SELECT name FROM ns WHERE name IS NOT NULL")
        return sorted(str(r["name"]) for r in rows)

    async def labelled(self, value: str, namespaces: Sequence[str], limit: int) -> list[Memory]:
        return await self._memories(
            f"SELECT {M_COLUMNS} FROM memories m WHERE m.seq IN (SELECT seq FROM memory_labels "
            "WHERE value = $1) AND m.namespace = ANY($2::text[]) AND m.superseded_by IS NULL "
            "ORDER BY m.importance DESC, m.seq DESC LIMIT $3", value, list(namespaces), limit)

    async def browse(self, where: Browse, before_seq: int | None, limit: int) -> list[Memory]:
        """Up to `limit` memories matching `where`, newest first, below `before_seq` (keyset
        pagination: a page costs the same at any depth)."""
        p = search.Params()
        parts = [f"m.namespace = {p(where.namespace)}"]
        if before_seq is not None:
            parts.append(f"m.seq < {p(before_seq)}")
        if where.memory_type is not None:
            parts.append(f"m.memory_type = {p(where.memory_type.value)}")
        for kind, value in (("tag", where.tag), ("entity", where.entity)):
            if value:
                parts.append(f"EXISTS (SELECT 1 FROM memory_labels l WHERE l.seq = m.seq "
                             f"AND l.kind = {p(kind)} AND l.value = {p(value)})")
        if where.source:
            parts.append(f"(m.metadata::jsonb ->> 'source') = {p(where.source)}")
        if where.since is not None:
            parts.append(f"m.created_at >= {p(where.since)}::float8")
        if where.until is not None:
            parts.append(f"m.created_at < {p(where.until)}::float8")
        return await self._memories(
            f"SELECT {M_COLUMNS} FROM memories m WHERE {' AND '.join(parts)} "
            f"ORDER BY m.seq DESC LIMIT {p(limit)}", *p.values)

    async def created_range(self, namespace: str) -> tuple[float, float] | None:
        row = await self._fetchrow(
            "SELECT min(created_at) AS lo, max(created_at) AS hi FROM memories "
            "WHERE namespace = $1", namespace)
        return None if row is None or row["lo"] is None else (float(row["lo"]),
                                                              float(row["hi"]))

    async def created_counts(
        self, namespace: str, starts: Sequence[float], width: float
    ) -> list[int]:
        rows = await self._fetch(
            "SELECT (SELECT count(*) FROM memories WHERE namespace = $1 AND created_at >= j.s "
            "AND created_at < j.s + $2::float8) AS n FROM unnest($3::float8[]) "
            "WITH ORDINALITY AS j (s, k) ORDER BY j.k", namespace, width, list(starts))
        return [int(r["n"]) for r in rows]

    async def tagged_count(self, namespace: str, tag: str) -> int:
        return int(await self._fetchval(
            "SELECT count(*) FROM memory_labels l JOIN memories m ON m.seq = l.seq "
            "WHERE l.value = $1 AND l.kind = 'tag' AND m.namespace = $2", tag, namespace))

    async def lineage(self, memory_id: str) -> list[LineageEvent]:
        rows = await self._fetch(
            "SELECT memory_id, event, at, from_tier, to_tier, score, reason, count, last_at "
            "FROM lineage WHERE memory_id = $1 ORDER BY id", memory_id)
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
        value = await self._fetchval(
            "SELECT namespace FROM lineage WHERE memory_id = $1 ORDER BY id LIMIT 1", memory_id)
        return str(value) if value is not None else None

    async def injected_ids(self, session_id: str) -> set[str]:
        rows = await self._fetch("SELECT memory_id FROM hook_injections WHERE session_id = $1",
                                 session_id)
        return {str(r["memory_id"]) for r in rows}

    async def context_reset_at(self, session_id: str) -> float | None:
        value = await self._fetchval("SELECT at FROM context_resets WHERE session_id = $1",
                                     session_id)
        return float(value) if value is not None else None

    async def integrity_check(self) -> str:
        """"ok" when the server answers with this schema; PostgreSQL checks its own pages
        (checksums, WAL), so there is no file-level check to run from here."""
        version = await self.schema_version()
        if version != schema.SCHEMA_VERSION:
            return f"schema version {version}, expected {schema.SCHEMA_VERSION}"
        return "ok"

    async def check_consistency(self) -> Consistency:
        """Recompute every memory's vectors, postings and labels, the store-wide and
        per-namespace statistics from the rows, and compare with what is kept."""
        rows = await self._fetch(
            "SELECT seq, namespace, session_id, content, tags, linked_entities, terms, "
            "label_terms, context_terms, doc_len, superseded_by, term_seq FROM memories "
            "ORDER BY seq")
        posting_rows = await self._fetch(
            "SELECT seq, term, content_tf, label_tf, context_tf, doc_len, current FROM postings")
        label_rows = await self._fetch("SELECT seq, kind, value FROM memory_labels")
        kept_postings: dict[int, set[tuple[Any, ...]]] = {}
        for r in posting_rows:
            kept_postings.setdefault(int(r["seq"]), set()).add(
                (r["term"], int(r["content_tf"]), int(r["label_tf"]), int(r["context_tf"]),
                 int(r["doc_len"]), bool(r["current"])))
        labels: dict[int, set[tuple[str, str]]] = {}
        for r in label_rows:
            labels.setdefault(int(r["seq"]), set()).add((r["kind"], r["value"]))
        seqs = {int(r["seq"]) for r in rows}
        missing: list[int] = []
        mismatched: list[int] = []
        for r in rows:
            seq = int(r["seq"])
            want = {(*p, int(r["doc_len"]), r["superseded_by"] is None)
                    for p in postings_of(r["terms"], r["label_terms"], r["context_terms"])}
            if kept_postings.get(seq, set()) != want:
                missing.append(seq)
            tags, entities = json.loads(r["tags"]), json.loads(r["linked_entities"])
            if labels.get(seq, set()) != {("tag", t) for t in tags} | {
                    ("entity", e) for e in entities}:
                mismatched.append(seq)
        orphaned = sorted(s for s in kept_postings if s not in seqs)
        return Consistency(
            memories=len(rows),
            fts_rows=len(rows) - len(missing),
            missing_in_fts=missing[:100],
            orphaned_fts=orphaned[:100],
            mismatched=mismatched[:100],
            term_counts_off=await self._term_counts_off(rows),
            vectors_off=_vectors_off(rows)[:100],
            namespace_stats_off=await self._namespace_stats_off(rows),
        )

    async def _term_counts_off(self, rows: Sequence[asyncpg.Record]) -> list[str]:
        expected: Counter[str] = Counter()
        for r in rows:
            expected.update(bm25.decode(r["terms"]).keys())
        kept = {r["term"]: int(r["df"]) for r in await self._fetch("SELECT term, df FROM term_df")}
        return sorted(t for t in expected.keys() | kept.keys()
                      if expected.get(t, 0) != kept.get(t, 0))[:100]

    async def _namespace_stats_off(self, rows: Sequence[asyncpg.Record]) -> list[str]:
        docs: Counter[str] = Counter()
        length: Counter[str] = Counter()
        terms: Counter[tuple[str, str]] = Counter()
        for r in rows:
            docs[r["namespace"]] += 1
            length[r["namespace"]] += int(r["doc_len"])
            for term in set(bm25.decode(r["terms"])) | set(bm25.decode(r["label_terms"])):
                terms[r["namespace"], term] += 1
        stats = {r["namespace"]: (int(r["docs"]), int(r["length"]))
                 for r in await self._fetch("SELECT namespace, docs, length FROM namespace_stats")}
        kept = {(r["namespace"], r["term"]): int(r["df"])
                for r in await self._fetch("SELECT namespace, term, df FROM namespace_terms")}
        off = {ns for ns in docs.keys() | stats.keys()
               if stats.get(ns, (0, 0)) != (docs.get(ns, 0), length.get(ns, 0))}
        off |= {ns for ns, _ in set(terms.items()) ^ set(kept.items())}
        return sorted(off)[:100]


def _vectors_off(rows: Sequence[asyncpg.Record]) -> list[int]:
    """Memories whose stored vectors, term sequence or length differ from their text and
    neighbours'."""
    own: dict[int, tuple[Counter[str], Counter[str]]] = {}
    texts = [t for r in rows for t in (r["content"], _labels_text(
        json.loads(r["tags"]), json.loads(r["linked_entities"])))]
    seqs = [int(r["seq"]) for r in rows]
    sequences: dict[int, list[str]] = {seq: [] for seq in seqs}
    for seq in seqs:
        own[seq] = (Counter(), Counter())
    for term, doc in analysis.tokens(texts):
        own[seqs[doc // 2]][doc % 2][term] += 1
        if doc % 2 == 0:
            sequences[seqs[doc // 2]].append(term)
    sessions: dict[tuple[str, str], list[int]] = {}
    for r in rows:
        if r["session_id"] is not None:
            sessions.setdefault((r["namespace"], r["session_id"]), []).append(int(r["seq"]))
    context: dict[int, Counter[str]] = {seq: Counter() for seq in seqs}
    for members in sessions.values():
        for i, seq in enumerate(members):
            for other in members[max(0, i - CONTEXT_RADIUS):i] + members[i + 1:
                                                                         i + 1 + CONTEXT_RADIUS]:
                context[seq].update(own[other][0])
    off: list[int] = []
    for r in rows:
        seq = int(r["seq"])
        want = (dict(own[seq][0]), dict(own[seq][1]), dict(context[seq]))
        got = (bm25.decode(r["terms"]), bm25.decode(r["label_terms"]),
               bm25.decode(r["context_terms"]))
        if (got != want or int(r["doc_len"]) != sum(sum(c.values()) for c in want)
                or bytes(r["term_seq"]) != analysis.packed_ids(sequences[seq])):
            off.append(seq)
    return off
