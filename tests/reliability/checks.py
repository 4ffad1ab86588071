"""What a store must satisfy after concurrent writers, crashes or hostile input.

A SQLite file (a Path) is read with plain `sqlite3`, for speed and independence from the code
under test; a PostgreSQL store (Settings with a database_url) through the store's reads
(tests/backends.py). Both add the store's own `check_consistency()` (the one `pma-mcp doctor`
uses). The functions marked "SQLite" read the file itself.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pma_mcp.config import Settings
from pma_mcp.store.base import Consistency
from tests import backends

Where = Path | Settings
"""A SQLite file, or the Settings of a store on either backend."""


def _postgres(where: Where) -> Settings | None:
    """`where` when it names a PostgreSQL store, else None (the SQLite file is read)."""
    return where if isinstance(where, Settings) and where.database_url else None


def _file(where: Where) -> Path:
    return where.db_path if isinstance(where, Settings) else where


@contextmanager
def connect(db: Path) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(db, timeout=30)
    try:
        yield conn
    finally:
        conn.close()


def integrity(where: Where) -> str:
    """`PRAGMA integrity_check` plus FTS5's own index check; "ok" when both pass. On
    PostgreSQL the store's integrity_check (the server keeps its pages sound itself)."""
    if pg := _postgres(where):
        return backends.read_store(pg, lambda store: store.integrity_check())
    db = _file(where)
    with connect(db) as conn:
        result = "\n".join(str(r[0]) for r in conn.execute("PRAGMA integrity_check"))
        if result != "ok":
            return result
        try:
            conn.execute("INSERT INTO memory_fts(memory_fts) VALUES ('integrity-check')")
        except sqlite3.DatabaseError as exc:
            return f"fts5 integrity-check: {exc}"
        except sqlite3.OperationalError as exc:  # pragma: no cover - schema not there yet
            if "no such table" not in str(exc):
                raise
    return "ok"


def consistency(where: Where) -> Consistency:
    """`check_consistency()` from sync or async code (it runs on a thread of its own)."""
    store = where if isinstance(where, Settings) else Settings(db_path=where)
    return backends.read_store(store, lambda opened: opened.check_consistency())


def memory_ids(where: Where) -> set[str]:
    if pg := _postgres(where):
        return {m.id for m in backends.stored_memories(pg)}
    with connect(_file(where)) as conn:
        return {str(r[0]) for r in conn.execute("SELECT id FROM memories")}


def created_ids(where: Where) -> set[str]:
    """Memories with a `created` lineage event (lineage complete for every write)."""
    if pg := _postgres(where):
        return {m for m, event in backends.lineage_events(pg) if event == "created"}
    with connect(_file(where)) as conn:
        return {str(r[0]) for r in conn.execute(
            "SELECT DISTINCT memory_id FROM lineage WHERE event = 'created'")}


def contents(where: Where) -> list[str]:
    if pg := _postgres(where):
        return [m.content for m in backends.stored_memories(pg)]
    with connect(_file(where)) as conn:
        return [str(r[0]) for r in conn.execute("SELECT content FROM memories")]


def exists(where: Where) -> bool:
    """The SQLite file exists (whatever it holds), or the PostgreSQL schema has tables."""
    if pg := _postgres(where):
        return backends.store_exists(pg)
    return _file(where).exists()


def has_schema(where: Where) -> bool:
    if pg := _postgres(where):
        return backends.store_exists(pg)
    db = _file(where)
    if not db.exists():
        return False
    with connect(db) as conn:
        return conn.execute(
            "SELECT 1 FROM sqlite_master WHERE name = 'memories'").fetchone() is not None


@dataclass(frozen=True)
class Snapshot:
    """The stored content, row by row; `full` adds access counts, lineage and injections."""

    rows: tuple[tuple[str, tuple[Any, ...]], ...]

    @property
    def digest(self) -> str:
        return hashlib.sha256(repr(self.rows).encode("utf-8", "surrogatepass")).hexdigest()

    def diff(self, other: Snapshot, limit: int = 5) -> list[str]:
        mine, theirs = set(self.rows), set(other.rows)
        gone = sorted(mine - theirs, key=repr)[:limit]
        new = sorted(theirs - mine, key=repr)[:limit]
        return [f"- {r!r}"[:300] for r in gone] + [f"+ {r!r}"[:300] for r in new]


CONTENT_QUERIES = {
    "memories": "SELECT id, namespace, content, memory_type, importance, tags, "
    "linked_entities, token_count, metadata, session_id, content_hash, superseded_by, "
    "created_at FROM memories ORDER BY seq",
    "labels": "SELECT m.id, l.kind, l.value FROM memory_labels l JOIN memories m "
    "ON m.seq = l.seq ORDER BY m.id, l.kind, l.value",
    "fts": "SELECT rowid, content, labels FROM memory_fts ORDER BY rowid",
    "counters": "SELECT name, value FROM counters ORDER BY name",
}
FULL_QUERIES = {
    "access": "SELECT id, access_count, accessed_at FROM memories ORDER BY seq",
    "lineage": "SELECT memory_id, namespace, event, at, from_tier, to_tier, score, reason, "
    "count, last_at FROM lineage ORDER BY id",
    "injections": "SELECT session_id, memory_id, at FROM hook_injections "
    "ORDER BY session_id, memory_id",
}


PG_BOOKKEEPING = frozenset({"schema_version", "gc_cursors", "context_resets"})
"""PostgreSQL tables in neither snapshot (as their SQLite counterparts are in no query above)."""
PG_USAGE_TABLES = frozenset({"lineage", "hook_injections"})
PG_USAGE_COLUMNS = frozenset({"access_count", "accessed_at"})
"""What only the `full` snapshot holds: access counting, lineage, injections."""
PG_TABLE = "pg:"
"""Prefix of a PostgreSQL snapshot row's table (its row: the columns as sorted JSON)."""


def content_part(full: Snapshot) -> Snapshot:
    """The content snapshot inside a `full` one (what `snapshot(where)` would have read)."""
    sqlite_rows = [r for r in full.rows if r[0] in CONTENT_QUERIES]
    pg_rows = sorted((table, (_json({k: v for k, v in json.loads(row[0]).items()
                                     if k not in PG_USAGE_COLUMNS}),))
                     for table, row in full.rows if table.startswith(PG_TABLE)
                     and table.removeprefix(PG_TABLE) not in PG_USAGE_TABLES)
    return Snapshot(tuple(sqlite_rows + pg_rows))


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def snapshot(where: Where, *, full: bool = False) -> Snapshot:
    """Content snapshot (what a read may not change); `full`: everything (what a rejected
    call may not change, not even an access count). On PostgreSQL the same, table by table:
    every table but the bookkeeping ones SQLite's queries leave out too."""
    if pg := _postgres(where):
        assert pg.database_url is not None
        every = Snapshot(tuple(sorted(
            (PG_TABLE + table, (_json(json.loads(row)),)) for table, row
            in backends.postgres_rows(pg.database_url, skip_tables=PG_BOOKKEEPING))))
        return every if full else content_part(every)
    db = _file(where)
    queries = {**CONTENT_QUERIES, **(FULL_QUERIES if full else {})}
    rows: list[tuple[str, tuple[Any, ...]]] = []
    if not db.exists():
        return Snapshot(())
    with connect(db) as conn:
        for name, sql in queries.items():
            rows.extend((name, tuple(r)) for r in conn.execute(sql))
    return Snapshot(tuple(rows))


def text_values(where: Where, *, blobs: bool = False) -> Iterator[tuple[str, str, str]]:
    """(table, column, value) for every text value of every table, FTS shadow tables too;
    with `blobs`, BLOB values (the FTS index pages) decoded leniently as well. On PostgreSQL
    each whole row as text (column "*")."""
    if pg := _postgres(where):
        assert pg.database_url is not None
        for table, row in backends.postgres_rows(pg.database_url):
            yield table, "*", row
        return
    with connect(_file(where)) as conn:
        tables = [str(r[0]) for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            try:
                cur = conn.execute(f'SELECT * FROM "{table}"')
            except sqlite3.OperationalError:  # e.g. a virtual table of a missing module
                continue
            columns = [d[0] for d in cur.description]
            for row in cur:
                for column, value in zip(columns, row, strict=True):
                    if isinstance(value, str):
                        yield table, column, value
                    elif blobs and isinstance(value, bytes):
                        yield table, column, value.decode("utf-8", "replace")


def file_modes(db: Path) -> dict[str, int]:
    """Permission bits of the database file and of its -wal/-shm files where present."""
    modes: dict[str, int] = {}
    for suffix in ("", "-wal", "-shm"):
        path = db.with_name(db.name + suffix)
        if path.exists():
            modes[path.name] = stat.S_IMODE(path.stat().st_mode)
    return modes


def row_dump(where: Where) -> dict[str, dict[str, Any]]:
    """Each memory as a dict keyed by id (for before/after comparisons in readable form)."""
    if pg := _postgres(where):
        return {str(row["id"]): row for row in backends.stored_rows(pg)}
    with connect(_file(where)) as conn:
        conn.row_factory = sqlite3.Row
        out: dict[str, dict[str, Any]] = {}
        for row in conn.execute("SELECT * FROM memories"):
            record = dict(row)
            for key in ("tags", "linked_entities", "metadata"):
                record[key] = json.loads(record[key])
            out[str(record["id"])] = record
        return out
