"""Open the SQLite database and run schema migrations.

Several processes (one server per terminal, hooks, the CLI) share one file, so every
connection gets WAL (readers never block the writer), a generous busy_timeout (a writer waits
instead of failing with "database is locked") and foreign keys. Writes go through
`transaction()`, which takes the write lock up front with BEGIN IMMEDIATE: a transaction that
starts as a reader and upgrades later can fail with SQLITE_BUSY without waiting.

Migrations follow the sqlite-utils idea: an ordered list of numbered steps, the applied
number kept in `PRAGMA user_version`, all pending steps applied in one transaction.

Two kinds of connection offer the same coroutines (`Conn`): aiosqlite's (store/sqlite/threaded.py),
whose statements run on a thread of their own so a server's event loop keeps serving, and
`BlockingConnection`, whose statements run on the calling thread and never suspend the
coroutine, for a process that does nothing else meanwhile (a hook): its coroutines then need
no event loop at all, and the process never imports asyncio (hooks/handlers.py).

Storage faults are mapped here, the one place driver errors meet pma-mcp's hierarchy: a full
disk becomes `DiskFullError`, a damaged page `DatabaseDamagedError`. Damage is remembered in a
marker file beside the database (`<db>.damaged`), so every process refuses to write into the
file until `pma-mcp doctor --repair` replaces it.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import math
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from pma_mcp import files
from pma_mcp.core.errors import DatabaseDamagedError, DiskFullError, StorageBusyError, StorageError

log = logging.getLogger(__name__)
T = TypeVar("T")

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
    fill: Callable[[Conn], Awaitable[None]] | None = None
    """A step SQL cannot say, run in this process after `derive` (a rule of the store's
    written in Python), in the migration's transaction."""


# ------------------------------------------------------------------ storage faults

_SQLITE_FULL = 13
_SQLITE_CORRUPT = 11
_SQLITE_NOTADB = 26
_SQLITE_IOERR = 10


def storage_fault(exc: sqlite3.Error, database: str) -> StorageError | None:
    """The StorageError a driver error stands for, or None to let it through as it is.

    Busy/locked and constraint errors are not faults: callers retry or report them.
    """
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    text = str(exc).lower()
    cause = exc.__cause__ or exc.__context__
    if (primary == _SQLITE_FULL or "database or disk is full" in text
            or (primary == _SQLITE_IOERR and isinstance(cause, OSError)
                and cause.errno == errno.ENOSPC)):
        return DiskFullError(database)
    if primary in (_SQLITE_CORRUPT, _SQLITE_NOTADB) or "malformed" in text \
            or "not a database" in text:
        return DatabaseDamagedError(database, str(exc))
    return None


def driver_error(exc: sqlite3.Error, database: str) -> StorageError:
    """Any driver error as the StorageError it stands for: a fault (above), a lock held past
    the busy timeout (StorageBusyError), else a StorageError that points at doctor."""
    fault = storage_fault(exc, database)
    if fault is not None:
        return fault
    if isinstance(exc, sqlite3.OperationalError) and _is_locked(exc):
        return StorageBusyError(f"{database} is busy: another pma-mcp process held its write lock "
                           "longer than this call waits; retry")
    # Not the caller's doing (a schema changed behind our back, a bug): the detail is for
    # the log, the message says what to do.
    log.error("database error on %s (%s)", database,
              getattr(exc, "sqlite_errorname", type(exc).__name__), exc_info=exc)
    return StorageError(f"internal database error on {database} (the details are in the "
                        "pma-mcp log); run `pma-mcp doctor`, then retry")


def damage_marker(database: str) -> Path:
    """The file that records a database as damaged; its text is what SQLite reported."""
    return Path(f"{database}.damaged")


def damage_recorded(database: str) -> str | None:
    """What was recorded against `database`, or None if it is not known to be damaged."""
    if database == MEMORY:
        return None
    try:
        return damage_marker(database).read_text(encoding="utf-8").strip() or "damaged"
    except OSError:
        return None


def record_damage(database: str, detail: str) -> None:
    """Mark `database` damaged for every process; best effort (the disk may be full too)."""
    if database == MEMORY:
        return
    with contextlib.suppress(OSError):
        damage_marker(database).write_text(detail + "\n", encoding="utf-8")
    # info: the caller reports the DatabaseDamagedError (a hook has one stderr line to give)
    log.info("recorded %s as damaged (%s)", database, detail)


def clear_damage(database: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        damage_marker(database).unlink()


class CallerGone(Exception):
    """A write run on the connection's thread for a caller that was cancelled meanwhile:
    rolled back before its COMMIT, as a cancelled write on the event loop is."""


def never_gone() -> bool:
    return False


class Conn(Protocol):
    """A connection as the store uses it: aiosqlite's subset, storage faults mapped."""

    database: str
    write_lock: AbstractAsyncContextManager[Any]
    """Held by each write transaction: coroutines sharing a threaded connection (parallel
    tool calls) would otherwise issue BEGIN inside each other's transaction."""

    @property
    def row_factory(self) -> Any: ...
    @row_factory.setter
    def row_factory(self, factory: Any) -> None: ...

    async def execute(self, sql: str, parameters: Iterable[Any] | None = None) -> Any: ...
    async def execute_fetchall(
        self, sql: str, parameters: Iterable[Any] | None = None) -> Iterable[Any]: ...
    async def executemany(self, sql: str, parameters: Iterable[Iterable[Any]]) -> Any: ...
    async def create_function(self, name: str, num_params: int, func: Callable[..., Any],
                              deterministic: bool = False) -> None: ...
    async def close(self) -> None: ...

    async def call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """`fn` on the sqlite3 connection itself, where its statements run (several in one
        trip; faults mapped as every statement's are)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait before a retry (another process holds the lock)."""
        ...

    async def finish(self, step: Coroutine[Any, Any, None]) -> None:
        """Run `step` to its end even if the caller is cancelled meanwhile."""
        ...

    def abandoned(self) -> bool:
        """Whoever this write runs for is gone: `transaction` rolls back instead of
        committing (store/sqlite/store.py's one-trip calls)."""
        ...


def map_fault(exc: sqlite3.Error, database: str) -> BaseException:
    """What a statement's driver error leaves as: the StorageError of a storage fault (a
    damaged page is recorded, so later writes are refused up front), else the error itself."""
    fault = storage_fault(exc, database)
    if fault is None:
        return exc
    if isinstance(fault, DatabaseDamagedError) and _is_corrupt(exc):
        record_damage(database, fault.detail)
    return fault


def _is_corrupt(exc: sqlite3.Error) -> bool:
    """A damaged page in a real database (not a file that is no database at all)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return (code & 0xFF == _SQLITE_CORRUPT) if isinstance(code, int) else (
        "malformed" in str(exc).lower())


class BlockingConnection:
    """A sqlite3 connection behind `Conn`'s coroutines, each finished before it returns.

    Nothing here ever suspends, so a coroutine that only awaits these runs to its end on its
    first step, without an event loop. For one-shot processes only: a server must not block its
    event loop on a statement that waits for another process's lock.
    """

    def __init__(self, database: str, connector: Callable[[], sqlite3.Connection]) -> None:
        self.database = database
        self.write_lock: AbstractAsyncContextManager[Any] = contextlib.nullcontext()
        self.caller_gone: Callable[[], bool] = never_gone
        """Set for the length of a one-trip call (store/sqlite/store.py)."""
        self._conn: sqlite3.Connection | None = self._call(connector)

    def _call(self, fn: Callable[..., T], *args: Any) -> T:
        try:
            return fn(*args)
        except sqlite3.Error as exc:
            fault = map_fault(exc, self.database)
            if fault is exc:
                raise
            raise fault from exc

    @property
    def _open(self) -> sqlite3.Connection:
        if self._conn is None:
            raise ValueError("Connection closed")
        return self._conn

    @property
    def row_factory(self) -> Any:
        return self._open.row_factory

    @row_factory.setter
    def row_factory(self, factory: Any) -> None:
        self._open.row_factory = factory

    async def execute(self, sql: str, parameters: Iterable[Any] | None = None) -> Any:
        return self._call(self._open.execute, sql, () if parameters is None else parameters)

    async def execute_fetchall(
            self, sql: str, parameters: Iterable[Any] | None = None) -> Iterable[Any]:
        cursor = await self.execute(sql, parameters)
        return self._call(cursor.fetchall)

    async def executemany(self, sql: str, parameters: Iterable[Iterable[Any]]) -> Any:
        return self._call(self._open.executemany, sql, parameters)

    async def create_function(self, name: str, num_params: int, func: Callable[..., Any],
                              deterministic: bool = False) -> None:
        conn = self._open
        self._call(lambda: conn.create_function(name, num_params, func,
                                                deterministic=deterministic))

    async def close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            self._call(conn.close)

    async def call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return self._call(fn, self._open)

    async def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    async def finish(self, step: Coroutine[Any, Any, None]) -> None:
        await step

    def abandoned(self) -> bool:
        return self.caller_gone()


# ------------------------------------------------------------------------ opening


async def connect(database: str, busy_timeout_ms: int = BUSY_TIMEOUT_MS, *,
                  blocking: bool = False) -> Conn:
    """Open `database` (a file path or ':memory:') with the pragmas every process relies on.

    A prompt hook passes a short `busy_timeout_ms`: Claude Code gives it 10 s in all, and a
    late hook's context is thrown away. `blocking`: a BlockingConnection (see the module
    docstring), else a threaded one.
    """
    if database != MEMORY:
        refuse_non_regular(Path(database))
        _create_private_file(Path(database))
    try:
        conn = await open_connection(
            database, lambda: sqlite3.connect(database, isolation_level=None), blocking=blocking)
    except StorageError:
        raise
    except sqlite3.Error as exc:
        raise StorageError(f"cannot open database {database}: {exc}") from exc
    conn.row_factory = sqlite3.Row
    try:
        await conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        if database != MEMORY:
            await _retry_locked(conn, lambda: conn.execute("PRAGMA journal_mode = WAL"),
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


async def open_connection(database: str, connector: Callable[[], sqlite3.Connection], *,
                          blocking: bool = False) -> Conn:
    """`connector`'s connection as a BlockingConnection or on aiosqlite's thread (imported
    only then, with asyncio)."""
    if blocking:
        return BlockingConnection(database, connector)
    from pma_mcp.store.sqlite.threaded import ThreadedConnection

    conn = ThreadedConnection(database, connector)
    await conn  # starts its thread, which connects
    return conn


def refuse_writes_if_damaged(conn: Conn) -> None:
    """Raise DatabaseDamagedError when `conn`'s file is recorded as damaged."""
    detail = damage_recorded(conn.database)
    if detail is not None:
        raise DatabaseDamagedError(conn.database, detail)


def refuse_non_regular(path: Path) -> None:
    """A FIFO, device or directory as the database is one clear error before SQLite opens it
    (SQLite would answer "disk I/O error", or block on a FIFO)."""
    why = files.not_regular(path)
    if why is not None:
        raise StorageError(f"cannot open database {path}: it {why}; set PMA_DB_PATH to the "
                           "path of a regular file (or of one to create)")


def _create_private_file(path: Path) -> None:
    """Create the file mode 0600 before SQLite does (memories hold private text).

    SQLite gives the -wal and -shm files the mode of the database file. An existing file's
    mode is left alone; `pma-mcp doctor` reports it. An existing file is never opened here:
    closing any descriptor of a file drops every POSIX lock this process holds on it, so an
    open and close beside another connection of the same process (the server's, while it
    answers a hook: hooks/listener.py) would take that connection's locks away, and a
    checkpoint elsewhere could then remove the WAL index it still reads (SQLITE_IOERR).
    """
    if path.exists():
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return  # another process created it meanwhile
        os.close(fd)
    except OSError as exc:
        raise StorageError(
            f"cannot create database file {path}: {exc.strerror or exc}; "
            "set PMA_DB_PATH to a writable location"
        ) from exc


async def _ensure_math_functions(conn: Conn) -> None:
    """Register exp/ln where SQLite was built without its math functions."""
    try:
        await conn.execute("SELECT exp(0), ln(1)")
    except sqlite3.OperationalError:
        await conn.create_function("exp", 1, math.exp, deterministic=True)
        await conn.create_function("ln", 1, math.log, deterministic=True)


async def _retry_locked(conn: Conn, op: Callable[[], Awaitable[object]],
                        busy_timeout_ms: int) -> None:
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
            await conn.sleep(min(0.05 * attempt, 0.5))


def _is_locked(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


@asynccontextmanager
async def transaction(
    conn: Conn, busy_timeout_ms: int = BUSY_TIMEOUT_MS,
    commit: Callable[[], Awaitable[None]] | None = None,
) -> AsyncIterator[Conn]:
    """BEGIN IMMEDIATE … COMMIT, rolled back on any error (including cancellation).
    `commit` commits instead of a COMMIT of its own (a caller sending it with other
    statements in one trip).

    Refused up front when the file is recorded as damaged (DatabaseDamagedError).

    BEGIN sits inside the `try`: a task cancelled while BEGIN waits for another process's
    lock has not stopped it (it runs on aiosqlite's thread and takes the lock later), so the
    rollback must still follow, or the connection would hold the write lock for good.
    """
    refuse_writes_if_damaged(conn)  # a stat: other processes may have found the damage
    try:
        await _retry_locked(conn, lambda: conn.execute("BEGIN IMMEDIATE"), busy_timeout_ms)
        yield conn
        if conn.abandoned():
            raise CallerGone(f"a write to {conn.database} whose caller was cancelled")
        # a COMMIT that fails (disk full) leaves the transaction open: rolled back below
        await (commit() if commit is not None else conn.execute("COMMIT"))
    except BaseException:
        await _rollback(conn)
        raise


async def _rollback(conn: Conn) -> None:
    """ROLLBACK that runs even if the caller is being cancelled.

    It is queued behind whatever the connection's thread is still doing (a pending BEGIN)
    and shielded, so a cancelled caller cannot abandon it; "no transaction is active" (BEGIN
    never happened) is fine.
    """
    async def rollback() -> None:
        try:
            await conn.execute("ROLLBACK")
        except (sqlite3.Error, StorageError, ValueError):  # none active, or closed
            log.debug("rollback skipped", exc_info=True)

    await conn.finish(rollback())


async def schema_version(conn: Conn) -> int:
    found = list(await conn.execute_fetchall("PRAGMA user_version"))
    return int(found[0][0]) if found else 0


async def migrate(conn: Conn, migrations: Sequence[Migration]) -> int:
    """Apply every migration newer than the file's user_version; return the final version.

    Runs inside one write transaction, re-reading the version after taking the lock, so two
    processes opening a new file at once migrate it exactly once. Every pending step's
    statements run before any step's `fill`: a fill is today's store code and reads rows with
    today's columns (a v14 fold of an older file reads the kind column v15 adds).
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
        pending = [step for step in migrations if step.version > current]
        for step in pending:
            log.info("migrating database schema to v%d (%s)", step.version, step.name)
            for statement in (*step.statements, *step.derive):
                await conn.execute(statement)
        for step in pending:
            if step.fill is not None:
                await step.fill(conn)
        await conn.execute(f"PRAGMA user_version = {latest}")
    return latest
