"""The records only writes, GC, inspect, import, seeding, browsing and the doctor take or
return.

Apart from core/models.py so that a process that only reads memories (the prompt hook)
never builds these classes: each dataclass costs about half a millisecond at import, and a
hook is a fresh process on every prompt. core.models offers every one of them by name too
(loaded on first use); modules a hook loads import them from here where they build one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pma_mcp.core.models import (
    FindingStatus,
    GCAction,
    LineageEventKind,
    Memory,
    MemoryKind,
    MemoryType,
    Planned,
    ScoreBreakdown,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Similar:
    """A stored memory a new one likely repeats or contradicts (same kind, shared entities
    or most of its terms), so the caller can supersede or update it without knowing its id."""

    id: str
    preview: str
    shared: list[str]
    """The linked entities both carry (may be empty when the terms alone overlap)."""
    overlap: float
    """The share of the smaller memory's content terms the other one also has (0-1)."""


@dataclass(slots=True, kw_only=True)
class AddResult:
    memory: Memory
    deduplicated: bool = False
    similar: list[Similar] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class UpdateResult:
    """The memory after an edit, and the names of the fields that changed (none: a no-op)."""

    memory: Memory
    changed: list[str]


@dataclass(slots=True, kw_only=True)
class DeleteResult:
    deleted_id: str
    content_preview: str


@dataclass(slots=True, kw_only=True)
class Related:
    entity: str
    memories: list[Memory]
    related_nodes: list[str]


@dataclass(frozen=True, slots=True, kw_only=True)
class TierFacts:
    """A memory as tier capacity sees it: `inspect` weighs ~1,000 higher-scored memories
    against the one inspected, and reads just these columns (an index holds them all)."""

    seq: int
    memory_type: MemoryType
    importance: float
    token_count: int
    access_count: int
    created_epoch: float
    accessed_epoch: float
    superseded_by: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class NewMemory:
    """A validated request to store a memory (see `validation.new_memory`)."""

    content: str
    namespace: str
    importance: float = 0.5
    memory_type: MemoryType = MemoryType.EPISODIC
    tags: list[str] = field(default_factory=list)
    linked_entities: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    session_id: str | None = None
    supersedes: str | None = None
    author: str | None = None
    kind: MemoryKind | None = None
    """None: inferred from the rest when the memory is built (core/kinds.py)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryEdit:
    """A validated in-place edit (see `validation.memory_edit`); None leaves a field as is."""

    content: str | None = None
    importance: float | None = None
    memory_type: MemoryType | None = None
    tags: list[str] | None = None
    linked_entities: list[str] | None = None
    metadata: dict[str, Any] | None = None
    kind: MemoryKind | None = None


@dataclass(slots=True, kw_only=True)
class LineageEvent:
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


@dataclass(slots=True, kw_only=True)
class GCDecision:
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


@dataclass(frozen=True, slots=True, kw_only=True)
class MergePair:
    """`gone` is folded into `keep` (the better-scored one); `similarity` is their cosine;
    `overlap` their content terms' Jaccard overlap when they merge as restatements (the
    same statement in other words, core/consolidation.py), None for near-duplicates."""

    gone: Planned
    keep: Planned
    similarity: float
    overlap: float | None = None

    @property
    def restated(self) -> bool:
        return self.overlap is not None


@dataclass(slots=True, kw_only=True)
class GCPreview:
    """The exact plan `gc_run` applies next (same input, same clock → same decisions)."""

    namespace: str
    to_promote: list[GCDecision] = field(default_factory=list)
    to_demote: list[GCDecision] = field(default_factory=list)
    to_archive: list[GCDecision] = field(default_factory=list)
    to_delete: list[GCDecision] = field(default_factory=list)
    to_merge: list[GCDecision] = field(default_factory=list)
    to_keep: list[GCDecision] = field(default_factory=list)
    token_delta: int = 0
    summary: str = ""

    def changes(self) -> list[GCDecision]:
        return [*self.to_merge, *self.to_delete, *self.to_archive, *self.to_demote,
                *self.to_promote]


@dataclass(slots=True, kw_only=True)
class GCResult:
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


@dataclass(slots=True, kw_only=True)
class InspectResult:
    memory: Memory
    breakdown: ScoreBreakdown
    gc_action: GCAction
    gc_reason: str
    predicted_tier: MemoryType | None
    lineage: list[LineageEvent]


@dataclass(slots=True, kw_only=True)
class TierStats:
    count: int = 0
    tokens: int = 0
    avg_score: float = 0.0


@dataclass(slots=True, kw_only=True)
class Stats:
    namespace: str
    total: int
    total_tokens: int
    by_tier: dict[MemoryType, TierStats]
    gc_pressure: int
    avg_composite_score: float


@dataclass(slots=True, kw_only=True)
class ImportReport:
    imported: int
    skipped: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportItem:
    """One memory read from another tool's store (importers), before validation.

    `key` names the source record stably (format, file, record id): the same record always
    becomes the same memory id, so importing a file twice adds nothing the second time.
    `created_at` (epoch seconds) keeps the source's own time; None means now.
    """

    key: str
    content: str
    namespace: str
    memory_type: MemoryType = MemoryType.SEMANTIC
    importance: float = 0.5
    tags: tuple[str, ...] = ()
    linked_entities: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    session_id: str | None = None
    created_at: float | None = None
    author: str | None = None
    """The source's own author, if it records one (None: the importing person)."""
    kind: MemoryKind | None = None
    """None: inferred when the memory is built (core/kinds.py)."""


@dataclass(frozen=True, slots=True)
class SeedResult:
    """What `seed` stored, the files it did not read and those it read only in part
    (each as source, reason)."""

    added: list[AddResult]
    skipped: list[tuple[str, str]]
    cut: list[tuple[str, str]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Browse:
    """Filters of a memory listing (the UI's); None or empty means any."""

    namespace: str
    memory_type: MemoryType | None = None
    kind: MemoryKind | None = None
    tag: str | None = None
    entity: str | None = None
    source: str | None = None
    since: float | None = None
    until: float | None = None


@dataclass(slots=True, kw_only=True)
class Page:
    """One page of a listing, newest first; `next_before` continues it (None: the last)."""

    memories: list[Memory]
    next_before: int | None


@dataclass(slots=True, kw_only=True)
class TierUse:
    tier: MemoryType
    count: int
    tokens: int
    capacity: int | None


@dataclass(slots=True, kw_only=True)
class Overview:
    """A namespace at a glance, from bounded queries (no full pass over its memories).

    `gc_changes` is what the next bounded GC pass over `gc_window` memories would change;
    `created` holds (period start, memories created in it), periods of `period_days` UTC
    days from the first memory's day to the last one's.
    """

    namespace: str
    total: int
    tiers: list[TierUse]
    auto_saved: int
    gc_window: int
    gc_changes: int
    created: list[tuple[float, int]]
    period_days: int


@dataclass(frozen=True, slots=True)
class Finding:
    """One doctor check: what was found and, unless it is fine, how to fix it."""

    check: str
    status: FindingStatus
    detail: str
    fix: str = ""
