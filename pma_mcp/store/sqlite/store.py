"""SQLiteStore: the Store (store/memories.py) on a SQLite file, the embedded default.

On a threaded connection (the server's) each statement is a trip to the connection's thread
and back, ~0.2 ms on a 2-core machine, and a recall made twelve of them. The calls of recall,
remember, update and forget (the `_one_trip` ones below) therefore run whole on that thread:
the same code over a BlockingConnection view of the same sqlite3 connection, which never
suspends, so all of a call's statements take one trip. Longer work (GC, imports, moves)
keeps its statement-by-statement trips, so a recall is never queued behind a whole GC run.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, Concatenate, NamedTuple, ParamSpec, TypeVar
from urllib.parse import quote

from pma_mcp.core.blocking import run_to_end
from pma_mcp.core.errors import StorageError
from pma_mcp.core.text import analysis
from pma_mcp.core.text.lexicon import speaker_of
from pma_mcp.store.memories import MemoryStore
from pma_mcp.store.sqlite import db
from pma_mcp.store.sqlite.backend import SqliteBackend, match_expression
from pma_mcp.store.sqlite.schema import MIGRATIONS

__all__ = ["SQLiteStore", "match_expression"]

P = ParamSpec("P")
T = TypeVar("T")


class _Trips(NamedTuple):
    conn: db.Conn
    """A threaded connection (store/sqlite/threaded.py)."""
    view: db.BlockingConnection
    """The same sqlite3 connection, used on its thread (`conn.on_its_thread()`)."""
    on_thread: MemoryStore
    """The store over `view`: what a one-trip call runs."""


def _one_trip(
    method: Callable[Concatenate[MemoryStore, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[SQLiteStore, P], Coroutine[Any, Any, T]]:
    """`method`, run whole on the connection's thread when the store has one.

    It holds the connection's write lock, as a write does (store/sqlite/backend.py), so it
    never runs between the statements of another call's transaction. Once handed to the
    thread it runs to its end even if its caller is cancelled, but a write whose caller
    was cancelled before its COMMIT is rolled back (db.CallerGone), as it is on the loop."""
    async def trip(self: SQLiteStore, /, *args: P.args, **kwargs: P.kwargs) -> T:
        if self._trips is None:
            return await method(self, *args, **kwargs)
        conn, view, on_thread = self._trips
        gone = threading.Event()

        def whole(_: object) -> T:
            view.caller_gone = gone.is_set
            try:
                return run_to_end(method(on_thread, *args, **kwargs))
            finally:
                view.caller_gone = db.never_gone

        async with conn.write_lock:
            try:
                return await conn.call(whole)
            except BaseException:
                gone.set()
                raise
    trip.__name__, trip.__doc__ = method.__name__, method.__doc__
    return trip


class SQLiteStore(MemoryStore):
    """Open with `await SQLiteStore.open(database)`."""

    def __init__(self, backend: SqliteBackend, trips: _Trips | None = None) -> None:
        super().__init__(backend)
        self._trips = trips

    insert = _one_trip(MemoryStore.insert)
    touch = _one_trip(MemoryStore.touch)
    delete = _one_trip(MemoryStore.delete)
    edit = _one_trip(MemoryStore.edit)
    get = _one_trip(MemoryStore.get)
    find_by_prefix = _one_trip(MemoryStore.find_by_prefix)
    memories_by_seq = _one_trip(MemoryStore.memories_by_seq)
    has_content = _one_trip(MemoryStore.has_content)
    lexical_candidates = _one_trip(MemoryStore.lexical_candidates)
    sharing_candidates = _one_trip(MemoryStore.sharing_candidates)
    similarity_of = _one_trip(MemoryStore.similarity_of)
    static_candidates = _one_trip(MemoryStore.static_candidates)
    labelled = _one_trip(MemoryStore.labelled)

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
        return cls(SqliteBackend(conn, busy_timeout_ms), _trips_of(conn, busy_timeout_ms))

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


def _trips_of(conn: db.Conn, busy_timeout_ms: int) -> _Trips | None:
    """One-trip calls for a threaded connection; None for a blocking one (every call is
    on the calling thread already). Asked of the connection rather than checked with
    isinstance: importing threaded.py would load aiosqlite and asyncio on the hook path."""
    on_its_thread = getattr(conn, "on_its_thread", None)
    if on_its_thread is None:
        return None
    view: db.BlockingConnection = on_its_thread()
    return _Trips(conn, view, MemoryStore(SqliteBackend(view, busy_timeout_ms)))
