"""Garbage-collector policy (pure): which memories move tier, get archived, deleted or merged.

The seed's rules, per memory, in this order (scores without a query, so at most 0.6):
  1. idle longer than its tier's max age AND score ≤ 0.25 → one tier down
     (an old but important memory is never demoted for age alone);
  2. score ≥ 0.45 → one tier up;
  3. score < 0.10 → archived; score < 0.05 and already archived → deleted.
Added: tier capacity. The seed's token limits per namespace are enforced: while a tier holds
more tokens than its capacity, its lowest-scored memory moves one tier down (judged before this
run's merges). And near-duplicates found by `consolidate` are merged into the better-scored copy.

`plan()` is the whole decision; `service.gc_run` applies exactly the plan `gc_preview` shows.
`Prediction` makes the same decision for one memory from the memories that score higher
(`inspect`), and `gc_score` is the one score every GC decision uses.

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
    MemoryType,
    MergePair,
    Planned,
    ScoreBreakdown,
    Tiered,
    tier_down,
    tier_up,
)
from pma_mcp.scoring import score as composite_of

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
_LOWER = {tier: tier_down(tier) for tier in ACTIVE_TIERS}


@dataclass(frozen=True)
class Rule:
    """The outcome of the per-memory rules, before capacity is considered."""

    action: GCAction
    to_tier: MemoryType | None
    reason: str


def idle_hours(memory: Tiered, now: float) -> float:
    return (now - memory.accessed_epoch) / 3600.0


def apply_rules(memory: Tiered, score: ScoreBreakdown, now: float) -> Rule:
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
            _LOWER[tier],
            f"idle {idle:.1f} h > {max_idle:g} h max for {tier} and score "
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
    memory: Planned,
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


def gc_score(memory: Tiered, now: float, weights: Weights) -> ScoreBreakdown:
    """The query-less score every GC decision uses: the one place GC asks for a score."""
    return composite_of(memory.importance, memory.created_epoch, memory.access_count, now,
                        weights)


def _key(memory: Tiered, score: ScoreBreakdown) -> tuple[float, int]:
    """Capacity order: higher score first, the newer memory first on a tie."""
    return (score.composite, memory.seq)


def _target(memory: Tiered, rule: Rule) -> MemoryType | None:
    """The tier the rules send a memory to (None: deleted)."""
    return memory.memory_type if rule.action == "keep" else rule.to_tier


_OVER_CAPACITY = {
    tier: (f"{tier.value} over capacity ({TIER_CAPACITY[tier]:,} tokens held by higher "
           "scores): score ", f" moves to {_LOWER[tier].value}")
    for tier in ACTIVE_TIERS
}
"""A capacity note around the score (GC writes one for most memories of a large store)."""
_RANK = {tier: i for i, tier in enumerate(TIER_ORDER)}


class Capacity:
    """Tier capacity, filled in descending score order (see `plan`).

    A memory whose tier already holds its capacity moves one tier down, and on down while the
    next is full too. Placing memories best first is the same as repeatedly moving a full
    tier's lowest-scored memory down, and it lets `Prediction` stop once the tiers a memory
    could stay in are full, without looking at lower-scored memories.
    """

    def __init__(self, outside: Mapping[MemoryType, int] | None = None) -> None:
        self._held = {tier: (outside or {}).get(tier, 0) for tier in ACTIVE_TIERS}

    def place(
        self, memory: Tiered, target: MemoryType | None, reason: str, score: ScoreBreakdown
    ) -> tuple[MemoryType | None, str]:
        """(final tier, reason) for the next memory in descending score order."""
        tier = target
        held = self._held
        shown = ""
        while tier in held:
            assert tier is not None
            held[tier] += memory.token_count
            if held[tier] <= TIER_CAPACITY[tier]:
                break
            head, tail = _OVER_CAPACITY[tier]
            shown = shown or f"{score.composite:.3f}"
            note = f"{head}{shown}{tail}"
            reason = note if memory.memory_type == tier else f"{reason}; then {note}"
            tier = _LOWER[tier]
        return tier, reason

    def full_from(self, tier: MemoryType | None) -> bool:
        """Whether every active tier from `tier` down is past its capacity (a memory bound
        for `tier` can then only end up archived, whatever scores lower)."""
        while tier in self._held:
            assert tier is not None
            if self._held[tier] <= TIER_CAPACITY[tier]:
                return False
            tier = tier_down(tier)
        return True


def _classify(
    memory: Planned, rule: Rule, final: MemoryType | None, reason: str, score: ScoreBreakdown
) -> GCDecision:
    if final is None:
        return _decision(memory, "delete", None, reason, score)
    if final == memory.memory_type:
        return _decision(memory, "keep", None, reason, score)
    if _RANK[final] < _RANK[memory.memory_type]:
        return _decision(memory, "promote", final, reason, score)
    if rule.action == "archive" and final == MemoryType.ARCHIVED:
        return _decision(memory, "archive", final, reason, score)
    return _decision(memory, "demote", final, reason, score)


def _merge_decision(memory: Planned, pair: MergePair, score: ScoreBreakdown) -> GCDecision:
    return _decision(
        memory, "merge", None,
        f"near-duplicate of {pair.keep.id[:8]} (cosine {pair.similarity:.2f}); "
        "the better-scored copy is kept",
        score, merge_into=pair.keep.id,
    )


def plan(
    namespace: str,
    memories: Sequence[Planned],
    now: float,
    weights: Weights,
    *,
    merges: Sequence[MergePair] = (),
    outside_tokens: Mapping[MemoryType, int] | None = None,
) -> GCPreview:
    """Decide every memory's fate. `outside_tokens`: per-tier tokens of memories of the
    namespace that were not passed in (a bounded run), counted toward capacity.

    Capacity is judged on the tiers before this run's merges (a memory merged away still
    holds its place; the room it frees is used by the next run), so one memory's fate never
    depends on which others are near-duplicates: `inspect` can predict it from the memories
    that score higher alone.
    """
    preview = GCPreview(namespace=namespace)
    merged_away = {pair.gone.id: pair for pair in merges}
    scores = [gc_score(m, now, weights) for m in memories]
    rules = [apply_rules(m, score, now) for m, score in zip(memories, scores, strict=True)]
    capacity = Capacity(outside_tokens)
    placed: list[tuple[MemoryType | None, str]] = [(None, "")] * len(memories)
    keys = [_key(m, score) for m, score in zip(memories, scores, strict=True)]
    for i in sorted(range(len(memories)), key=keys.__getitem__, reverse=True):
        memory, rule = memories[i], rules[i]
        placed[i] = capacity.place(memory, _target(memory, rule), rule.reason, scores[i])
    groups = {"merge": preview.to_merge, "delete": preview.to_delete,
              "keep": preview.to_keep, "promote": preview.to_promote,
              "archive": preview.to_archive, "demote": preview.to_demote}
    for memory, score, rule, (final, reason) in zip(memories, scores, rules, placed,
                                                    strict=True):
        pair = merged_away.get(memory.id)
        if pair is not None:
            decision = _merge_decision(memory, pair, score)
        else:
            decision = _classify(memory, rule, final, reason, score)
        groups[decision.action].append(decision)

    preview.token_delta = _token_delta(preview)
    preview.summary = _summary(preview)
    return preview


class Prediction:
    """The decision `plan` would make for one memory, from the memories scoring higher.

    Feed `higher` the namespace's memories in descending score order (those that cannot
    reach an active tier may be left out) until it returns True; then `decision()`.
    """

    def __init__(self, memory: Planned, now: float, weights: Weights) -> None:
        self.memory = memory
        self._now = now
        self._weights = weights
        self.score = gc_score(memory, now, weights)
        self._rule = apply_rules(memory, self.score, now)
        self._target = _target(memory, self._rule)
        self._capacity = Capacity()

    @property
    def settled(self) -> bool:
        """No memory scoring lower than the ones fed so far can change the outcome."""
        return self._capacity.full_from(self._target)

    def higher(self, other: Tiered) -> bool:
        """Count one memory that scores higher; True once the outcome is settled."""
        score = gc_score(other, self._now, self._weights)
        if _key(other, score) <= _key(self.memory, self.score):
            return self.settled
        rule = apply_rules(other, score, self._now)
        self._capacity.place(other, _target(other, rule), rule.reason, score)
        return self.settled

    def decision(self, merge: MergePair | None = None) -> GCDecision:
        if merge is not None and merge.gone.id == self.memory.id:
            return _merge_decision(self.memory, merge, self.score)
        final, reason = self._capacity.place(self.memory, self._target, self._rule.reason,
                                             self.score)
        return _classify(self.memory, self._rule, final, reason, self.score)


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
