"""The backend seam: what a SQL dialect supplies under the one `Store` written above it.

Every rule of keeping memories (dedupe and reinforce, edit preconditions, merge, delete
bookkeeping, term vectors and statistics, GC batching, session records, namespace moves,
consistency) is written once in store/memories.py and its mixins, as SQL in one neutral
spelling. A backend supplies only what differs between SQLite and PostgreSQL:

- `reads` and `write`: connections, transactions, locking and retries, with every driver
  error mapped to a StorageError inside them;
- the neutral SQL's translation (inside `Reads`/`Tx`, see below);
- the bulk insert path, the lexical candidate search and the near-duplicate match (FTS5 or
  postings) and the full-text index upkeep (`Tx.index`/`Tx.unindex`);
- the file- or server-level checks (`integrity_check`, `check_index`), planner statistics.

Neutral SQL is SQLite's with these conventions, which each backend translates:
- `?` is a parameter; `IN ?` takes a list or tuple (SQLite: `IN (?, ?, …)`; PostgreSQL:
  `= ANY($n)`), so no statement is built per list length above the seam;
- `::float8`-style casts are for PostgreSQL (SQLite drops them); `greatest`/`least` are
  SQLite's two-argument `max`/`min`;
- `INDEXED BY name` and a unary `+` before a column are SQLite planner hints (PostgreSQL
  drops them); `COLLATE "C"` is byte order (SQLite's default);
- `json_extract(column, '$.key')` reads one text member of a JSON column.
Rows are positional (a tuple, or asyncpg's Record): mappers read them by index.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from pma_mcp.core.models import Memory, Scope
from pma_mcp.core.text.relevance import AnalysedQuery

Row = Any
"""One result row, read by position: a tuple (SQLite) or an asyncpg Record."""

T = TypeVar("T")


class Reads(Protocol):
    """Statements outside a write transaction (each one on its own, never half-applied)."""

    async def fetch(self, sql: str, *args: Any) -> list[Row]: ...
    async def fetchrow(self, sql: str, *args: Any) -> Row | None: ...
    async def fetchval(self, sql: str, *args: Any) -> Any: ...


class Tx(Reads, Protocol):
    """One write transaction: statements, and the full-text index kept in step."""

    async def execute(self, sql: str, *args: Any) -> None: ...
    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None: ...

    async def insert_fitting(self, sql: str, rows: Sequence[Sequence[Any]]) -> int:
        """Insert each row that fits the table (constraints, types); how many did."""
        ...

    async def index(self, seq: int, texts: Mapping[str, str] | None = None, *,
                    new: bool = False) -> None:
        """Memory `seq`'s texts that changed ("content", "labels", "context"; `new`: all
        three, its first entry); without texts, its current flag or vectors did."""
        ...

    async def unindex(self, seq: int) -> None:
        """Memory `seq` was deleted."""
        ...


class Backend(Protocol):
    """A SQL database holding memories (see the module docstring)."""

    @property
    def name(self) -> str:
        """"sqlite" or "postgresql"."""
        ...

    @property
    def location(self) -> str: ...

    @property
    def reads(self) -> Reads: ...

    @property
    def accepts_writes(self) -> bool:
        """False where writes are refused up front (a SQLite file recorded as damaged):
        best-effort writes (access counts) are then skipped, not failed."""
        ...

    async def close(self) -> None: ...
    async def schema_version(self) -> int: ...

    async def write(self, namespaces: Iterable[str], body: Callable[[Tx], Awaitable[T]]) -> T:
        """Run `body` in one write transaction that holds the namespaces' write locks; returns
        once it committed. A backend may run `body` again after a deadlock or serialization
        loss, so `body` keeps no state outside the transaction."""
        ...

    async def insert_rows(self, tx: Tx, memories: Sequence[Memory], reason: str | None,
                          counts: Callable[[set[str], int], None]) -> None:
        """The bulk path of insert_many: `memories` are new (checked above the seam); each
        is stored as store.upkeep.insert_row would, its content terms reported to `counts`."""
        ...

    async def candidates(self, analysed: AnalysedQuery, scope: Scope, limit: int) -> list[Row]:
        """Up to `limit` memories of `scope` matching the query's searched terms, best first:
        rows of store.rows.CANDIDATE columns."""
        ...

    async def matching_all(
        self, namespace: str, groups: Sequence[Sequence[str]], limit: int
    ) -> list[Row]:
        """Current memories of `namespace` (store.rows.COLUMNS) whose own text holds every
        word of at least one group."""
        ...

    async def check_index(self) -> tuple[int, list[int], list[int], list[int], list[int]]:
        """(index rows, missing from the index, orphaned in it, indexed text that differs
        from the row, vectors that differ from what the index holds)."""
        ...

    async def integrity_check(self) -> str: ...
    async def refresh_statistics(self) -> None: ...

    async def pause(self, seconds: float) -> None:
        """Wait between two transactions of one long job, so other writers get in: on the
        event loop, or blocking where the store's statements do (a hook, store/sqlite/db.py)."""
        ...

    async def identity(self) -> tuple[object, ...]:
        """What makes this store this store, whatever spelling reached it: equal for two
        handles on the same data (a hard link, another host name for the same server)."""
        ...
