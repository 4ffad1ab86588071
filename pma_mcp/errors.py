"""One exception hierarchy for every layer.

Callers (MCP tools, hooks, CLI) catch `PmaError` and show `str(err)`: each message is written
for the person or agent who has to fix the call, so it says what was wrong and what is allowed.
"""

from __future__ import annotations


class PmaError(Exception):
    """Base of every error pma-mcp raises on purpose."""


class InvalidInput(PmaError):
    """An argument was rejected; nothing was written."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(f"{field}: {message}")


class NotFound(PmaError):
    """No memory with that id (or prefix) is visible from the caller's namespaces."""


class Ambiguous(PmaError):
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


class ConfigError(PmaError):
    """An environment variable holds a value pma-mcp cannot use."""
