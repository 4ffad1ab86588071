"""What the service needs from a store, and the values that cross it.

`Store` is implemented once (store/memories.py, MemoryStore) over two backends: SQLite
(store/sqlite/, the embedded default) and PostgreSQL (store/postgres/, a shared team
database), each supplying only what store/seam.py asks of it. Above this line nothing names a
backend or a driver: `open_store(settings)` picks one, every driver error leaves a store as a
`StorageError` (a busy/locked database as `StorageBusyError`, a lost update as
`ConflictError`), and each store serialises its own writes, so callers may share one store
between concurrent coroutines.

Every write is one transaction that keeps a memory's row, its labels, its full-text entry,
its term vectors, its namespace's statistics and its lineage in step: a crash leaves all or
none. Policy (what to score, what to demote) lives outside; the store keeps memories
(dedupe, supersede, merge, bookkeeping) and fetches them.

Lexical ranking is a store operation: `lexical_candidates` returns memories with their
semantic_similarity already in [0, 1), computed by core.text.relevance from term statistics of
the searched namespaces alone, so both backends rank the same store the same way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pma_mcp.core.models import GCFacts, Memory, MemoryType, Scope
from pma_mcp.core.scoring import Weights

if TYPE_CHECKING:
    from pma_mcp.core.records import Browse, GCDecision, LineageEvent, TierFacts


@dataclass(frozen=True, slots=True)
class GCBatching:
    """How a GC plan is cut into transactions (see `Store.apply_gc`)."""

    changes: int = 1_000
    seconds: float = 0.2
    pause: float = 0.12
    """SQLite's default busy handler sleeps at most 100 ms between retries."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """Just what ranking needs, so only the memories that make the cut are loaded in full."""

    seq: int
    semantic: float
    """semantic_similarity in [0, 1) for the query (0 without one)."""
    importance: float
    created_at: float
    access_count: int
    speaker: str | None = None
    """A lexical candidate's: who speaks in it ("Name: text"), its content term vector
    (bm25.encode) and session, what the second pass (core/rerank.py) reads."""
    terms: str = ""
    session_id: str | None = None




@dataclass(frozen=True)
class Consistency:
    """Result of comparing the memories with their full-text index, labels and statistics."""

    memories: int
    fts_rows: int
    missing_in_fts: list[int]
    orphaned_fts: list[int]
    mismatched: list[int]
    term_counts_off: list[str] = dataclasses.field(default_factory=list)
    vectors_off: list[int] = dataclasses.field(default_factory=list)
    """Memories whose stored term vectors or length differ from their index row."""
    namespace_stats_off: list[str] = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.missing_in_fts or self.orphaned_fts or self.mismatched
                    or self.term_counts_off or self.vectors_off or self.namespace_stats_off)


LineageRow = tuple[Any, ...]
"""(memory_id, namespace, event, at, from_tier, to_tier, score, reason, count, last_at)."""


@dataclass(frozen=True)
class SessionState:
    """What the hooks remember per session: injected memories and context resets."""

    injections: list[tuple[str, str, float]]
    """(session_id, memory_id, at)."""
    resets: list[tuple[str, float]]
    """(session_id, at)."""


class Store(Protocol):
    """The one door to stored memories. Obtain one with `pma_mcp.store.open_store`."""

    @property
    def backend(self) -> str:
        """"sqlite" or "postgresql"."""
        ...

    @property
    def location(self) -> str:
        """Where the store is, for people: a path, or a URL without its password."""
        ...

    async def identity(self) -> tuple[object, ...]:
        """Equal for two handles on the same stored data however each was spelled: a SQLite
        file's (device, inode), a PostgreSQL cluster's system identifier, database oid and
        schema."""
        ...

    async def close(self) -> None: ...
    async def schema_version(self) -> int: ...

    # ---------------------------------------------------------------- writes

    async def insert(
        self, memory: Memory, *, supersedes: Memory | None = None, reason: str = ""
    ) -> tuple[Memory, bool]:
        """Store `memory` unless its namespace already holds the same content.

        Returns (stored memory, deduplicated). An exact duplicate is reinforced (one more
        access) and returned instead; a superseded one becomes current again. With
        `supersedes`, the old memory is archived and points at the new one, atomically.
        """
        ...

    async def insert_many(
        self,
        memories: Sequence[Memory],
        *,
        skip_existing: bool,
        progress: Callable[[int], None] | None = None,
        lineage: bool = True,
    ) -> int:
        """Import memories verbatim (ids, counts, timestamps) in one transaction; with
        `skip_existing` an existing id or content is skipped, else it aborts the import.
        With `lineage=False` no `created` event is written (a copy brings its own)."""
        ...

    async def touch(self, memories: Sequence[Memory], now: float, reason: str = "") -> None:
        """Count one access for each memory (access_count, accessed_at, lineage)."""
        ...

    async def delete(self, memory: Memory, now: float, reason: str) -> None: ...

    async def edit(self, old: Memory, new: Memory, now: float, reason: str) -> Memory:
        """Rewrite `old`'s editable fields as `new`'s, keeping its id; refused if it changed
        since it was read or the new content is another memory's."""
        ...

    async def apply_gc(
        self,
        decisions: Sequence[GCDecision],
        memories: dict[str, Memory],
        now: float,
        cursor: tuple[str, int] | None = None,
        *,
        batch: GCBatching | None = None,
    ) -> int:
        """Apply a collector plan in short transactions with lineage; steps whose memory
        changed since the plan are skipped. Returns the number of transactions."""
        ...

    async def record_injections(
        self,
        session_id: str | None,
        memories: Sequence[Memory],
        now: float,
        *,
        forget_before: float,
        reason: str = "",
    ) -> None:
        """Count an access for memories put into a session's context and remember them."""
        ...

    async def clear_injections(
        self, session_id: str, now: float, *, forget_before: float
    ) -> int:
        """Forget what was injected into a session and note when (compaction or clear)."""
        ...

    async def move_namespace(self, old: str, new: str, now: float) -> int:
        """Fold namespace `old` into `new`; how many memories moved."""
        ...

    async def restore_lineage(self, rows: Sequence[Sequence[Any]]) -> int:
        """Insert LineageRows as read from another store; how many."""
        ...

    async def restore_session_state(self, state: SessionState) -> None:
        """Merge another store's session state in (the later time wins per key)."""
        ...

    async def refresh_statistics(self) -> None:
        """After a bulk load (`migrate --to`): bring the query planner's statistics up to
        date, where the backend keeps any."""
        ...

    # ----------------------------------------------------------------- reads

    async def get(self, memory_id: str) -> Memory | None: ...

    async def find_by_prefix(
        self, prefix: str, namespaces: Sequence[str], limit: int = 20
    ) -> list[Memory]: ...

    async def memories_by_seq(self, seqs: Sequence[int]) -> dict[int, Memory]: ...

    async def has_content(self, namespace: str, content_hash: str) -> bool: ...

    async def lexical_candidates(self, query: str, scope: Scope, limit: int) -> list[Candidate]:
        """Up to `limit` memories in `scope` matching words of `query`, best first, with
        semantic_similarity (core.text.relevance). Empty when the query has no searchable word."""
        ...

    async def sharing_candidates(
        self, text: str, scope: Scope, limit: int,
        choose: Callable[[Mapping[str, int]], Sequence[str]],
    ) -> list[Candidate]:
        """Up to `limit` memories in `scope` whose own text holds one of the terms `choose`
        picks from `text`'s (given how many memories of the store hold each in their own
        text), best first; the memories one being stored may repeat. Semantic 0: callers
        compare Candidate.terms."""
        ...

    async def similarity_of(self, query: str, memory: Memory, namespaces: Sequence[str]) -> float:
        """The semantic_similarity `lexical_candidates` over `namespaces` gives `memory`."""
        ...

    async def static_candidates(
        self, scope: Scope, limit: int, now: float, weights: Weights
    ) -> list[Candidate]:
        """The `limit` best memories by the query-less composite (semantic 0)."""
        ...

    async def memories_matching_all(
        self, namespace: str, groups: Sequence[Sequence[str]], limit: int = 5_000
    ) -> list[Memory]:
        """Current memories of `namespace` whose own text holds every word of at least one
        group (consolidate's near-duplicate neighbours). Words are letters and digits."""
        ...

    async def content_vectors(self, seqs: Sequence[int]) -> dict[int, str]:
        """Stored content term vectors (bm25.encode) of memories by seq."""
        ...

    async def term_sequences(self, seqs: Sequence[int]) -> dict[int, bytes]:
        """Stored content term sequences (analysis.packed_ids) of memories by seq."""
        ...

    async def namespace_term_sequences(self, namespace: str) -> dict[int, bytes]:
        """`term_sequences` of every current memory of one namespace."""
        ...

    async def namespace_doc_freq(
        self, namespace: str, terms: Sequence[str] | None = None
    ) -> tuple[int, dict[str, int]]:
        """(memories, per-term document count) of one namespace: all its terms or `terms`."""
        ...

    def tier_facts_by_score(
        self,
        namespace: str,
        now: float,
        weights: Weights,
        *,
        at_least: float,
        archived_at_least: float,
    ) -> AsyncGenerator[TierFacts, None]:
        """Current memories of `namespace` with a query-less score of at least `at_least`
        (archived ones from `archived_at_least`), best first, newest on ties, as TierFacts;
        read lazily (inspect's bounded read)."""
        ...

    async def gc_facts(self, namespace: str) -> list[GCFacts]:
        """`namespace_memories` (same order) as the collector's lighter rows."""
        ...

    async def gc_facts_and_sequences(
        self, namespace: str
    ) -> tuple[list[GCFacts], dict[int, bytes]]:
        """`gc_facts`, and `namespace_term_sequences`, from one read."""
        ...

    async def namespace_memories(
        self,
        namespace: str,
        *,
        limit: int | None = None,
        tiers: Sequence[MemoryType] | None = None,
    ) -> list[Memory]:
        """Memories of one namespace, longest idle first."""
        ...

    async def gc_window(self, namespace: str, limit: int) -> list[Memory]:
        """The next `limit` memories of a bounded GC run, after the namespace's cursor."""
        ...

    async def session_memories(self, namespace: str, session_id: str) -> list[Memory]: ...

    async def tier_tokens(self, namespace: str) -> dict[MemoryType, tuple[int, int]]:
        """Per tier: (memory count, token total)."""
        ...

    async def count(self, namespace: str | None = None) -> int: ...

    async def namespaces(self) -> list[str]:
        """Every namespace holding memories, sorted."""
        ...

    async def labelled(self, value: str, namespaces: Sequence[str], limit: int) -> list[Memory]:
        """Memories tagged with `value` or linking it as an entity."""
        ...

    async def browse(self, where: Browse, before_seq: int | None, limit: int) -> list[Memory]:
        """Up to `limit` memories matching `where`, newest first, below `before_seq`."""
        ...

    async def created_range(self, namespace: str) -> tuple[float, float] | None: ...

    async def created_counts(
        self, namespace: str, starts: Sequence[float], width: float
    ) -> list[int]:
        """Memories created in [start, start + width) for each start."""
        ...

    async def tagged_count(self, namespace: str, tag: str) -> int: ...

    async def lineage(self, memory_id: str) -> list[LineageEvent]: ...

    async def lineage_namespace(self, memory_id: str) -> str | None:
        """The namespace a (possibly deleted) memory lived in, from its lineage."""
        ...

    async def injected_ids(self, session_id: str) -> set[str]: ...

    async def memories_after(self, after_seq: int, limit: int) -> list[Memory]:
        """Up to `limit` memories of every namespace with seq > `after_seq`, in seq order
        (`pma-mcp migrate` pages through a whole store with it)."""
        ...

    async def lineage_after(self, after_id: int, limit: int) -> list[tuple[int, LineageRow]]:
        """Up to `limit` (id, LineageRow) of every namespace with id > `after_id`, by id."""
        ...

    async def session_state(self) -> SessionState: ...

    async def context_reset_at(self, session_id: str) -> float | None: ...

    async def integrity_check(self) -> str:
        """"ok", or the first problem the backend's own check reports."""
        ...

    async def check_consistency(self) -> Consistency:
        """Compare memories with their index, labels and statistics (tests, doctor)."""
        ...
