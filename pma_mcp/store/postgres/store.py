"""PostgresStore: the Store (store/memories.py) on a PostgreSQL server shared by a team.

Connections follow libpq conventions (PGPASSWORD, ~/.pgpass, PG* variables, sslmode;
`options=-csearch_path=...` in the URL picks the schema); backend.py has the pool, the
locking and the retries.
"""

from __future__ import annotations

import logging

import asyncpg

from pma_mcp.core.errors import StorageError
from pma_mcp.store.memories import MemoryStore
from pma_mcp.store.postgres import faults, schema
from pma_mcp.store.postgres import url as urls
from pma_mcp.store.postgres.backend import PgBackend

log = logging.getLogger(__name__)

MIN_CONNECTIONS = 1
MAX_CONNECTIONS = 4
BUSY_TIMEOUT_MS = 15_000
"""lock_timeout of every connection: how long a write waits for another writer."""
CONNECT_TIMEOUT_S = 10.0
"""How long opening one connection may take (asyncpg's own default is 60 s): a server that
cannot be reached (a team database off the VPN) is reported, not waited for."""
APPLICATION_NAME = "pma-mcp"
"""How the server lists our connections, unless the URL names one (application_name=)."""


async def _pool(url: str, size: int, settings: dict[str, str],
                connect_timeout_s: float = CONNECT_TIMEOUT_S) -> asyncpg.Pool:
    with faults.mapped(url):
        try:
            return await asyncpg.create_pool(
                url, min_size=min(MIN_CONNECTIONS, size), max_size=size,
                timeout=connect_timeout_s,
                server_settings={**settings, "application_name": urls.query_value(
                    url, "application_name") or APPLICATION_NAME})
        except ValueError as exc:  # a malformed URL or option
            raise StorageError(f"cannot use database URL {urls.location(url)}: "
                               f"{urls.redact(str(exc), url)}") from None


class PostgresStore(MemoryStore):
    """Open with `await PostgresStore.open(url)`."""

    @classmethod
    async def open(cls, url: str, *, busy_timeout_ms: int | None = None,
                   connect_timeout_s: float | None = None) -> PostgresStore:
        """Connect and migrate the schema forward; a connection that takes longer than
        `connect_timeout_s` (default CONNECT_TIMEOUT_S) to open is given up.

        Raises StorageUnavailableError when the server cannot be reached, StorageError otherwise.
        """
        timeout = BUSY_TIMEOUT_MS if busy_timeout_ms is None else busy_timeout_ms
        pool = await _pool(url, MAX_CONNECTIONS, {"lock_timeout": str(int(timeout))},
                           CONNECT_TIMEOUT_S if connect_timeout_s is None else connect_timeout_s)
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
        return cls(PgBackend(pool, url))

    @classmethod
    async def open_existing(cls, url: str) -> PostgresStore:
        """Connect without creating or migrating anything (doctor): one connection."""
        return cls(PgBackend(await _pool(url, 1, {}), url))
