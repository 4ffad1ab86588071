"""Pydantic output models of the MCP tools: the shapes clients see as outputSchema.

The core returns plain dataclasses (cheap to import in hooks); this module is imported by the
server only. The shapes are the tools' public interface, so they are spelled out here instead
of being derived from the core: a field renamed in the core cannot silently change the wire.
Each model has an `of(...)` constructor from the matching core value.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from pma_mcp.config import GLOBAL_NAMESPACE
from pma_mcp.models import (
    AddResult,
    ContextPack,
    DeleteResult,
    GCAction,
    GCDecision,
    GCPreview,
    GCResult,
    InspectResult,
    LineageEvent,
    LineageEventKind,
    Memory,
    MemoryType,
    Related,
    ScoreBreakdown,
    ScoredMemory,
    Stats,
)


class Breakdown(BaseModel):
    """Every term of the composite score, each in [0, 1] (age in hours)."""

    semantic_similarity: float = Field(description="Lexical relevance to the query (0 without one)")
    importance: float
    recency: float = Field(description="exp(-0.1 · age_hours)")
    access_frequency: float = Field(description="min(log1p(access_count) / 10, 1)")
    composite: float = Field(description="Weighted sum: the score results are ranked by")
    age_hours: float

    @classmethod
    def of(cls, b: ScoreBreakdown) -> Breakdown:
        return cls(
            semantic_similarity=b.semantic_similarity,
            importance=b.importance,
            recency=b.recency,
            access_frequency=b.access_frequency,
            composite=b.composite,
            age_hours=b.age_hours,
        )


class MemoryOut(BaseModel):
    """One stored memory with all its fields."""

    id: str = Field(description="Full id; forget/inspect also accept a unique prefix of 6+ chars")
    namespace: str
    content: str
    memory_type: MemoryType
    importance: float
    tags: list[str]
    linked_entities: list[str]
    token_count: int
    access_count: int
    created_at: datetime
    accessed_at: datetime
    metadata: dict[str, Any]
    session_id: str | None
    superseded_by: str | None = Field(description="Id of the memory that corrects this one")

    @classmethod
    def of(cls, m: Memory) -> MemoryOut:
        return cls(
            id=m.id,
            namespace=m.namespace,
            content=m.content,
            memory_type=m.memory_type,
            importance=m.importance,
            tags=list(m.tags),
            linked_entities=list(m.linked_entities),
            token_count=m.token_count,
            access_count=m.access_count,
            created_at=m.created_at,
            accessed_at=m.accessed_at,
            metadata=dict(m.metadata),
            session_id=m.session_id,
            superseded_by=m.superseded_by,
        )


class StoredMemory(BaseModel):
    """What `remember` stored (the content is not echoed back)."""

    id: str
    namespace: str
    memory_type: MemoryType
    importance: float
    tags: list[str]
    linked_entities: list[str]
    token_count: int
    created_at: datetime
    metadata: dict[str, Any]
    session_id: str | None
    deduplicated: bool = Field(
        description="True if the same content was already stored here; that memory was "
        "reinforced instead of adding a copy"
    )

    @classmethod
    def of(cls, r: AddResult) -> StoredMemory:
        m = r.memory
        return cls(
            id=m.id,
            namespace=m.namespace,
            memory_type=m.memory_type,
            importance=m.importance,
            tags=list(m.tags),
            linked_entities=list(m.linked_entities),
            token_count=m.token_count,
            created_at=m.created_at,
            metadata=dict(m.metadata),
            session_id=m.session_id,
            deduplicated=r.deduplicated,
        )


class RecalledMemory(BaseModel):
    """A memory as ranked for one query: its fields plus the score and why."""

    id: str
    content: str
    metadata: dict[str, Any]
    namespace: str
    memory_type: MemoryType
    importance: float
    tags: list[str]
    linked_entities: list[str]
    created_at: datetime
    access_count: int
    token_count: int
    score: float = Field(description="Composite score in [0, 1]")
    breakdown: Breakdown

    @classmethod
    def of(cls, s: ScoredMemory) -> RecalledMemory:
        m = s.memory
        return cls(
            id=m.id,
            content=m.content,
            metadata=dict(m.metadata),
            namespace=m.namespace,
            memory_type=m.memory_type,
            importance=m.importance,
            tags=list(m.tags),
            linked_entities=list(m.linked_entities),
            created_at=m.created_at,
            access_count=m.access_count,
            token_count=m.token_count,
            score=s.score,
            breakdown=Breakdown.of(s.breakdown),
        )


class RecallResult(BaseModel):
    results: list[RecalledMemory] = Field(description="Best first; empty if nothing matched")

    @classmethod
    def of(cls, found: Sequence[ScoredMemory]) -> RecallResult:
        return cls(results=[RecalledMemory.of(s) for s in found])


class ContextResult(BaseModel):
    memories: list[RecalledMemory] = Field(description="The packed memories, best first")
    total_tokens: int = Field(description="Tokens the packed memories take")
    token_budget: int
    budget_used: float = Field(description="total_tokens / token_budget, in [0, 1]")
    text: str = Field(description="The memories as one block, ready to read")

    @classmethod
    def of(cls, pack: ContextPack, namespace: str) -> ContextResult:
        return cls(
            memories=[RecalledMemory.of(s) for s in pack.memories],
            total_tokens=pack.total_tokens,
            token_budget=pack.token_budget,
            budget_used=pack.budget_used,
            text=context_text(pack, namespace),
        )


class Forgotten(BaseModel):
    deleted_id: str = Field(description="Full id of the deleted memory")
    content_preview: str

    @classmethod
    def of(cls, r: DeleteResult) -> Forgotten:
        return cls(deleted_id=r.deleted_id, content_preview=r.content_preview)


class LineageOut(BaseModel):
    """One audit event; consecutive accesses are one event with a count."""

    event: LineageEventKind
    at: datetime
    from_tier: MemoryType | None
    to_tier: MemoryType | None
    score: float | None
    reason: str
    count: int
    last_at: datetime | None

    @classmethod
    def of(cls, e: LineageEvent) -> LineageOut:
        return cls(
            event=e.event,
            at=e.at,
            from_tier=e.from_tier,
            to_tier=e.to_tier,
            score=e.score,
            reason=e.reason,
            count=e.count,
            last_at=e.last_at,
        )


class InspectOut(BaseModel):
    memory: MemoryOut
    breakdown: Breakdown = Field(description="Score now (semantic term only with a query)")
    gc_action: GCAction = Field(description="What the next gc_run would do to this memory")
    gc_reason: str
    predicted_tier: MemoryType | None = Field(
        description="Tier after the next gc_run (None: deleted)"
    )
    lineage: list[LineageOut] = Field(description="Audit trail, oldest first")

    @classmethod
    def of(cls, r: InspectResult) -> InspectOut:
        return cls(
            memory=MemoryOut.of(r.memory),
            breakdown=Breakdown.of(r.breakdown),
            gc_action=r.gc_action,
            gc_reason=r.gc_reason,
            predicted_tier=r.predicted_tier,
            lineage=[LineageOut.of(e) for e in r.lineage],
        )


class DecisionOut(BaseModel):
    """What the collector does to one memory, and why."""

    memory_id: str
    action: GCAction
    from_tier: MemoryType
    to_tier: MemoryType | None
    reason: str
    score: float = Field(description="Composite score without a query (at most 0.6)")
    token_count: int
    content_preview: str
    merge_into: str | None = Field(description="For merges: the memory this one is merged into")

    @classmethod
    def of(cls, d: GCDecision) -> DecisionOut:
        return cls(
            memory_id=d.memory_id,
            action=d.action,
            from_tier=d.from_tier,
            to_tier=d.to_tier,
            reason=d.reason,
            score=d.breakdown.composite,
            token_count=d.token_count,
            content_preview=d.content_preview,
            merge_into=d.merge_into,
        )


def _decisions(items: Sequence[GCDecision]) -> list[DecisionOut]:
    return [DecisionOut.of(d) for d in items]


class GCPreviewOut(BaseModel):
    """The exact plan gc_run would apply now. Kept memories are only counted."""

    namespace: str
    to_promote: list[DecisionOut]
    to_demote: list[DecisionOut]
    to_archive: list[DecisionOut]
    to_delete: list[DecisionOut]
    to_merge: list[DecisionOut]
    to_keep: int = Field(description="How many memories stay as they are")
    token_delta: int = Field(description="Change in stored tokens if the plan is applied")
    summary: str

    @classmethod
    def of(cls, p: GCPreview) -> GCPreviewOut:
        return cls(
            namespace=p.namespace,
            to_promote=_decisions(p.to_promote),
            to_demote=_decisions(p.to_demote),
            to_archive=_decisions(p.to_archive),
            to_delete=_decisions(p.to_delete),
            to_merge=_decisions(p.to_merge),
            to_keep=len(p.to_keep),
            token_delta=p.token_delta,
            summary=p.summary,
        )


class GCRunOut(BaseModel):
    namespace: str
    promoted: int
    demoted: int
    archived: int
    deleted: int
    merged: int
    kept: int
    token_delta: int
    decisions: list[DecisionOut] = Field(description="Every change that was applied")
    summary: str

    @classmethod
    def of(cls, r: GCResult) -> GCRunOut:
        return cls(
            namespace=r.namespace,
            promoted=r.promoted,
            demoted=r.demoted,
            archived=r.archived,
            deleted=r.deleted,
            merged=r.merged,
            kept=r.kept,
            token_delta=r.token_delta,
            decisions=_decisions(r.decisions),
            summary=r.summary,
        )


class TierStatsOut(BaseModel):
    count: int
    tokens: int
    avg_score: float


class StatsOut(BaseModel):
    namespace: str
    total: int
    total_tokens: int
    by_tier: dict[MemoryType, TierStatsOut] = Field(
        description="Per tier: working, episodic, semantic, archived"
    )
    gc_pressure: int = Field(description="How many memories the next gc_run would change")
    avg_composite_score: float

    @classmethod
    def of(cls, s: Stats) -> StatsOut:
        return cls(
            namespace=s.namespace,
            total=s.total,
            total_tokens=s.total_tokens,
            by_tier={
                tier: TierStatsOut(count=t.count, tokens=t.tokens, avg_score=t.avg_score)
                for tier, t in s.by_tier.items()
            },
            gc_pressure=s.gc_pressure,
            avg_composite_score=s.avg_composite_score,
        )


class RelatedOut(BaseModel):
    entity: str
    memories: list[MemoryOut] = Field(description="Memories tagged with or linked to the entity")
    related_nodes: list[str] = Field(description="Tags and entities that occur beside it")

    @classmethod
    def of(cls, r: Related) -> RelatedOut:
        return cls(
            entity=r.entity,
            memories=[MemoryOut.of(m) for m in r.memories],
            related_nodes=list(r.related_nodes),
        )


# ---------------------------------------------------------------------- text


def context_text(pack: ContextPack, namespace: str) -> str:
    """The packed memories as one block an agent reads as-is (short ids work with forget)."""
    if not pack.memories:
        return "No stored memories matched. Use remember to store decisions, facts and preferences."
    head = (
        f"Memories from earlier sessions ({len(pack.memories)}, "
        f"{pack.total_tokens}/{pack.token_budget} tokens), best first:"
    )
    lines = [head]
    for item in pack.memories:
        m = item.memory
        where = "" if m.namespace == namespace else f" · {_scope_label(m.namespace)}"
        tags = f" · tags: {', '.join(m.tags)}" if m.tags else ""
        label = (
            f"[{m.id[:8]} · {m.memory_type.value} · importance {m.importance:.2f} · "
            f"{m.created_at:%Y-%m-%d}{where}{tags}]"
        )
        body = m.content.strip().replace("\n", "\n  ")
        lines.append(f"- {label} {body}")
    return "\n".join(lines)


def _scope_label(namespace: str) -> str:
    return "global" if namespace == GLOBAL_NAMESPACE else f"namespace {namespace}"
