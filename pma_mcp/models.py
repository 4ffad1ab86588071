"""Pydantic models and enums shared by every layer. No I/O here.

Times are UTC `datetime`s in models (readable in JSON) and epoch seconds in the database.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


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


def tier_up(tier: MemoryType) -> MemoryType:
    """One tier hotter (working stays working)."""
    return TIER_ORDER[max(TIER_ORDER.index(tier) - 1, 0)]


def tier_down(tier: MemoryType) -> MemoryType:
    """One tier colder (archived stays archived)."""
    return TIER_ORDER[min(TIER_ORDER.index(tier) + 1, len(TIER_ORDER) - 1)]


def to_datetime(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC)


class Memory(BaseModel):
    """One stored memory, as every layer sees it."""

    model_config = ConfigDict(frozen=True)

    id: str
    namespace: str
    content: str
    memory_type: MemoryType
    importance: float
    tags: list[str] = Field(default_factory=list)
    linked_entities: list[str] = Field(default_factory=list)
    token_count: int
    access_count: int = 0
    created_at: datetime
    accessed_at: datetime
    metadata: dict[str, Any] = Field(default_factory=dict)
    session_id: str | None = None
    seq: int = 0
    content_hash: str = ""
    superseded_by: str | None = None


class NewMemory(BaseModel):
    """A validated request to store a memory (see `validation.new_memory`)."""

    model_config = ConfigDict(frozen=True)

    content: str
    namespace: str
    importance: float = 0.5
    memory_type: MemoryType = MemoryType.EPISODIC
    tags: list[str] = Field(default_factory=list)
    linked_entities: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    session_id: str | None = None
    supersedes: str | None = None


class ScoreBreakdown(BaseModel):
    """Every term of the composite score, so a ranking can be explained."""

    model_config = ConfigDict(frozen=True)

    semantic_similarity: float
    importance: float
    recency: float
    access_frequency: float
    composite: float
    age_hours: float


class ScoredMemory(BaseModel):
    """A memory with the score it got for one query (or none)."""

    model_config = ConfigDict(frozen=True)

    memory: Memory
    score: float
    breakdown: ScoreBreakdown


class AddResult(BaseModel):
    memory: Memory
    deduplicated: bool = False


class ContextPack(BaseModel):
    """Memories packed greedily by score into a token budget.

    `budget_used` is the fraction of the budget the packed memories take (0–1).
    """

    memories: list[ScoredMemory]
    total_tokens: int
    budget_used: float
    token_budget: int


LineageEventKind = Literal[
    "created", "accessed", "promote", "demote", "archive", "merge", "supersede", "deleted"
]


class LineageEvent(BaseModel):
    """One line of a memory's audit trail; survives the memory's deletion.

    Consecutive `accessed` events are coalesced into one row: `count` says how many and
    `last_at` when the latest happened, so the table cannot grow without bound.
    """

    memory_id: str
    event: LineageEventKind
    at: datetime
    from_tier: MemoryType | None = None
    to_tier: MemoryType | None = None
    score: float | None = None
    reason: str = ""
    count: int = 1
    last_at: datetime | None = None


GCAction = Literal["promote", "demote", "archive", "delete", "merge", "keep"]


class GCDecision(BaseModel):
    """What the collector does to one memory, and why."""

    memory_id: str
    action: GCAction
    from_tier: MemoryType
    to_tier: MemoryType | None
    reason: str
    breakdown: ScoreBreakdown
    token_count: int
    content_preview: str
    merge_into: str | None = None


class GCPreview(BaseModel):
    """The exact plan `gc_run` applies next (same input, same clock → same decisions)."""

    namespace: str
    to_promote: list[GCDecision] = Field(default_factory=list)
    to_demote: list[GCDecision] = Field(default_factory=list)
    to_archive: list[GCDecision] = Field(default_factory=list)
    to_delete: list[GCDecision] = Field(default_factory=list)
    to_merge: list[GCDecision] = Field(default_factory=list)
    to_keep: list[GCDecision] = Field(default_factory=list)
    token_delta: int = 0
    summary: str = ""

    def changes(self) -> list[GCDecision]:
        return [*self.to_merge, *self.to_delete, *self.to_archive, *self.to_demote,
                *self.to_promote]


class GCResult(BaseModel):
    namespace: str
    promoted: int
    demoted: int
    archived: int
    deleted: int
    merged: int
    kept: int
    token_delta: int
    decisions: list[GCDecision]
    summary: str


class InspectResult(BaseModel):
    memory: Memory
    breakdown: ScoreBreakdown
    gc_action: GCAction
    gc_reason: str
    predicted_tier: MemoryType | None
    lineage: list[LineageEvent]


class TierStats(BaseModel):
    count: int = 0
    tokens: int = 0
    avg_score: float = 0.0


class Stats(BaseModel):
    namespace: str
    total: int
    total_tokens: int
    by_tier: dict[MemoryType, TierStats]
    gc_pressure: int
    avg_composite_score: float


class Related(BaseModel):
    entity: str
    memories: list[Memory]
    related_nodes: list[str]


class DeleteResult(BaseModel):
    deleted_id: str
    content_preview: str


class ImportReport(BaseModel):
    imported: int
    skipped: int


class Scope(BaseModel):
    """Which memories a query may see: the SQL filter applied before any ranking."""

    model_config = ConfigDict(frozen=True)

    namespaces: tuple[str, ...]
    memory_type: MemoryType | None = None
    tags: tuple[str, ...] = ()
    include_superseded: bool = False
