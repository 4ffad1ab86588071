"""The SQLite backend: one file shared by every process, FTS5 as the full-text index.

Every write is one `BEGIN IMMEDIATE` transaction (db.transaction) on the store's connection,
one at a time per connection; every sqlite3 error leaves as the StorageError `db.driver_error`
makes of it. Layout notes:
- `memories.seq` is the rowid: monotonic insertion order, and the FTS rowid.
- Tags and entities live twice: as JSON on the row (cheap to return) and as `memory_labels`
  rows (indexed, so tag filters and graph lookups are SQL). Both change in the same transaction.
- `memory_fts` holds `content`, `labels` (tags and entities as words) and `context` (the text
  of up to CONTEXT_RADIUS earlier and later memories of the same session), with Porter
  stemming; `memories.speaker` is the "Name:" a conversation turn starts with.
- `lineage` has no foreign key: a memory's history outlives the memory.
"""

from __future__ import annotations

import functools
import math
import os
import re
import sqlite3
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from pma_mcp.core.models import Memory, Scope
from pma_mcp.core.text import analysis, bm25, relevance
from pma_mcp.core.text.relevance import AnalysedQuery
from pma_mcp.store import rows, steps
from pma_mcp.store.seam import Row, Tx
from pma_mcp.store.sqlite import db

T = TypeVar("T")

OWN_TEXT = "{content labels}"
"""FTS5 column filter: a memory's own text and labels, not its neighbours' context."""
INDEX_FIRST_MARGIN = 1.25
"""How many more of the index's best matches than the scope's share predicts are read."""
INDEX_FIRST_MAX = 4
"""Beyond this many times the limit, the joined search is cheaper (a scope of few memories)."""
_CAST = re.compile(r"::\w+(\[\])?")


@functools.lru_cache(maxsize=2048)
def _dialect(sql: str) -> str:
    """Neutral SQL (store/seam.py) as SQLite's."""
    sql = _CAST.sub("", sql).replace(' COLLATE "C"', "")
    return sql.replace("greatest(", "max(").replace("least(", "min(")


def _bind(sql: str, args: Sequence[Any]) -> tuple[str, Sequence[Any]]:
    """The statement and its parameters, each list parameter spread over `(?, ?, …)`."""
    sql = _dialect(sql)
    if not any(isinstance(a, list | tuple) for a in args):
        return sql, args
    pieces = sql.split("?")
    out = [pieces[0]]
    flat: list[Any] = []
    for arg, piece in zip(args, pieces[1:], strict=True):
        if isinstance(arg, list | tuple):
            out.append(f"({', '.join('?' * len(arg))})")
            flat.extend(arg)
        else:
            out.append("?")
            flat.append(arg)
        out.append(piece)
    return "".join(out), flat


def match_expression(words: Sequence[str], own_text_only: Sequence[str] = ()) -> str:
    """An FTS5 query that ORs the words as quoted strings: plain terms, never operators.

    Words in `own_text_only` are restricted to the memory's own text and labels.
    """
    restricted = set(own_text_only)
    return " OR ".join(
        f'{OWN_TEXT}: "{w}"' if w in restricted else f'"{w}"' for w in words
    )


class SqliteReads:
    """Statements on the store's connection, sqlite3 errors mapped."""

    def __init__(self, conn: db.Conn, location: str) -> None:
        self._conn = conn
        self._location = location

    async def fetch(self, sql: str, *args: Any) -> list[Row]:
        statement, params = _bind(sql, args)
        try:
            return list(await self._conn.execute_fetchall(statement, params))
        except sqlite3.Error as exc:
            raise db.driver_error(exc, self._location) from exc

    async def fetchrow(self, sql: str, *args: Any) -> Row | None:
        found = await self.fetch(sql, *args)
        return found[0] if found else None

    async def fetchval(self, sql: str, *args: Any) -> Any:
        row = await self.fetchrow(sql, *args)
        return None if row is None else row[0]


class SqliteTx(SqliteReads):
    """Inside `BEGIN IMMEDIATE`; the FTS5 row of a memory follows its texts.

    Statements that return nothing are queued and go to the connection (`db.Conn.call`)
    together with the next statement that returns rows, or with COMMIT: one trip to
    aiosqlite's thread instead of one per statement (a `remember` is a dozen statements, and a
    trip costs more than most of them).
    A queued statement's error surfaces at that next trip, still inside the transaction, so
    the transaction rolls back as it would have.
    """

    def __init__(self, conn: db.Conn, location: str) -> None:
        super().__init__(conn, location)
        self._queued: list[Callable[[sqlite3.Connection], object]] = []

    async def _send(self, last: Callable[[sqlite3.Connection], T]) -> T:
        """The queued statements, then `last`, in one trip to the connection's thread."""
        queued, self._queued = self._queued, []

        def run(raw: sqlite3.Connection) -> T:
            for step in queued:
                step(raw)
            return last(raw)

        try:
            return await self._conn.call(run)
        except sqlite3.Error as exc:
            raise db.driver_error(exc, self._location) from exc

    async def fetch(self, sql: str, *args: Any) -> list[Row]:
        statement, params = _bind(sql, args)
        return await self._send(lambda raw: raw.execute(statement, params).fetchall())

    async def flush(self) -> None:
        """Send what is queued (before COMMIT)."""
        if self._queued:
            await self._send(lambda raw: None)

    async def commit(self) -> None:
        """Send what is queued, then COMMIT, in one trip."""
        await self._send(lambda raw: raw.execute("COMMIT"))

    async def execute(self, sql: str, *args: Any) -> None:
        statement, params = _bind(sql, args)
        self._queued.append(lambda raw: raw.execute(statement, params))

    async def executemany(self, sql: str, rows_in: Iterable[Sequence[Any]]) -> None:
        statement, batch = _dialect(sql), list(rows_in)
        self._queued.append(lambda raw: raw.executemany(statement, batch))

    async def insert_fitting(self, sql: str, rows_in: Sequence[Sequence[Any]]) -> int:
        statement, batch = _dialect(sql), [tuple(r) for r in rows_in]

        def fitting(raw: sqlite3.Connection) -> int:
            fitted = 0
            for row in batch:
                try:
                    raw.execute(statement, row)
                except sqlite3.IntegrityError:
                    continue
                fitted += 1
            return fitted

        return await self._send(fitting)

    async def index(self, seq: int, texts: Mapping[str, str] | None = None, *,
                    new: bool = False) -> None:
        if new:
            assert texts is not None
            await self.execute("INSERT INTO memory_fts (rowid, content, labels, context) "
                               "VALUES (?, ?, ?, ?)", seq, texts["content"], texts["labels"],
                               texts["context"])
        elif texts:
            await self.execute(
                f"UPDATE memory_fts SET {', '.join(f'{c} = ?' for c in texts)} "
                "WHERE rowid = ?", *texts.values(), seq)

    async def unindex(self, seq: int) -> None:
        await self.execute("DELETE FROM memory_fts WHERE rowid = ?", seq)


class SqliteBackend:
    """A SQLite file (or :memory:) on one connection."""

    def __init__(self, conn: db.Conn, busy_timeout_ms: int) -> None:
        conn.row_factory = None  # tuples: rows are read by position
        self._conn = conn
        self._busy_timeout_ms = busy_timeout_ms
        self._write_lock = conn.write_lock
        self._reads = SqliteReads(conn, self.location)

    @property
    def name(self) -> str:
        return "sqlite"

    @property
    def location(self) -> str:
        return self._conn.database

    @property
    def reads(self) -> SqliteReads:
        return self._reads

    @property
    def accepts_writes(self) -> bool:
        return db.damage_recorded(self.location) is None

    async def close(self) -> None:
        await self._conn.close()

    async def schema_version(self) -> int:
        try:
            return await db.schema_version(self._conn)
        except sqlite3.Error as exc:
            raise db.driver_error(exc, self.location) from exc

    async def write(self, namespaces: Iterable[str], body: Callable[[Tx], Awaitable[T]]) -> T:
        """One write transaction at a time on this connection: coroutines sharing it (parallel
        tool calls) would otherwise issue BEGIN inside each other's transaction. Other
        processes wait on the file's lock (busy_timeout), so `namespaces` need no lock."""
        async with self._write_lock:
            try:
                tx = SqliteTx(self._conn, self.location)
                async with db.transaction(self._conn, self._busy_timeout_ms, tx.commit):
                    return await body(tx)
            except sqlite3.Error as exc:
                raise db.driver_error(exc, self.location) from exc

    async def insert_rows(self, tx: Tx, memories: Sequence[Memory], reason: str | None,
                          counts: Callable[[set[str], int], None]) -> None:
        """Row by row: one memory costs a few statements on a local file."""
        for memory in memories:
            await steps.insert_row(tx, counts, memory, reason)

    async def candidates(self, analysed: AnalysedQuery, scope: Scope, limit: int) -> list[Row]:
        """FTS5 picks the candidates, best first by its bm25 over the whole file's statistics.

        The query is reduced to plain words (no user text is read as FTS syntax), each quoted
        and OR-ed; a term too common for the row budget is searched in own text only
        (OWN_TEXT). CROSS JOIN pins the join order: without it the planner may scan
        `memories` and probe the index per row (seconds at 100k) instead of walking the
        FTS matches. The ranking sorts only (seq, bm25) of every match; the wide columns
        (term vectors) are read for the `limit` kept, not carried through the sort of
        thousands (about 40% of the query at 20k memories).
        """
        words = analysed.words
        match = match_expression(list(dict.fromkeys(words[t] for t in analysed.searched)),
                                 [words[t] for t in analysed.own_text_only])
        if not scope.tags:
            found = await self._index_first(analysed, scope, limit, match)
            if found is not None:
                return found
        where, params = rows.scope_where(scope)
        return await self._reads.fetch(
            f"SELECT {rows.CANDIDATE} FROM (SELECT memory_fts.rowid AS seq, "
            "bm25(memory_fts, ?, ?, ?) AS rank FROM memory_fts CROSS JOIN memories m "
            f"ON m.seq = memory_fts.rowid WHERE memory_fts MATCH ? AND {where} "
            "ORDER BY rank LIMIT ?) best CROSS JOIN memories m ON m.seq = best.seq "
            "ORDER BY best.rank",
            *relevance.COLUMN_WEIGHTS, match, *params, limit)

    async def _index_first(
        self, analysed: AnalysedQuery, scope: Scope, limit: int, match: str
    ) -> list[Row] | None:
        """`candidates` when the scope holds most of the store: the index's best matches
        alone, scope checked afterwards on the few kept, without a join per match (half
        the query at 100k memories in one project). Exact or nothing: None when the index's
        best `fetch` held fewer than `limit` in scope and more may follow.

        Matches come in rowid order and the LIMIT sort keeps ties in arrival order, so the
        in-scope rows of the index's best `fetch` are the best in-scope rows, same order.
        """
        if analysed.scope_share <= 0.0:
            return None
        fetch = math.ceil(limit * INDEX_FIRST_MARGIN / analysed.scope_share) + 10
        if fetch > limit * INDEX_FIRST_MAX:
            return None
        found = await self._reads.fetch(
            f"SELECT {rows.CANDIDATE}, {rows.SCOPE_COLUMNS} FROM (SELECT rowid AS seq, "
            "bm25(memory_fts, ?, ?, ?) AS rank FROM memory_fts WHERE memory_fts MATCH ? "
            "ORDER BY rank LIMIT ?) best LEFT JOIN memories m ON m.seq = best.seq "
            "ORDER BY best.rank",
            *relevance.COLUMN_WEIGHTS, match, fetch)
        width = len(found[0]) - 4 if found else 0
        kept = [r[:width] for r in found
                if r[width] is not None and rows.in_scope(r[width], r[width + 1], r[width + 2],
                                                          r[width + 3], scope)]
        if len(kept) >= limit or len(found) < fetch:
            return kept[:limit]
        return None

    async def matching_all(
        self, namespace: str, groups: Sequence[Sequence[str]], limit: int
    ) -> list[Row]:
        clauses = [" AND ".join(f'"{w}"' for w in group) for group in groups if group]
        match = "content : (" + " OR ".join(f"({c})" for c in clauses) + ")"
        return await self._reads.fetch(
            f"SELECT {rows.M_COLUMNS} FROM memory_fts CROSS JOIN memories m "
            "ON m.seq = memory_fts.rowid WHERE memory_fts MATCH ? AND m.namespace = ? "
            "AND m.superseded_by IS NULL LIMIT ?", match, namespace, limit)

    async def check_index(self) -> tuple[int, list[int], list[int], list[int], list[int]]:
        reads = self._reads

        async def seqs(sql: str) -> list[int]:
            return [int(r[0]) for r in await reads.fetch(sql)]

        missing = await seqs("SELECT seq FROM memories "
                             "WHERE seq NOT IN (SELECT rowid FROM memory_fts) LIMIT 100")
        orphaned = await seqs("SELECT rowid FROM memory_fts "
                              "WHERE rowid NOT IN (SELECT seq FROM memories) LIMIT 100")
        mismatched = await seqs("SELECT m.seq FROM memories m JOIN memory_fts f "
                                "ON f.rowid = m.seq WHERE f.content IS NOT m.content LIMIT 100")
        index_rows = int(await reads.fetchval("SELECT count(*) FROM memory_fts"))
        return index_rows, missing, orphaned, mismatched, await self._vectors_off()

    async def _vectors_off(self) -> list[int]:
        """Memories whose term vectors, term sequence or length differ from what their index
        row holds."""
        async with self._write_lock:  # temp-schema DDL on the shared connection
            await self._conn.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.consistency_instances "
                "USING fts5vocab(main, memory_fts, instance)"
            )
        expected: dict[int, dict[str, Counter[str]]] = {}
        for doc, col, term, n in await self._reads.fetch(
                "SELECT doc, col, term, count(*) FROM temp.consistency_instances "
                "GROUP BY doc, col, term"):
            expected.setdefault(int(doc), {}).setdefault(str(col), Counter())[str(term)] = n
        sequences: dict[int, list[str]] = {}
        for doc, term in await self._reads.fetch(
                "SELECT doc, term FROM temp.consistency_instances WHERE col = 'content' "
                "ORDER BY doc, offset"):
            sequences.setdefault(int(doc), []).append(str(term))
        off: list[int] = []
        for seq, *vectors, length, term_seq in await self._reads.fetch(
                "SELECT seq, terms, label_terms, context_terms, doc_len, term_seq FROM memories"):
            want = expected.get(int(seq), {})
            got = [bm25.decode(str(v)) for v in vectors]
            cols = [dict(want.get(c, {})) for c in ("content", "labels", "context")]
            packed = analysis.packed_ids(sequences.get(int(seq), []))
            if (got != cols or int(length) != sum(sum(c.values()) for c in cols)
                    or bytes(term_seq) != packed) and len(off) < 100:
                off.append(int(seq))
        return off

    async def identity(self) -> tuple[object, ...]:
        """The file's (device, inode): a hard link or another spelling of the path is the
        same file; an in-memory database is only ever itself."""
        if self.location == db.MEMORY:
            return ("memory", id(self))
        found = os.stat(self.location)
        return (found.st_dev, found.st_ino)

    async def integrity_check(self) -> str:
        return "\n".join(str(r[0]) for r in await self._reads.fetch("PRAGMA integrity_check"))

    async def pause(self, seconds: float) -> None:
        await self._conn.sleep(seconds)

    async def refresh_statistics(self) -> None:
        """Nothing: the SQLite store keeps no planner statistics (its queries and indexes are
        chosen for SQLite's defaults; ANALYZE would change plans measured without it)."""
