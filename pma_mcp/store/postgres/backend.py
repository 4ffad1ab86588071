"""The PostgreSQL backend: a server shared by a team, postings as the full-text index.

Connections: an asyncpg pool of MIN_CONNECTIONS..MAX_CONNECTIONS. Reads take any pooled
connection; a read that lost its connection (idle in the pool when the server restarted) is
run once more on a new one. Writes are serialised per process (one write transaction at a
time, as on SQLite) and across processes by namespace locks:

- `write` takes a transaction-scoped advisory lock per namespace written, in sorted order,
  first thing: writers of one namespace run one after another, so dedupe by content hash,
  session neighbours, `namespace_terms` and `namespace_stats` are read and written as if
  alone (READ COMMITTED). The store-wide `term_df` is written once per transaction in term
  order (store.upkeep.Work), so writers of different namespaces cannot deadlock on it.
- postings of a memory are rewritten from its vectors when the transaction's work is done
  (`PgTx.flush`), once per memory however many times its vectors changed.
- a transaction that loses a deadlock or a serialization check is run again
  (WRITE_ATTEMPTS), and so is one whose BEGIN found its pooled connection gone (nothing was
  sent yet); a connection lost after BEGIN is StorageUnavailableError: the caller cannot know
  whether the COMMIT landed, and retries the call (inserts dedupe by content). A write is
  acknowledged only once its COMMIT returned.
Every driver error leaves through faults.mapped.
"""

from __future__ import annotations

import asyncio
import functools
import json
import random
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from pma_mcp.core.models import Memory, Scope
from pma_mcp.core.text import analysis, bm25
from pma_mcp.core.text.relevance import CONTEXT_RADIUS, AnalysedQuery
from pma_mcp.store import rows
from pma_mcp.store.postgres import bulk, faults, schema, search
from pma_mcp.store.postgres import url as urls
from pma_mcp.store.seam import Row, Tx

T = TypeVar("T")

Conn = asyncpg.Connection | PoolConnectionProxy
"""A connection, or the pool's proxy of one."""

WRITE_ATTEMPTS = 5
WRITE_LOCK_CLASS = schema.MIGRATION_LOCK[0] + 1
"""Advisory lock class of namespace write locks (objid: hashtext(namespace))."""

_LIST = re.compile(r"\bIN \?")
_HINT = re.compile(r" INDEXED BY \w+")
_PLUS = re.compile(r"(?<=[\s(])\+(?=[a-z])")
_JSON = re.compile(r"json_extract\(([\w.]+), '\$\.(\w+)'\)")
_PARAM = re.compile(r"\?")


@functools.lru_cache(maxsize=2048)
def dialect(sql: str) -> str:
    """Neutral SQL (store/seam.py) as PostgreSQL's: `$n` parameters, arrays for lists."""
    sql = _PLUS.sub("", _HINT.sub("", sql))
    sql = _LIST.sub("= ANY(?)", _JSON.sub(r"(\1::jsonb ->> '\2')", sql))
    numbers = iter(range(1, 1 + sql.count("?")))
    return _PARAM.sub(lambda _: f"${next(numbers)}", sql)


def _args(args: Sequence[Any]) -> list[Any]:
    return [list(a) if isinstance(a, tuple) else a for a in args]


class PgReads:
    """Statements on pooled connections, driver errors mapped."""

    def __init__(self, pool: asyncpg.Pool, url: str) -> None:
        self._pool = pool
        self._url = url

    async def _query(self, method: str, sql: str, args: Sequence[Any]) -> Any:
        with faults.mapped(self._url):
            for attempt in (1, 2):
                try:
                    async with self._pool.acquire() as conn:
                        return await getattr(conn, method)(dialect(sql), *_args(args))
                except Exception as exc:
                    if attempt == 2 or not faults.lost(exc):
                        raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def fetch(self, sql: str, *args: Any) -> list[Row]:
        return list(await self._query("fetch", sql, args))

    async def fetchrow(self, sql: str, *args: Any) -> Row | None:
        return await self._query("fetchrow", sql, args)

    async def fetchval(self, sql: str, *args: Any) -> Any:
        return await self._query("fetchval", sql, args)


class PgTx:
    """One write transaction on `conn`; postings follow the vectors at `flush`."""

    def __init__(self, conn: Conn) -> None:
        self.conn = conn
        self._dirty: set[int] = set()

    async def fetch(self, sql: str, *args: Any) -> list[Row]:
        return list(await self.conn.fetch(dialect(sql), *_args(args)))

    async def fetchrow(self, sql: str, *args: Any) -> Row | None:
        return await self.conn.fetchrow(dialect(sql), *_args(args))

    async def fetchval(self, sql: str, *args: Any) -> Any:
        return await self.conn.fetchval(dialect(sql), *_args(args))

    async def execute(self, sql: str, *args: Any) -> None:
        await self.conn.execute(dialect(sql), *_args(args))

    async def executemany(self, sql: str, rows_in: Iterable[Sequence[Any]]) -> None:
        await self.conn.executemany(dialect(sql), rows_in)

    async def insert_fitting(self, sql: str, rows_in: Sequence[Sequence[Any]]) -> int:
        """The rows as one batch; only if some row does not fit, again row by row, each in a
        savepoint (which costs a round trip per row)."""
        misfit = (asyncpg.IntegrityConstraintViolationError, asyncpg.DataError, TypeError,
                  ValueError)
        statement = dialect(sql)
        try:
            async with self.conn.transaction():
                await self.conn.executemany(statement, rows_in)
            return len(rows_in)
        except misfit:
            pass
        fitted = 0
        for row in rows_in:
            try:
                async with self.conn.transaction():
                    await self.conn.execute(statement, *row)
            except misfit:
                continue
            fitted += 1
        return fitted

    async def index(self, seq: int, texts: Mapping[str, str] | None = None, *,
                    new: bool = False) -> None:
        self._dirty.add(seq)  # postings are made from the vectors, not the texts

    async def unindex(self, seq: int) -> None:
        self._dirty.discard(seq)  # its postings went with it (ON DELETE CASCADE)

    async def lock(self, namespaces: Iterable[str]) -> None:
        for namespace in sorted(set(namespaces)):
            await self.conn.execute("SELECT pg_advisory_xact_lock($1, hashtext($2))",
                                    WRITE_LOCK_CLASS, namespace)

    async def flush(self) -> None:
        """Postings of the memories whose vectors or current flag changed, as their stored
        vectors say (memories gone meanwhile: none)."""
        if not self._dirty:
            return
        seqs = sorted(self._dirty)
        self._dirty.clear()
        found = await self.conn.fetch(
            "SELECT seq, namespace, terms, label_terms, context_terms, doc_len, "
            "superseded_by IS NULL AS current FROM memories WHERE seq = ANY($1)", seqs)
        await self.conn.execute("DELETE FROM postings WHERE seq = ANY($1)", seqs)
        columns: tuple[list[Any], ...] = ([], [], [], [], [], [], [], [])
        for r in found:
            for posting in postings_of(r["terms"], r["label_terms"], r["context_terms"]):
                for column, value in zip(columns, (posting[0], r["namespace"], r["seq"],
                                                   *posting[1:], r["doc_len"], r["current"]),
                                         strict=True):
                    column.append(value)
        if columns[0]:
            await self.conn.execute(
                "INSERT INTO postings (term, namespace, seq, content_tf, label_tf, context_tf, "
                "doc_len, current) SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], "
                "$4::int[], $5::int[], $6::int[], $7::int[], $8::bool[])", *columns)


def postings_of(
    terms: str, label_terms: str, context_terms: str
) -> list[tuple[str, int, int, int]]:
    """(term, content tf, label tf, context tf) for every term of a memory's three vectors."""
    own, labels = bm25.decode(terms), bm25.decode(label_terms)
    context = bm25.decode(context_terms)
    return [(t, own.get(t, 0), labels.get(t, 0), context.get(t, 0))
            for t in sorted(own.keys() | labels.keys() | context.keys())]


class PgBackend:
    """A PostgreSQL schema reached through one pool."""

    def __init__(self, pool: asyncpg.Pool, url: str) -> None:
        self._pool = pool
        self._url = url
        self._write_lock = asyncio.Lock()
        self._reads = PgReads(pool, url)

    @property
    def name(self) -> str:
        return "postgresql"

    @property
    def location(self) -> str:
        return urls.location(self._url)

    @property
    def reads(self) -> PgReads:
        return self._reads

    @property
    def accepts_writes(self) -> bool:
        return True

    async def close(self) -> None:
        with faults.mapped(self._url):
            await self._pool.close()

    async def schema_version(self) -> int:
        with faults.mapped(self._url):
            async with self._pool.acquire() as conn:
                return await schema.current_version(conn)

    async def write(self, namespaces: Iterable[str], body: Callable[[Tx], Awaitable[T]]) -> T:
        locked = sorted(set(namespaces))
        async with self._write_lock:
            with faults.mapped(self._url):
                for attempt in range(1, WRITE_ATTEMPTS + 1):
                    begun = False
                    try:
                        async with self._pool.acquire() as conn, conn.transaction():
                            begun = True
                            tx = PgTx(conn)
                            await tx.lock(locked)
                            result = await body(tx)
                            await tx.flush()
                        return result
                    except faults.RETRYABLE_IN_TRANSACTION:
                        if attempt == WRITE_ATTEMPTS:
                            raise
                    except Exception as exc:
                        if begun or attempt == WRITE_ATTEMPTS or not faults.lost(exc):
                            raise
                    await asyncio.sleep(random.uniform(0.005, 0.02) * 2 ** attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    async def insert_rows(self, tx: Tx, memories: Sequence[Memory], reason: str | None,
                          counts: Callable[[set[str], int], None]) -> None:
        assert isinstance(tx, PgTx)
        await bulk.insert(tx, memories, reason, counts)

    async def candidates(self, analysed: AnalysedQuery, scope: Scope, limit: int) -> list[Row]:
        """BM25 over postings picks the candidates (search.py)."""
        sql, args = search.candidates_sql(analysed, scope, limit)
        return await self._reads.fetch(sql, *args)

    async def matching_all(
        self, namespace: str, groups: Sequence[Sequence[str]], limit: int
    ) -> list[Row]:
        """Each word as the index stems it (analysis.stems), found in the postings."""
        stemmed = [sorted({term for _, term in analysis.stems(list(group))})
                   for group in groups if group]
        stemmed = [g for g in stemmed if g]
        if not stemmed:
            return []
        sql, args = search.matching_all_sql(namespace, stemmed, limit)
        return await self._reads.fetch(sql, *args)

    async def check_index(self) -> tuple[int, list[int], list[int], list[int], list[int]]:
        """Recompute every memory's vectors from its text and neighbours, and its postings
        from its vectors, and compare with what is kept."""
        found = await self._reads.fetch(
            "SELECT seq, namespace, session_id, content, tags, linked_entities, terms, "
            "label_terms, context_terms, doc_len, superseded_by, term_seq FROM memories "
            "ORDER BY seq")
        kept: dict[int, set[tuple[Any, ...]]] = {}
        for r in await self._reads.fetch("SELECT seq, term, content_tf, label_tf, context_tf, "
                                         "doc_len, current FROM postings"):
            kept.setdefault(int(r[0]), set()).add(
                (r[1], int(r[2]), int(r[3]), int(r[4]), int(r[5]), bool(r[6])))
        missing = [int(r["seq"]) for r in found
                   if kept.get(int(r["seq"]), set()) != {
                       (*p, int(r["doc_len"]), r["superseded_by"] is None)
                       for p in postings_of(r["terms"], r["label_terms"], r["context_terms"])}]
        seqs = {int(r["seq"]) for r in found}
        orphaned = sorted(s for s in kept if s not in seqs)
        return len(found) - len(missing), missing, orphaned, [], _vectors_off(found)

    async def identity(self) -> tuple[object, ...]:
        """The cluster's system identifier (fixed at initdb, the same through every host
        name, address or port that reaches it), the database's oid and the schema: so
        `localhost` and `127.0.0.1` are one store, two schemas of one database are two."""
        row = await self._reads.fetchrow(
            "SELECT (SELECT system_identifier FROM pg_control_system()), d.oid, "
            "current_schema() FROM pg_database d WHERE d.datname = current_database()")
        return (id(self),) if row is None else tuple(row)

    async def integrity_check(self) -> str:
        """"ok" when the server answers with this schema; PostgreSQL checks its own pages
        (checksums, WAL), so there is no file-level check to run from here."""
        version = await self.schema_version()
        if version != schema.SCHEMA_VERSION:
            return f"schema version {version}, expected {schema.SCHEMA_VERSION}"
        return "ok"

    async def pause(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def refresh_statistics(self) -> None:
        """VACUUM ANALYZE this store's tables: a bulk-loaded store otherwise answers with
        guessed plans until autovacuum gets to it."""
        with faults.mapped(self._url):
            async with self._pool.acquire() as conn:
                await conn.execute(f"VACUUM ANALYZE {', '.join(schema.TABLES)}")


def _vectors_off(found: Sequence[asyncpg.Record]) -> list[int]:
    """Memories whose stored vectors, term sequence or length differ from their text and
    neighbours'."""
    own: dict[int, tuple[Counter[str], Counter[str]]] = {}
    texts = [t for r in found for t in (r["content"], rows.labels_text(
        json.loads(r["tags"]), json.loads(r["linked_entities"])))]
    seqs = [int(r["seq"]) for r in found]
    sequences: dict[int, list[str]] = {seq: [] for seq in seqs}
    for seq in seqs:
        own[seq] = (Counter(), Counter())
    for term, doc in analysis.tokens(texts):
        own[seqs[doc // 2]][doc % 2][term] += 1
        if doc % 2 == 0:
            sequences[seqs[doc // 2]].append(term)
    sessions: dict[tuple[str, str], list[int]] = {}
    for r in found:
        if r["session_id"] is not None:
            sessions.setdefault((r["namespace"], r["session_id"]), []).append(int(r["seq"]))
    context: dict[int, Counter[str]] = {seq: Counter() for seq in seqs}
    for members in sessions.values():
        for i, seq in enumerate(members):
            for other in (members[max(0, i - CONTEXT_RADIUS):i]
                          + members[i + 1:i + 1 + CONTEXT_RADIUS]):
                context[seq].update(own[other][0])
    off: list[int] = []
    for r in found:
        seq = int(r["seq"])
        want = (dict(own[seq][0]), dict(own[seq][1]), dict(context[seq]))
        got = (bm25.decode(r["terms"]), bm25.decode(r["label_terms"]),
               bm25.decode(r["context_terms"]))
        if (got != want or int(r["doc_len"]) != sum(sum(c.values()) for c in want)
                or bytes(r["term_seq"]) != analysis.packed_ids(sequences[seq])):
            off.append(seq)
    return off
