"""Driver errors → pma-mcp's StorageError hierarchy, at the one place they leave the store.

A server that cannot be reached, restarted or cut the connection is `StorageUnavailableError`
(retryable: the pool opens a new connection on the next call; store.py itself retries once
where nothing can have happened yet: a read, or a write whose BEGIN failed); a lock wait past
the timeout, a deadlock or a serialization failure is `StorageBusyError` (retryable: the
transaction was rolled back). Every message passes through url.redact, and the driver's
exception is not chained (`from None`), so no traceback can carry a password either.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import asyncpg

from pma_mcp.core.errors import PmaError, StorageBusyError, StorageError, StorageUnavailableError
from pma_mcp.store.postgres import url as urls

_UNAVAILABLE = (
    OSError,  # refused, unreachable, reset, timed out
    asyncpg.PostgresConnectionError,
    asyncpg.AdminShutdownError,
    asyncpg.CrashShutdownError,
    asyncpg.CannotConnectNowError,
    asyncpg.TooManyConnectionsError,
    asyncpg.ConnectionDoesNotExistError,
    asyncpg.InternalClientError,  # a pooled connection the server cut while it was idle
)
_BUSY = (
    asyncpg.LockNotAvailableError,
    asyncpg.DeadlockDetectedError,
    asyncpg.SerializationError,
    asyncpg.QueryCanceledError,
)
RETRYABLE_IN_TRANSACTION = (asyncpg.DeadlockDetectedError, asyncpg.SerializationError)
"""Failures a write transaction is simply run again for (store.py retries a few times)."""


def _closed(exc: BaseException) -> bool:
    """asyncpg's InterfaceError for a connection that went away under a call."""
    text = str(exc).lower()
    return isinstance(exc, asyncpg.InterfaceError) and (
        "connection is closed" in text or "connection was closed" in text
        or "pool is closed" in text)


def lost(exc: BaseException) -> bool:
    """Did the connection go away (the server restarted, the network or an admin cut it)?"""
    return isinstance(exc, _UNAVAILABLE) or _closed(exc)


def storage_error(exc: BaseException, url: str) -> StorageError | None:
    """The StorageError `exc` stands for, or None if it is not a driver/network error."""
    where = urls.location(url)
    detail = urls.redact(str(exc) or type(exc).__name__, url)
    if lost(exc):
        return StorageUnavailableError(
            f"the PostgreSQL server at {where} could not be reached or closed the "
            f"connection ({detail}); the call was not acknowledged: retry it, the next "
            "call reconnects")
    if isinstance(exc, _BUSY):
        return StorageBusyError(
            f"the PostgreSQL database at {where} is busy ({detail}); nothing was written: "
            "retry the call")
    if isinstance(exc, asyncpg.DiskFullError):
        return StorageError(f"the PostgreSQL server at {where} is out of disk space "
                            f"({detail}); nothing was written")
    if isinstance(exc, asyncpg.PostgresError | asyncpg.InterfaceError):
        return StorageError(f"PostgreSQL at {where}: {detail}")
    return None


@contextmanager
def mapped(url: str) -> Iterator[None]:
    """Re-raise driver and network errors inside the block as StorageError subclasses."""
    try:
        yield
    except PmaError:
        raise
    except Exception as exc:  # narrowed by storage_error
        error = storage_error(exc, url)
        if error is None:
            raise
        raise error from None
