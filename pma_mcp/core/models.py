"""Data classes and enums shared by every layer. No I/O here.

Plain dataclasses, not pydantic models: defining ~20 pydantic models costs ~0.2 s at import,
and a Claude Code hook is a fresh process on every prompt. Pydantic still validates and
serialises them where it is already loaded (the MCP server's output schemas accept
dataclasses). Times are UTC `datetime`s here and epoch seconds in the database.

What only writes, GC, inspect, import, browsing and the doctor use lives in core/records.py
and is offered here by name too, built on first use (`__getattr__`): a process that only
reads memories (the prompt hook) never pays for those classes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol

if TYPE_CHECKING:
    from pma_mcp.core.records import (
        AddResult,
        Browse,
        DeleteResult,
        Finding,
        GCDecision,
        GCPreview,
        GCResult,
        ImportItem,
        ImportReport,
        InspectResult,
        LineageEvent,
        MemoryEdit,
        MergePair,
        NewMemory,
        Overview,
        Page,
        Related,
        SeedResult,
        Similar,
        Stats,
        TierFacts,
        TierStats,
        TierUse,
        UpdateResult,
    )

__all__ = [  # with the records of core/records.py
    "KINDS",
    "UNKNOWN_AUTHOR",
    "AddResult",
    "Browse",
    "ContextPack",
    "DeleteResult",
    "Finding",
    "FindingStatus",
    "GCAction",
    "GCDecision",
    "GCFacts",
    "GCPreview",
    "GCResult",
    "ImportItem",
    "ImportReport",
    "InspectResult",
    "LineageEvent",
    "LineageEventKind",
    "Memory",
    "MemoryEdit",
    "MemoryKind",
    "MemoryType",
    "MergePair",
    "NewMemory",
    "Overview",
    "Page",
    "Planned",
    "Related",
    "Scope",
    "ScoreBreakdown",
    "ScoredMemory",
    "SeedResult",
    "Similar",
    "Stats",
    "TierFacts",
    "TierStats",
    "TierUse",
    "Tiered",
    "UpdateResult",
    "build_memory",
    "content_hash",
    "stored_epoch",
    "tier_down",
    "tier_up",
    "to_datetime",
]


class MemoryType(StrEnum):
    """The four tiers, hottest first (the OS analogy: L1, L2, RAM, disk)."""

    WORKING = "working"
    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    ARCHIVED = "archived"


TIER_ORDER: tuple[MemoryType, ...] = (
    MemoryType.WORKING,
    MemoryType.EPISODIC,
    MemoryType.SEMANTIC,
    MemoryType.ARCHIVED,
)


class MemoryKind(StrEnum):
    """What a memory is, chosen by whoever stored it; the collector never changes it.

    The tier (`MemoryType`) is where a memory sits now, and it is the collector's business;
    how long a memory lasts is its importance, not its kind or its tier.
    """

    FACT = "fact"
    """Something true about the project, the world or a person."""
    DECISION = "decision"
    """A choice that was made, and what it rules out."""
    PREFERENCE = "preference"
    """How the user wants things done: rules, conventions, likes and dislikes."""
    EVENT = "event"
    """Something that happened (every exchange a hook saved is one)."""
    NOTE = "note"
    """Anything else (what an older memory that no rule recognised became)."""


KINDS = ", ".join(k.value for k in MemoryKind)


def tier_up(tier: MemoryType) -> MemoryType:
    """One tier hotter (working stays working)."""
    return TIER_ORDER[max(TIER_ORDER.index(tier) - 1, 0)]


def tier_down(tier: MemoryType) -> MemoryType:
    """One tier colder (archived stays archived)."""
    return TIER_ORDER[min(TIER_ORDER.index(tier) + 1, len(TIER_ORDER) - 1)]


UNKNOWN_AUTHOR = "unknown"
"""How a memory stored before authors were recorded (schema v11) is shown."""


def to_datetime(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class Memory:
    """One stored memory, as every layer sees it."""

    id: str
    namespace: str
    content: str
    memory_type: MemoryType
    importance: float
    tags: list[str] = field(default_factory=list)
    linked_entities: list[str] = field(default_factory=list)
    token_count: int
    access_count: int = 0
    created_at: datetime
    accessed_at: datetime
    metadata: dict[str, Any] = field(default_factory=dict)
    session_id: str | None = None
    seq: int = 0
    content_hash: str = ""
    superseded_by: str | None = None
    author: str | None = None
    """Who stored it (Settings.author); None for memories stored before schema v11."""
    kind: MemoryKind = MemoryKind.NOTE

    @property
    def shown_author(self) -> str:
        """The author as every view shows it ("unknown" when none was recorded)."""
        return self.author or UNKNOWN_AUTHOR

    @property
    def created_epoch(self) -> float:
        return self.created_at.timestamp()

    @property
    def accessed_epoch(self) -> float:
        return self.accessed_at.timestamp()


def stored_epoch(epoch: float) -> float:
    """A stored time as a `Memory` carries it, `to_datetime(epoch).timestamp()`, without the
    datetime (GC reads 200k times at 100k memories): a plan made from `GCFacts` rows then
    decides exactly as one made from the same memories. The same arithmetic as CPython's
    datetime: the fraction rounded half-even to microseconds, then microseconds / 10**6."""
    fraction, whole = math.modf(epoch)
    return (int(whole) * 1_000_000 + round(fraction * 1e6)) / 1_000_000


class Tiered(Protocol):
    """What the collector's rules, scores and tier capacity read of a memory."""

    @property
    def seq(self) -> int: ...
    @property
    def memory_type(self) -> MemoryType: ...
    @property
    def importance(self) -> float: ...
    @property
    def token_count(self) -> int: ...
    @property
    def access_count(self) -> int: ...
    @property
    def created_epoch(self) -> float: ...
    @property
    def accessed_epoch(self) -> float: ...
    @property
    def superseded_by(self) -> str | None: ...


class Planned(Tiered, Protocol):
    """What a GC plan decides from: a `Memory`, or the lighter `GCFacts`."""

    @property
    def id(self) -> str: ...
    @property
    def namespace(self) -> str: ...
    @property
    def content(self) -> str: ...


class GCFacts(NamedTuple):
    """A memory's row without its labels, metadata and index columns: a whole-namespace GC
    plan reads 100k of these, ~4x cheaper than as `Memory` objects. Full memories are read
    only for the ones a run changes. A named tuple: made from a row in a third of a frozen
    dataclass's time (0.1 s of a plan at 100k)."""

    seq: int
    memory_type: MemoryType
    importance: float
    token_count: int
    access_count: int
    created_epoch: float
    accessed_epoch: float
    superseded_by: str | None
    id: str
    namespace: str
    content: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ScoreBreakdown:
    """Every term of the composite score, so a ranking can be explained."""

    semantic_similarity: float
    importance: float
    recency: float
    access_frequency: float
    composite: float
    age_hours: float


@dataclass(frozen=True, slots=True, kw_only=True)
class ScoredMemory:
    """A memory with the score it got for one query (or none)."""

    memory: Memory
    score: float
    breakdown: ScoreBreakdown


@dataclass(slots=True, kw_only=True)
class ContextPack:
    """Memories packed greedily by score into a token budget.

    `budget_used` is the fraction of the budget the packed memories take (0–1).
    """

    memories: list[ScoredMemory]
    total_tokens: int
    budget_used: float
    token_budget: int


LineageEventKind = Literal[
    "created", "accessed", "promote", "demote", "archive", "merge", "supersede", "deleted",
    "edited",
]


GCAction = Literal["promote", "demote", "archive", "delete", "merge", "keep"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Scope:
    """Which memories a query may see: the SQL filter applied before any ranking."""

    namespaces: tuple[str, ...]
    memory_type: MemoryType | None = None
    tags: tuple[str, ...] = ()
    kind: MemoryKind | None = None


FindingStatus = Literal["ok", "info", "warn", "fail"]


def content_hash(content: str) -> str:
    """Exact-duplicate key: sha256 of the content with outer whitespace removed."""
    import hashlib  # here: loading OpenSSL costs a process that never hashes ~3 ms

    return hashlib.sha256(content.strip().encode("utf-8")).hexdigest()


def build_memory(
    new: NewMemory,
    *,
    memory_id: str,
    token_count: int,
    created_at: datetime,
    accessed_at: datetime,
    access_count: int = 0,
    superseded_by: str | None = None,
) -> Memory:
    """The one place a validated write becomes a Memory (add, import, importers); its
    content hash is made here, and its kind inferred when the write names none."""
    from pma_mcp.core import kinds

    return Memory(
        id=memory_id,
        namespace=new.namespace,
        content=new.content,
        memory_type=new.memory_type,
        importance=new.importance,
        tags=new.tags,
        linked_entities=new.linked_entities,
        token_count=token_count,
        access_count=access_count,
        created_at=created_at,
        accessed_at=accessed_at,
        metadata=new.metadata,
        session_id=new.session_id,
        content_hash=content_hash(new.content),
        superseded_by=superseded_by,
        author=new.author,
        kind=new.kind or kinds.infer(new.content, new.tags, new.metadata, new.memory_type),
    )


def __getattr__(name: str) -> Any:
    """A record of core/records.py, loaded the first time one is asked for."""
    if not name.startswith("_"):
        from pma_mcp.core import records

        if hasattr(records, name):
            return getattr(records, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
