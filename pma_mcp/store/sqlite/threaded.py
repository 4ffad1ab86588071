"""aiosqlite's connection as `db.Conn`: statements on a thread of their own, so an event loop
(the server's) keeps serving while one waits for the disk or another process's lock.

A module of its own so that only a process that opens one imports aiosqlite and asyncio.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar

import aiosqlite

from pma_mcp.store.sqlite import db

T = TypeVar("T")


class ThreadedConnection(aiosqlite.Connection):
    """aiosqlite's connection with storage faults mapped (`db.map_fault`).

    Every statement, cursor fetch and commit passes through `_execute`, so this is the one
    place.
    """

    def __init__(self, database: str, connector: Callable[[], sqlite3.Connection]) -> None:
        super().__init__(connector, iter_chunk_size=64)
        self.database = database
        self.write_lock: AbstractAsyncContextManager[Any] = asyncio.Lock()

    async def _execute(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return await super()._execute(fn, *args, **kwargs)  # type: ignore[no-untyped-call]
        except sqlite3.Error as exc:
            fault = db.map_fault(exc, self.database)
            if fault is exc:
                raise
            raise fault from exc

    async def call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        result: T = await self._execute(fn, self._conn)
        return result

    def on_its_thread(self) -> db.BlockingConnection:
        """The same sqlite3 connection as a BlockingConnection, for code that `call` runs on
        this connection's thread (store/sqlite/store.py's one-trip calls); never closed
        itself: closing this connection closes both."""
        return db.BlockingConnection(self.database, lambda: self._conn)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def abandoned(self) -> bool:
        return False  # a cancelled caller's own CancelledError rolls its write back

    async def finish(self, step: Coroutine[Any, Any, None]) -> None:
        """Shielded: a ROLLBACK queued behind a pending BEGIN must run even if the caller is
        cancelled."""
        await asyncio.shield(asyncio.ensure_future(step))
