"""Open the SQLite database and run schema migrations.

Several processes (one server per terminal, hooks, the CLI) share one file, so every
connection gets WAL (readers never block the writer), a generous busy_timeout (a writer waits
instead of failing with "database is locked") and foreign keys. Writes go through
`transaction()`, which takes the write lock up front with BEGIN IMMEDIATE: a transaction that
starts as a reader and upgrades later can fail with SQLITE_BUSY without waiting.

Migrations follow the sqlite-utils idea: an ordered list of numbered steps, the applied
number kept in `PRAGMA user_version`, all pending steps applied in one transaction.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import aiosqlite

from pma_mcp.errors import StorageError

log = logging.getLogger(__name__)

MEMORY = ":memory:"
BUSY_TIMEOUT_MS = 15_000
"""How long a writer waits for another process's write lock before giving up."""


@dataclass(frozen=True)
class Migration:
    """One forward step of the schema; `version` is the user_version it leaves behind."""

    version: int
    name: str
    statements: tuple[str, ...]
    derive: tuple[str, ...] = ()
    """Statements that (re)compute data kept beside the rows from the rows themselves; run
    after `statements`, and idempotent, so a fixture written row by row can refill them."""


async def connect(database: str, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> aiosqlite.Connection:
    """Open `database` (a file path or ':memory:') with the pragmas every process relies on.

    A prompt hook passes a short `busy_timeout_ms`: Claude Code gives it 10 s in all, and a
    late hook's context is thrown away.
    """
    if database != MEMORY:
        _create_private_file(Path(database))
    try:
        conn = await aiosqlite.connect(database, isolation_level=None)
    except sqlite3.Error as exc:
        raise StorageError(f"cannot open database {database}: {exc}") from exc
    conn.row_factory = sqlite3.Row
    try:
        await conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        if database != MEMORY:
            await _retry_locked(lambda: conn.execute("PRAGMA journal_mode = WAL"),
                                busy_timeout_ms)
            await conn.execute("PRAGMA synchronous = NORMAL")
        await conn.execute("PRAGMA foreign_keys = ON")
        await conn.execute("PRAGMA temp_store = MEMORY")
        await _ensure_math_functions(conn)
    except BaseException as exc:
        await conn.close()
        if isinstance(exc, sqlite3.DatabaseError):
            raise StorageError(f"cannot use database {database}: {exc}") from exc
        raise
    return conn


def _create_private_file(path: Path) -> None:
    """Create the file mode 0600 before SQLite does (memories hold private text).

    SQLite gives the -wal and -shm files the mode of the database file. An existing file's
    mode is left alone; `pma-mcp doctor` reports it.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        os.close(fd)
    except OSError as exc:
        raise StorageError(
            f"cannot create database file {path}: {exc.strerror or exc}; "
            "set PMA_DB_PATH to a writable location"
        ) from exc


async def _ensure_math_functions(conn: aiosqlite.Connection) -> None:
    """Register exp/ln where SQLite was built without its math functions."""
    try:
        await conn.execute("SELECT exp(0), ln(1)")
    except sqlite3.OperationalError:
        await conn.create_function("exp", 1, math.exp, deterministic=True)
        await conn.create_function("ln", 1, math.log, deterministic=True)


async def _retry_locked(op: Callable[[], Awaitable[object]], busy_timeout_ms: int) -> None:
    """Run `op`, retrying while another process holds a lock SQLite did not wait for
    (some lock requests fail at once instead of calling the busy handler).

    Retries stop once twice the busy timeout has passed, so a stuck lock costs a bounded
    wait, not a multiple of busy_timeout per attempt.
    """
    deadline = time.monotonic() + 2 * busy_timeout_ms / 1000
    attempt = 0
    while True:
        try:
            await op()
            return
        except sqlite3.OperationalError as exc:
            attempt += 1
            if not _is_locked(exc) or time.monotonic() >= deadline:
                raise
            await asyncio.sleep(min(0.05 * attempt, 0.5))


def _is_locked(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


@asynccontextmanager
async def transaction(
    conn: aiosqlite.Connection, busy_timeout_ms: int = BUSY_TIMEOUT_MS
) -> AsyncIterator[aiosqlite.Connection]:
    """BEGIN IMMEDIATE … COMMIT, rolled back on any error (including cancellation).

    BEGIN sits inside the `try`: a task cancelled while BEGIN waits for another process's
    lock has not stopped it (it runs on aiosqlite's thread and takes the lock later), so the
    rollback must still follow, or the connection would hold the write lock for good.
    """
    try:
        await _retry_locked(lambda: conn.execute("BEGIN IMMEDIATE"), busy_timeout_ms)
        yield conn
    except BaseException:
        await _rollback(conn)
        raise
    await conn.execute("COMMIT")


async def _rollback(conn: aiosqlite.Connection) -> None:
    """ROLLBACK that runs even if the caller is being cancelled.

    It is queued behind whatever the connection's thread is still doing (a pending BEGIN)
    and shielded, so a cancelled caller cannot abandon it; "no transaction is active" (BEGIN
    never happened) is fine.
    """
    async def rollback() -> None:
        try:
            await conn.execute("ROLLBACK")
        except (sqlite3.Error, ValueError):  # no transaction, or the connection is closed
            log.debug("rollback skipped", exc_info=True)

    await asyncio.shield(asyncio.ensure_future(rollback()))


async def schema_version(conn: aiosqlite.Connection) -> int:
    async with conn.execute("PRAGMA user_version") as cur:
        row = await cur.fetchone()
    return int(row[0]) if row else 0


async def migrate(conn: aiosqlite.Connection, migrations: Sequence[Migration]) -> int:
    """Apply every migration newer than the file's user_version; return the final version.

    Runs inside one write transaction, re-reading the version after taking the lock, so two
    processes opening a new file at once migrate it exactly once.
    """
    latest = migrations[-1].version if migrations else 0
    current = await schema_version(conn)
    if current > latest:
        raise StorageError(
            f"database schema version {current} is newer than this pma-mcp understands "
            f"({latest}); upgrade pma-mcp"
        )
    if current == latest:
        return current
    async with transaction(conn):
        current = await schema_version(conn)
        for step in migrations:
            if step.version <= current:
                continue
            log.info("migrating database schema to v%d (%s)", step.version, step.name)
            for statement in (*step.statements, *step.derive):
                await conn.execute(statement)
        await conn.execute(f"PRAGMA user_version = {latest}")
    return latest
