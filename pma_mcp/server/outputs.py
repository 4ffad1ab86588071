"""Pydantic output models of the MCP tools: the shapes clients see as outputSchema.

The core returns plain dataclasses (cheap to import in hooks); this module is imported by the
server only. The shapes are the tools' public interface, so they are spelled out here instead
of being derived from the core. Models are filled from the matching core value by field name
(`Model.model_validate(value)`), so a field renamed in the core fails validation rather than
silently changing the wire; the few that reshape a value have an `of(...)` constructor.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from pma_mcp.core.models import (
    AddResult,
    ContextPack,
    GCAction,
    GCDecision,
    GCPreview,
    GCResult,
    LineageEventKind,
    MemoryKind,
    MemoryType,
    ScoredMemory,
    UpdateResult,
)
from pma_mcp.core.namespaces import GLOBAL_NAMESPACE

Kind = Annotated[MemoryKind, Field(description="What it is (fact, decision, preference, event, "
                                   "note): chosen when stored, never changed by the collector")]
Tier = Annotated[MemoryType, Field(description="Its tier: where the collector keeps it now "
                                   "(working, episodic, semantic, archived)")]


class _Out(BaseModel):
    model_config = ConfigDict(from_attributes=True)


def _fields(value: object) -> dict[str, Any]:
    """A core dataclass's fields by name (nested values left as they are)."""
    assert dataclasses.is_dataclass(value) and not isinstance(value, type)
    return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}


class Breakdown(_Out):
    """Every term of the composite score, each in [0, 1] (age in hours)."""

    semantic_similarity: float = Field(description="Lexical relevance to the query (0 without one)")
    importance: float
    recency: float = Field(description="exp(-0.1 · age_hours)")
    access_frequency: float = Field(description="min(log1p(access_count) / 10, 1)")
    composite: float = Field(description="Weighted sum: the score results are ranked by")
    age_hours: float



class MemoryOut(_Out):
    """One stored memory with all its fields."""

    id: str = Field(description="Full id; forget/inspect also accept a unique prefix of 6+ chars")
    namespace: str
    content: str
    kind: Kind
    memory_type: Tier
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
    author: str | None = Field(
        description="Who stored it (PMA_AUTHOR, git user.email or the OS user); null: "
        "stored before authors were recorded")



class SimilarOut(_Out):
    """A stored memory a new one likely repeats or contradicts."""

    id: str
    preview: str = Field(description="Its text on one line, cut at 100 characters")
    shared: list[str] = Field(description="Linked entities both memories carry")
    overlap: float = Field(description="Share of the shorter memory's words the other has")


class StoredMemory(_Out):
    """What `remember` stored (the content is not echoed back)."""

    id: str
    namespace: str
    kind: Kind
    memory_type: Tier
    importance: float
    tags: list[str]
    linked_entities: list[str]
    token_count: int
    created_at: datetime
    metadata: dict[str, Any]
    session_id: str | None
    author: str | None
    deduplicated: bool = Field(
        description="True if the same content was already stored here; that memory was "
        "reinforced instead of adding a copy"
    )
    similar: list[SimilarOut] = Field(
        description="Stored memories of the same kind this one most likely repeats or "
        "contradicts (shared linked entities, most words in common), best first: supersede "
        "or update one of them if it is now wrong or said twice. Empty when none")

    @classmethod
    def of(cls, r: AddResult) -> StoredMemory:
        return cls.model_validate({**_fields(r.memory), "deduplicated": r.deduplicated,
                                   "similar": [_fields(s) for s in r.similar]})


class RecalledMemory(_Out):
    """A memory as ranked for one query: its fields plus the score and why."""

    id: str
    content: str
    metadata: dict[str, Any]
    namespace: str
    kind: Kind
    memory_type: Tier
    importance: float
    tags: list[str]
    linked_entities: list[str]
    created_at: datetime
    access_count: int
    token_count: int
    author: str | None = Field(
        description="Who stored it; null: unknown (stored before authors were recorded)")
    score: float = Field(description="Composite score in [0, 1]")
    breakdown: Breakdown

    @classmethod
    def of(cls, s: ScoredMemory) -> RecalledMemory:
        return cls.model_validate({**_fields(s.memory), "score": s.score,
                                   "breakdown": s.breakdown})


class RecallResult(_Out):
    results: list[RecalledMemory] = Field(description="Best first; empty if nothing matched")

    @classmethod
    def of(cls, found: Sequence[ScoredMemory]) -> RecallResult:
        return cls(results=[RecalledMemory.of(s) for s in found])


class ContextResult(_Out):
    memories: list[RecalledMemory] = Field(description="The packed memories, best first")
    total_tokens: int = Field(description="Tokens the packed memories take")
    token_budget: int
    budget_used: float = Field(description="total_tokens / token_budget, in [0, 1]")
    text: str = Field(description="The memories as one block, ready to read")

    @classmethod
    def of(
        cls, pack: ContextPack, namespace: str, global_namespace: str = GLOBAL_NAMESPACE
    ) -> ContextResult:
        return cls(
            memories=[RecalledMemory.of(s) for s in pack.memories],
            total_tokens=pack.total_tokens,
            token_budget=pack.token_budget,
            budget_used=pack.budget_used,
            text=context_text(pack, namespace, global_namespace),
        )


class Forgotten(_Out):
    deleted_id: str = Field(description="Full id of the deleted memory")
    content_preview: str



class LineageOut(_Out):
    """One audit event; consecutive accesses are one event with a count."""

    event: LineageEventKind
    at: datetime
    from_tier: MemoryType | None
    to_tier: MemoryType | None
    score: float | None
    reason: str
    count: int
    last_at: datetime | None



class InspectOut(_Out):
    memory: MemoryOut
    breakdown: Breakdown = Field(description="Score now (semantic term only with a query)")
    gc_action: GCAction = Field(description="What the next gc_run would do to this memory")
    gc_reason: str
    predicted_tier: MemoryType | None = Field(
        description="Tier after the next gc_run (None: deleted)"
    )
    lineage: list[LineageOut] = Field(description="Audit trail, oldest first")



class DecisionOut(_Out):
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
        return cls.model_validate({**_fields(d), "score": d.breakdown.composite})


def _decisions(items: Sequence[GCDecision]) -> list[DecisionOut]:
    return [DecisionOut.of(d) for d in items]


class GCPreviewOut(_Out):
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
        plan: dict[str, Any] = {
            name: _decisions(getattr(p, name))
            for name in ("to_promote", "to_demote", "to_archive", "to_delete", "to_merge")
        }
        return cls.model_validate({**_fields(p), **plan, "to_keep": len(p.to_keep)})


class GCRunOut(_Out):
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
        return cls.model_validate({**_fields(r), "decisions": _decisions(r.decisions)})


class TierStatsOut(_Out):
    count: int
    tokens: int
    avg_score: float


class StatsOut(_Out):
    namespace: str
    total: int
    total_tokens: int
    by_tier: dict[MemoryType, TierStatsOut] = Field(
        description="Per tier: working, episodic, semantic, archived"
    )
    gc_pressure: int = Field(description="How many memories the next gc_run would change")
    avg_composite_score: float



class RelatedOut(_Out):
    entity: str
    memories: list[MemoryOut] = Field(description="Memories tagged with or linked to the entity")
    related_nodes: list[str] = Field(description="Tags and entities that occur beside it")



# ---------------------------------------------------------------------- text


def context_text(
    pack: ContextPack, namespace: str, global_namespace: str = GLOBAL_NAMESPACE
) -> str:
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
        where = ("" if m.namespace == namespace
                 else f" · {_scope_label(m.namespace, global_namespace)}")
        tags = f" · tags: {', '.join(m.tags)}" if m.tags else ""
        label = (
            f"[{m.id[:8]} · {m.kind.value} · importance {m.importance:.2f} · "
            f"{m.created_at:%Y-%m-%d}{where} · by {m.shown_author}{tags}]"
        )
        body = m.content.strip().replace("\n", "\n  ")
        lines.append(f"- {label} {body}")
    return "\n".join(lines)


def _scope_label(namespace: str, global_namespace: str) -> str:
    return "global" if namespace == global_namespace else f"namespace {namespace}"


class UpdatedOut(_Out):
    """What `update` left: the memory as stored now, and which fields changed."""

    memory: MemoryOut
    changed: list[str] = Field(description="Fields the edit changed; empty: nothing to change")

    @classmethod
    def of(cls, r: UpdateResult) -> UpdatedOut:
        return cls.model_validate(r)
