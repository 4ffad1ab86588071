"""Where memories are kept: `open_store(settings)` returns the configured backend.

SQLite (one file, no setup) unless PMA_DATABASE_URL names a PostgreSQL server (a team's
shared database). Each backend's driver is imported only when that backend is opened, so a
hook on SQLite never pays for asyncpg. See store/base.py for the contract.
"""

from __future__ import annotations

from pma_mcp.config import Settings
from pma_mcp.store.base import Candidate, Consistency, GCBatching, Store

__all__ = ["Candidate", "Consistency", "GCBatching", "Store", "open_store"]


async def open_store(settings: Settings, *, busy_timeout_ms: int | None = None) -> Store:
    """Open (creating and migrating if needed) the store `settings` name.

    `busy_timeout_ms`: how long a write waits for another writer before StorageBusy.
    """
    if settings.database_url:
        from pma_mcp.store.postgres.store import PostgresStore

        store: Store = await PostgresStore.open(settings.database_url,
                                                busy_timeout_ms=busy_timeout_ms)
        return store
    from pma_mcp.store.sqlite.repository import SQLiteStore

    if busy_timeout_ms is None:
        return await SQLiteStore.open(settings.database)
    return await SQLiteStore.open(settings.database, busy_timeout_ms)
