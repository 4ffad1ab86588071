"""Where memories are kept: `open_store(settings)` returns the configured backend.

SQLite (one file, no setup) unless PMA_DATABASE_URL names a PostgreSQL server (a team's
shared database). Each backend's driver is imported only when that backend is opened, so a
hook on SQLite never pays for asyncpg. See store/base.py for the contract, store/memories.py
for the one implementation and store/seam.py for what a backend supplies.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from pma_mcp.config import Settings
from pma_mcp.core.errors import StorageError
from pma_mcp.store.base import Candidate, Consistency, GCBatching, Store

__all__ = ["Candidate", "Consistency", "GCBatching", "Store", "fold_namespaces", "open_store"]

log = logging.getLogger(__name__)


async def open_store(settings: Settings, *, busy_timeout_ms: int | None = None,
                     connect_timeout_s: float | None = None, blocking: bool = False) -> Store:
    """Open (creating and migrating if needed) the store `settings` name.

    `busy_timeout_ms`: how long a write waits for another writer before StorageBusyError.
    `connect_timeout_s`: how long opening a PostgreSQL connection may take before
    StorageUnavailableError (default: store/postgres/store.py's CONNECT_TIMEOUT_S).
    `blocking`: a SQLite store's statements run on the calling thread and its coroutines
    never suspend, so a one-shot process can run them without an event loop
    (hooks/handlers.py); PostgreSQL ignores it (its driver needs the loop).
    """
    if settings.database_url:
        from pma_mcp.store.postgres.store import PostgresStore

        store: Store = await PostgresStore.open(settings.database_url,
                                                busy_timeout_ms=busy_timeout_ms,
                                                connect_timeout_s=connect_timeout_s)
        return store
    from pma_mcp.store.sqlite.store import SQLiteStore

    if busy_timeout_ms is None:
        return await SQLiteStore.open(settings.database, blocking=blocking)
    return await SQLiteStore.open(settings.database, busy_timeout_ms, blocking=blocking)


async def fold_namespaces(store: Store, moves: Mapping[str, str], now: float) -> None:
    """Move each old namespace's memories into its new one (Store.move_namespace, merging
    exact duplicates). The service runs it as it opens, so a failure (busy, read-only) must
    never stop the open: it stops the folding and leaves the rest for the next open."""
    for old, new in moves.items():
        try:
            moved = await store.move_namespace(old, new, now)
        except StorageError as exc:
            log.info("namespace %r not folded into %r yet: %s", old, new, exc)
            return
        log.info("folded %d memories of namespace %r into %r", moved, old, new)
