"""One exception hierarchy for every layer.

Callers (MCP tools, hooks, CLI) catch `PmaError` and show `str(err)`: each message is written
for the person or agent who has to fix the call, so it says what was wrong and what is allowed.
"""

from __future__ import annotations


class PmaError(Exception):
    """Base of every error pma-mcp raises on purpose."""


class InvalidInputError(PmaError):
    """An argument was rejected; nothing was written."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(f"{field}: {message}")


class NotFoundError(PmaError):
    """No memory with that id (or prefix) is visible from the caller's namespaces."""


class AmbiguousError(PmaError):
    """An id prefix matched more than one memory."""

    def __init__(self, prefix: str, candidates: list[str]) -> None:
        self.prefix = prefix
        self.candidates = candidates
        shown = ", ".join(candidates[:10])
        more = f" (and {len(candidates) - 10} more)" if len(candidates) > 10 else ""
        super().__init__(
            f"id prefix {prefix!r} matches {len(candidates)} memories: {shown}{more}; "
            "pass more characters of the id"
        )


class StorageError(PmaError):
    """The database could not be opened, migrated or written."""


class StorageBusyError(StorageError):
    """Another writer held what this call needed for too long, or a deadlock (retryable).

    The call's transaction was rolled back; retrying it is safe.
    """


class ConflictError(StorageError):
    """The memory changed under the call (another writer edited it since it was read);
    nothing was written: read it again and retry."""


class StorageUnavailableError(StorageError):
    """The database server could not be reached or the connection was cut; retryable, and
    the next call reconnects. A write that raised this was not acknowledged."""


class DiskFullError(StorageError):
    """The disk holding the database is full; the transaction was rolled back."""

    def __init__(self, database: str) -> None:
        self.database = database
        super().__init__(
            f"disk full: free space on the disk holding {database} (SQLite needs room for "
            "its write-ahead log too), then retry; nothing was written"
        )


class DatabaseDamagedError(StorageError):
    """SQLite found a damaged page (or no database at all) in the file."""

    def __init__(self, database: str, detail: str) -> None:
        self.database = database
        self.detail = detail
        super().__init__(
            f"database damaged ({detail}): run `pma-mcp doctor` to check {database}, then "
            "`pma-mcp doctor --repair` to salvage what can be read into a new file; writes "
            "are refused until repaired"
        )


class ConfigError(PmaError):
    """An environment variable holds a value pma-mcp cannot use."""


def error_line(program: str, exc: BaseException, *, hint: str = "") -> str:
    """How a command that cannot go on tells a person why, on one stderr line: our own
    errors as written, an OS error with the file it names, anything else by its type (with
    `hint` on where to see more)."""
    if isinstance(exc, PmaError):
        message = str(exc)
    elif isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        message = f"{where}{exc.strerror or exc}"
    else:
        message = f"unexpected {type(exc).__name__}: {exc}" + (f" ({hint})" if hint else "")
    return f"{program}: error: {' '.join(message.split())}\n"
