"""Where memories are kept: `open_store(settings)` returns the configured backend.

SQLite (one file, no setup) unless PMA_DATABASE_URL names a PostgreSQL server (a team's
shared database). Each backend's driver is imported only when that backend is opened, so a
hook on SQLite never pays for asyncpg. See store/base.py for the contract.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

from pma_mcp.config import Settings
from pma_mcp.core.errors import StorageError
from pma_mcp.core.namespaces import uncanonical_namespaces
from pma_mcp.store.base import Candidate, Consistency, GCBatching, Store

__all__ = ["Candidate", "Consistency", "GCBatching", "Store", "fold_namespaces", "open_store"]

log = logging.getLogger(__name__)


async def open_store(settings: Settings, *, busy_timeout_ms: int | None = None) -> Store:
    """Open (creating and migrating if needed) the store `settings` name, with namespaces
    stored under another spelling of a path folded into the canonical one.

    `busy_timeout_ms`: how long a write waits for another writer before StorageBusyError.
    """
    store = await _open(settings, busy_timeout_ms)
    try:
        # Hooks before issue 11 took Claude Code's cwd literally (a symlink, a trailing
        # slash), so one project could hold memories under several spellings.
        await fold_namespaces(store, uncanonical_namespaces(await store.namespaces()),
                              time.time())
    except BaseException:
        await store.close()
        raise
    return store


async def _open(settings: Settings, busy_timeout_ms: int | None) -> Store:
    if settings.database_url:
        from pma_mcp.store.postgres.store import PostgresStore

        store: Store = await PostgresStore.open(settings.database_url,
                                                busy_timeout_ms=busy_timeout_ms)
        return store
    from pma_mcp.store.sqlite.store import SQLiteStore

    if busy_timeout_ms is None:
        return await SQLiteStore.open(settings.database)
    return await SQLiteStore.open(settings.database, busy_timeout_ms)


async def fold_namespaces(store: Store, moves: Mapping[str, str], now: float) -> None:
    """Move each old namespace's memories into its new one (Store.move_namespace, merging
    exact duplicates). Runs at every open, so a failure (busy, read-only) must never stop
    the open: it stops the folding and leaves the rest for the next open."""
    for old, new in moves.items():
        try:
            moved = await store.move_namespace(old, new, now)
        except StorageError as exc:
            log.info("namespace %r not folded into %r yet: %s", old, new, exc)
            return
        log.info("folded %d memories of namespace %r into %r", moved, old, new)
