"""Garbage-collector policy (pure): which memories move tier, get archived, deleted or merged.

The seed's rules, per memory, in this order (scores without a query, so at most 0.6):
  1. idle longer than its tier's max age AND score ≤ 0.25 → one tier down
     (an old but important memory is never demoted for age alone);
  2. score ≥ 0.45 → one tier up;
  3. score < 0.10 → archived; score < 0.05 and already archived → deleted.
Added: tier capacity. The seed's token limits per namespace are enforced: while a tier holds
more tokens than its capacity, its lowest-scored memory moves one tier down. And near-duplicates
found by `consolidate` are merged into the better-scored copy.

`plan()` is the whole decision; `service.gc_run` applies exactly the plan `gc_preview` shows.

The collector scores with its own weights, `WEIGHTS` (the seed's 0.4/0.3/0.2/0.1), whatever
PMA_WEIGHTS says: those shape recall. The thresholds above were set for the seed's weights;
under a weighting whose query-less maximum is low (PMA_WEIGHTS=1,0,0,0 gives every memory 0
without a query) the same rules would archive and then delete the whole store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pma_mcp import lexicon
from pma_mcp.config import Weights
from pma_mcp.models import (
    TIER_ORDER,
    GCAction,
    GCDecision,
    GCPreview,
    Memory,
    MemoryType,
    MergePair,
    ScoreBreakdown,
    tier_down,
    tier_up,
)
from pma_mcp.scoring import breakdown

WEIGHTS = Weights()
"""What the collector scores with (see the module docstring)."""
DEMOTION_THRESHOLD = 0.25
PROMOTION_THRESHOLD = 0.45
ARCHIVE_THRESHOLD = 0.10
DELETE_THRESHOLD = 0.05

MAX_IDLE_HOURS: Mapping[MemoryType, float] = {
    MemoryType.WORKING: 4.0,
    MemoryType.EPISODIC: 72.0,
    MemoryType.SEMANTIC: 30 * 24.0,
}
TIER_CAPACITY: Mapping[MemoryType, int] = {
    MemoryType.WORKING: 2_000,
    MemoryType.EPISODIC: 8_000,
    MemoryType.SEMANTIC: 32_000,
}
ACTIVE_TIERS = (MemoryType.WORKING, MemoryType.EPISODIC, MemoryType.SEMANTIC)
PREVIEW_CHARS = 80


@dataclass(frozen=True)
class Rule:
    """The outcome of the per-memory rules, before capacity is considered."""

    action: GCAction
    to_tier: MemoryType | None
    reason: str


def idle_hours(memory: Memory, now: float) -> float:
    return (now - memory.accessed_at.timestamp()) / 3600.0


def apply_rules(memory: Memory, score: ScoreBreakdown, now: float) -> Rule:
    """The seed's three rules, in the seed's order."""
    tier = memory.memory_type
    composite = score.composite
    if memory.superseded_by is not None:
        return Rule("keep", None, f"superseded by {memory.superseded_by[:8]}: stays archived")
    idle = idle_hours(memory, now)
    max_idle = MAX_IDLE_HOURS.get(tier)
    if max_idle is not None and idle > max_idle and composite <= DEMOTION_THRESHOLD:
        return Rule(
            "demote",
            tier_down(tier),
            f"idle {idle:.1f} h > {max_idle:g} h max for {tier.value} and score "
            f"{composite:.3f} ≤ {DEMOTION_THRESHOLD}",
        )
    if composite >= PROMOTION_THRESHOLD and tier != MemoryType.WORKING:
        return Rule("promote", tier_up(tier),
                    f"score {composite:.3f} ≥ {PROMOTION_THRESHOLD}")
    if composite < DELETE_THRESHOLD and tier == MemoryType.ARCHIVED:
        return Rule("delete", None,
                    f"archived and score {composite:.3f} < {DELETE_THRESHOLD}")
    if composite < ARCHIVE_THRESHOLD and tier != MemoryType.ARCHIVED:
        return Rule("archive", MemoryType.ARCHIVED,
                    f"score {composite:.3f} < {ARCHIVE_THRESHOLD}")
    if max_idle is not None and idle > max_idle:
        return Rule("keep", None, f"idle {idle:.1f} h but score {composite:.3f} > "
                    f"{DEMOTION_THRESHOLD}: important enough to stay")
    return Rule("keep", None, f"score {composite:.3f} within thresholds")


def _decision(
    memory: Memory,
    action: GCAction,
    to_tier: MemoryType | None,
    reason: str,
    score: ScoreBreakdown,
    merge_into: str | None = None,
) -> GCDecision:
    return GCDecision(
        memory_id=memory.id,
        action=action,
        from_tier=memory.memory_type,
        to_tier=to_tier,
        reason=reason,
        breakdown=score,
        token_count=memory.token_count,
        content_preview=lexicon.preview(memory.content, PREVIEW_CHARS),
        merge_into=merge_into,
    )


def plan(
    namespace: str,
    memories: Sequence[Memory],
    now: float,
    weights: Weights,
    *,
    merges: Sequence[MergePair] = (),
    outside_tokens: Mapping[MemoryType, int] | None = None,
) -> GCPreview:
    """Decide every memory's fate. `outside_tokens`: per-tier tokens of memories of the
    namespace that were not passed in (a bounded run), counted toward capacity."""
    preview = GCPreview(namespace=namespace)
    merged_away = {pair.gone.id: pair for pair in merges}
    scores = {m.id: breakdown(m, now, weights) for m in memories}
    target: dict[str, MemoryType | None] = {}
    reasons: dict[str, str] = {}
    rules: dict[str, Rule] = {}

    for memory in memories:
        pair = merged_away.get(memory.id)
        if pair is not None:
            preview.to_merge.append(_decision(
                memory, "merge", None,
                f"near-duplicate of {pair.keep.id[:8]} (cosine {pair.similarity:.2f}); "
                "the better-scored copy is kept",
                scores[memory.id], merge_into=pair.keep.id,
            ))
            continue
        rule = apply_rules(memory, scores[memory.id], now)
        rules[memory.id] = rule
        target[memory.id] = memory.memory_type if rule.action == "keep" else rule.to_tier
        reasons[memory.id] = rule.reason

    _enforce_capacity(memories, target, reasons, scores, outside_tokens or {})

    for memory in memories:
        if memory.id in merged_away:
            continue
        final = target[memory.id]
        score = scores[memory.id]
        reason = reasons[memory.id]
        if final is None:
            preview.to_delete.append(_decision(memory, "delete", None, reason, score))
        elif final == memory.memory_type:
            preview.to_keep.append(_decision(memory, "keep", None, reason, score))
        elif TIER_ORDER.index(final) < TIER_ORDER.index(memory.memory_type):
            preview.to_promote.append(_decision(memory, "promote", final, reason, score))
        elif rules[memory.id].action == "archive" and final == MemoryType.ARCHIVED:
            preview.to_archive.append(_decision(memory, "archive", final, reason, score))
        else:
            preview.to_demote.append(_decision(memory, "demote", final, reason, score))

    preview.token_delta = _token_delta(preview)
    preview.summary = _summary(preview)
    return preview


def _enforce_capacity(
    memories: Sequence[Memory],
    target: dict[str, MemoryType | None],
    reasons: dict[str, str],
    scores: Mapping[str, ScoreBreakdown],
    outside: Mapping[MemoryType, int],
) -> None:
    """Hottest tier first: while a tier is over capacity, its lowest score moves down."""
    by_id = {m.id: m for m in memories}
    totals = {tier: outside.get(tier, 0) for tier in TIER_ORDER}
    for memory_id, tier in target.items():
        if tier is not None:
            totals[tier] += by_id[memory_id].token_count
    for tier in ACTIVE_TIERS:
        capacity = TIER_CAPACITY[tier]
        if totals[tier] <= capacity:
            continue
        residents = sorted(
            (by_id[i] for i, t in target.items() if t == tier),
            key=lambda m: (scores[m.id].composite, m.seq),
        )
        for memory in residents:
            if totals[tier] <= capacity:
                break
            lower = tier_down(tier)
            note = (f"{tier.value} over capacity ({totals[tier]:,} > {capacity:,} tokens): "
                    f"lowest score {scores[memory.id].composite:.3f} moves to {lower.value}")
            target[memory.id] = lower
            reasons[memory.id] = note if memory.memory_type == tier else (
                f"{reasons[memory.id]}; then {note}"
            )
            totals[tier] -= memory.token_count
            totals[lower] += memory.token_count


def _token_delta(preview: GCPreview) -> int:
    """Tokens leaving the active tiers minus tokens entering them (positive = freed)."""
    delta = 0
    for d in preview.changes():
        was_active = d.from_tier in ACTIVE_TIERS
        now_active = d.action != "merge" and d.to_tier in ACTIVE_TIERS
        if was_active and not now_active:
            delta += d.token_count
        elif now_active and not was_active:
            delta -= d.token_count
    return delta


def _summary(p: GCPreview) -> str:
    return (
        f"{len(p.to_promote)} promote, {len(p.to_demote)} demote, {len(p.to_archive)} archive, "
        f"{len(p.to_delete)} delete, {len(p.to_merge)} merge, {len(p.to_keep)} keep; "
        f"{p.token_delta:+,} tokens freed from active tiers"
    )


def predicted(preview: GCPreview, memory_id: str) -> GCDecision | None:
    """The decision a plan holds for one memory."""
    for group in (preview.to_merge, preview.to_delete, preview.to_archive, preview.to_demote,
                  preview.to_promote, preview.to_keep):
        for decision in group:
            if decision.memory_id == memory_id:
                return decision
    return None
