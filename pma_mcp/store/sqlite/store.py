"""SQLiteStore: the Store (store/memories.py) on a SQLite file, the embedded default."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from urllib.parse import quote

from pma_mcp.core.errors import StorageError
from pma_mcp.core.text import analysis
from pma_mcp.core.text.lexicon import speaker_of
from pma_mcp.store.memories import MemoryStore
from pma_mcp.store.sqlite import db
from pma_mcp.store.sqlite.backend import SqliteBackend, match_expression
from pma_mcp.store.sqlite.schema import MIGRATIONS

__all__ = ["SQLiteStore", "match_expression"]


class SQLiteStore(MemoryStore):
    """Open with `await SQLiteStore.open(database)`."""

    @classmethod
    async def open(cls, database: str, busy_timeout_ms: int = db.BUSY_TIMEOUT_MS, *,
                   blocking: bool = False) -> SQLiteStore:
        """Open (creating and migrating if needed) the file `database`; `blocking`: on a
        db.BlockingConnection, whose coroutines need no event loop."""
        conn = await db.connect(database, busy_timeout_ms, blocking=blocking)
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
        return cls(SqliteBackend(conn, busy_timeout_ms))

    @classmethod
    async def open_read_only(cls, path: Path) -> SQLiteStore:
        """The file as it is, never created or migrated (doctor); StorageError if it cannot
        be opened."""
        uri = f"file:{quote(str(path))}?mode=ro"
        try:
            conn = await db.open_connection(
                str(path), lambda: sqlite3.connect(uri, uri=True, isolation_level=None))
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open {path}: {exc}") from exc
        return cls(SqliteBackend(conn, db.BUSY_TIMEOUT_MS))
