"""GC policy: every seed branch, tier capacity, merges, and the plan's bookkeeping."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from itertools import count

import pytest

from pma_mcp.core.collector import ACTIVE_TIERS, WEIGHTS, Prediction, apply_rules, gc_score, plan
from pma_mcp.core.models import (
    GCDecision,
    GCPreview,
    Memory,
    MemoryType,
    MergePair,
    ScoreBreakdown,
)
from pma_mcp.core.scoring import Weights, breakdown

T0 = 1_800_000_000.0
HOUR = 3600.0
_ids = count(1)


def mem(
    tier: MemoryType,
    *,
    importance: float = 0.5,
    age_h: float = 0.0,
    idle_h: float | None = None,
    accesses: int = 0,
    tokens: int = 10,
) -> Memory:
    n = next(_ids)
    created = T0 - age_h * HOUR
    accessed = T0 - (age_h if idle_h is None else idle_h) * HOUR
    return Memory(
        id=f"{n:032x}", namespace="ns", content=f"memory {n}", memory_type=tier,
        importance=importance, token_count=tokens, access_count=accesses,
        created_at=datetime.fromtimestamp(created, tz=UTC),
        accessed_at=datetime.fromtimestamp(accessed, tz=UTC), seq=n,
    )


def decide(m: Memory) -> tuple[str, MemoryType | None]:
    rule = apply_rules(m, breakdown(m, T0, Weights()), T0)
    return rule.action, rule.to_tier


def test_idle_and_low_score_demotes_one_tier() -> None:
    # importance 0.3, 100 h old: score = 0.09 + ~0 ≤ 0.25 and idle > 72 h
    assert decide(mem(MemoryType.EPISODIC, importance=0.3, age_h=100)) == (
        "demote", MemoryType.SEMANTIC)
    assert decide(mem(MemoryType.WORKING, importance=0.3, age_h=5)) == (
        "demote", MemoryType.EPISODIC)


def test_old_but_important_is_kept() -> None:
    # importance 0.9 → score 0.27 > 0.25: never demoted for age alone
    action, _ = decide(mem(MemoryType.EPISODIC, importance=0.9, age_h=1000))
    assert action == "keep"
    rule = apply_rules(m := mem(MemoryType.SEMANTIC, importance=0.9, age_h=2000),
                       breakdown(m, T0, Weights()), T0)
    assert "important enough" in rule.reason


def test_high_score_promotes() -> None:
    # new and important: 0.3·0.9 + 0.2 = 0.47 ≥ 0.45
    assert decide(mem(MemoryType.EPISODIC, importance=0.9)) == ("promote", MemoryType.WORKING)
    assert decide(mem(MemoryType.ARCHIVED, importance=0.9)) == ("promote", MemoryType.SEMANTIC)
    assert decide(mem(MemoryType.WORKING, importance=0.9))[0] == "keep"


def test_low_score_archives_and_very_low_archived_is_deleted() -> None:
    # importance 0.3 after 30 h (idle < 72 h): 0.09 + 0.2·e^-3 = 0.0999… < 0.10
    assert decide(mem(MemoryType.EPISODIC, importance=0.3, age_h=30)) == (
        "archive", MemoryType.ARCHIVED)
    assert decide(mem(MemoryType.ARCHIVED, importance=0.1, age_h=500))[0] == "delete"
    # archived but 0.3·0.2 = 0.06 ≥ 0.05: stays
    assert decide(mem(MemoryType.ARCHIVED, importance=0.2, age_h=500))[0] == "keep"


def test_age_rule_is_checked_before_archival() -> None:
    # score < 0.10 AND idle past the tier's max: the seed demotes (rule 1) rather than archives
    assert decide(mem(MemoryType.WORKING, importance=0.1, age_h=10)) == (
        "demote", MemoryType.EPISODIC)


def test_capacity_moves_lowest_score_down_until_the_tier_fits() -> None:
    # working holds 3 × 900 = 2,700 tokens > 2,000: the lowest-scored one moves to episodic
    low = mem(MemoryType.WORKING, importance=0.6, tokens=900)
    mid = mem(MemoryType.WORKING, importance=0.7, tokens=900)
    high = mem(MemoryType.WORKING, importance=0.8, tokens=900)
    preview = plan("ns", [high, low, mid], T0, Weights())
    assert [d.memory_id for d in preview.to_demote] == [low.id]
    assert preview.to_demote[0].to_tier == MemoryType.EPISODIC
    assert "over capacity" in preview.to_demote[0].reason
    assert {d.memory_id for d in preview.to_keep} == {mid.id, high.id}


def test_capacity_counts_memories_outside_a_bounded_window() -> None:
    one = mem(MemoryType.EPISODIC, importance=0.5, tokens=500)
    preview = plan("ns", [one], T0, Weights(), outside_tokens={MemoryType.EPISODIC: 7_800})
    assert [d.memory_id for d in preview.to_demote] == [one.id]


def test_capacity_can_undo_a_promotion_into_a_full_tier() -> None:
    resident = mem(MemoryType.WORKING, importance=1.0, tokens=1_900, accesses=50)
    climber = mem(MemoryType.EPISODIC, importance=0.9, tokens=500)
    preview = plan("ns", [resident, climber], T0, Weights())
    keep = {d.memory_id: d for d in preview.to_keep}
    assert climber.id in keep and "over capacity" in keep[climber.id].reason


def test_merge_pairs_are_listed_and_excluded_from_other_decisions() -> None:
    keep, gone = mem(MemoryType.EPISODIC, importance=0.9), mem(MemoryType.EPISODIC)
    preview = plan("ns", [keep, gone], T0, Weights(),
                   merges=[MergePair(gone=gone, keep=keep, similarity=0.93)])
    assert [(d.memory_id, d.merge_into) for d in preview.to_merge] == [(gone.id, keep.id)]
    listed = [d.memory_id for d in [*preview.to_promote, *preview.to_keep]]
    assert gone.id not in listed and keep.id in listed


def test_token_delta_and_summary() -> None:
    archived = mem(MemoryType.EPISODIC, importance=0.3, age_h=30, tokens=40)
    promoted = mem(MemoryType.ARCHIVED, importance=0.9, tokens=15)
    preview = plan("ns", [archived, promoted], T0, Weights())
    assert preview.token_delta == 40 - 15
    assert preview.summary.startswith("1 promote, 0 demote, 1 archive, 0 delete, 0 merge, 0 keep")


@pytest.mark.parametrize("tier", list(MemoryType))
def test_every_memory_gets_exactly_one_decision(tier: MemoryType) -> None:
    memories = [mem(tier, importance=i / 10, age_h=h) for i in range(11) for h in (0, 5, 80, 900)]
    preview = plan("ns", memories, T0, Weights())
    groups = [preview.to_promote, preview.to_demote, preview.to_archive, preview.to_delete,
              preview.to_merge, preview.to_keep]
    ids = [d.memory_id for g in groups for d in g]
    assert sorted(ids) == sorted(m.id for m in memories)


# ------------------------------------------------- column-wise plan: exact to the last bit

def _decisions(preview: GCPreview) -> dict[str, GCDecision]:
    return {d.memory_id: d for g in (preview.to_promote, preview.to_demote, preview.to_archive,
                                     preview.to_delete, preview.to_merge, preview.to_keep)
            for d in g}


def _random_memories(rng: random.Random, n: int, *, max_tokens: int = 60) -> list[Memory]:
    memories = []
    for _ in range(n):
        age = rng.choice([rng.uniform(-5, 5), rng.uniform(0, 100), rng.uniform(0, 5000),
                          rng.uniform(0, 1e6)])
        memories.append(mem(
            rng.choice(list(MemoryType)), importance=rng.choice([rng.random(), 0.0, 1.0, 0.5]),
            age_h=age, idle_h=rng.uniform(min(age, 0.0), max(age, 0.0)),
            accesses=rng.choice([0, 1, rng.randrange(100), rng.randrange(10**9)]),
            tokens=rng.randrange(max_tokens + 1)))
    return memories


@pytest.mark.parametrize("weights", [Weights(), Weights(0.1, 0.5, 0.3, 0.1),
                                     Weights(0.0, 0.2, 0.7, 0.1), Weights(1.0, 0.0, 0.0, 0.0)])
def test_every_breakdown_is_scorings_to_the_last_bit(weights: Weights) -> None:
    """The plan scores column by column; recall, inspect and the UI show `scoring.score`."""
    rng = random.Random(11)
    memories = _random_memories(rng, 2_000)
    decided = _decisions(plan("ns", memories, T0, weights))
    for m in memories:
        shown, scored = decided[m.id].breakdown, breakdown(m, T0, weights)
        assert type(shown) is ScoreBreakdown
        assert shown == scored and repr(shown) == repr(scored) and hash(shown) == hash(scored)
        assert shown.composite.hex() == scored.composite.hex()


def test_a_memory_exactly_filling_a_tier_stays_and_the_next_moves_on() -> None:
    # working holds 2,000: with 500 outside, 900 + 600 fill it exactly; 1 token more moves
    first = mem(MemoryType.WORKING, importance=0.9, tokens=900)
    second = mem(MemoryType.WORKING, importance=0.8, tokens=600)
    third = mem(MemoryType.WORKING, importance=0.7, tokens=1)
    preview = plan("ns", [third, second, first], T0, Weights(),
                   outside_tokens={MemoryType.WORKING: 500})
    decided = _decisions(preview)
    assert [decided[m.id].action for m in (first, second, third)] == ["keep", "keep", "demote"]
    assert decided[third.id].to_tier == MemoryType.EPISODIC
    assert decided[third.id].reason == (
        "working over capacity (2,000 tokens held by higher scores): score 0.410 moves to "
        "episodic")


def test_a_memory_moved_through_full_tiers_gets_a_note_for_each() -> None:
    # episodic is full from outside: the third working memory passes it on to semantic
    first = mem(MemoryType.WORKING, importance=0.9, tokens=2_000)
    climber = mem(MemoryType.EPISODIC, importance=0.85, tokens=1)  # promoted into a full tier
    third = mem(MemoryType.WORKING, importance=0.7, tokens=1)
    decided = _decisions(plan("ns", [first, climber, third], T0, Weights(),
                              outside_tokens={MemoryType.EPISODIC: 8_000}))
    assert (decided[third.id].action, decided[third.id].to_tier) == (
        "demote", MemoryType.SEMANTIC)
    assert decided[third.id].reason == (
        "working over capacity (2,000 tokens held by higher scores): score 0.410 moves to "
        "episodic; then episodic over capacity (8,000 tokens held by higher scores): score "
        "0.410 moves to semantic")
    # the climber's own tier is full too: its note replaces the rule's reason and the first
    assert (decided[climber.id].action, decided[climber.id].to_tier) == (
        "demote", MemoryType.SEMANTIC)
    assert decided[climber.id].reason == (
        "episodic over capacity (8,000 tokens held by higher scores): score 0.455 moves to "
        "semantic")
    decided = _decisions(plan("ns", [first, climber], T0, Weights()))
    assert decided[climber.id].action == "keep"
    assert decided[climber.id].reason == (
        "score 0.455 ≥ 0.45; then working over capacity (2,000 tokens held by higher scores): "
        "score 0.455 moves to episodic")


def test_equal_scores_fill_a_tier_newest_first() -> None:
    older, middle, newest = (mem(MemoryType.WORKING, importance=0.6, tokens=1_000)
                             for _ in range(3))
    decided = _decisions(plan("ns", [newest, older, middle], T0, Weights()))
    assert decided[older.id].breakdown.composite == decided[newest.id].breakdown.composite
    assert [decided[m.id].action for m in (older, middle, newest)] == ["demote", "keep", "keep"]


def _reference_order(memories: list[Memory], now: float) -> list[Memory]:
    return sorted(memories, key=lambda m: (gc_score(m, now, WEIGHTS).composite, m.seq),
                  reverse=True)


def _predicted(memory: Memory, ranked: list[Memory]) -> GCDecision:
    """What `inspect` does: feed the memories best first until the outcome is settled."""
    prediction = Prediction(memory, T0, WEIGHTS)
    for other in ranked:
        if prediction.higher(other):
            break
    return prediction.decision()


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("filled", [0, 1])
def test_the_plan_is_what_each_memory_predicts_from_those_above_it(
    seed: int, filled: int
) -> None:
    """Prediction places higher-scored memories in batches, in the order fed; the plan sorts
    only the best-scored memories and archives the rest once the tiers are full."""
    rng = random.Random(seed)
    memories = _random_memories(rng, 700, max_tokens=1000)
    if seed % 2:  # working holds only low scores: placed after the other tiers filled
        memories = [m for m in memories if m.memory_type != MemoryType.WORKING]
        memories += [mem(MemoryType.WORKING, importance=0.5, age_h=5_000, idle_h=1,
                         tokens=100) for _ in range(30)]
    if filled:  # top-scored memories holding most of each tier's capacity
        memories += [mem(tier, importance=1.0, accesses=10**6, tokens=tokens)
                     for tier, tokens in zip(ACTIVE_TIERS, (1_500, 7_000, 30_000), strict=True)]
    decided = _decisions(plan("ns", memories, T0, WEIGHTS))
    ranked = _reference_order(memories, T0)
    for m in rng.sample(memories, 120):
        assert _predicted(m, ranked) == decided[m.id]


def test_a_prediction_is_settled_exactly_and_says_so_within_a_batch() -> None:
    target = mem(MemoryType.EPISODIC, importance=0.3, age_h=2)  # 0.254: kept in episodic
    above = [mem(MemoryType.EPISODIC, importance=0.6 + i / 500, age_h=i / 200, tokens=300)
             for i in range(200)]  # 60,000 tokens: working, episodic and semantic fill up
    ranked = _reference_order([*above, target], T0)
    watched, fed = Prediction(target, T0, WEIGHTS), Prediction(target, T0, WEIGHTS)
    assert not watched.settled
    settled_at = said = -1
    for i, other in enumerate(ranked):
        watched.higher(other)
        if watched.settled:
            settled_at = i
            break
    for i, other in enumerate(ranked):
        if fed.higher(other):
            said = i
            break
    assert 0 < settled_at <= said < settled_at + Prediction.BATCH
    decided = _decisions(plan("ns", [*above, target], T0, WEIGHTS))[target.id]
    assert fed.decision() == watched.decision() == decided
    assert decided.action == "demote" and decided.to_tier == MemoryType.ARCHIVED


def test_low_scores_fill_a_tier_left_with_room_after_the_others_filled() -> None:
    """The plan sorts only the best-scored memories when they fill the tiers: here they fill
    episodic and semantic, not working, whose 40 low-scored memories (100 tokens each, equal
    scores) are placed after them: the 20 newest stay, the others end archived."""
    bulk = [mem(tier, importance=0.5 + (i % 40) / 100, age_h=10 + i % 40, idle_h=1, tokens=600)
            for i in range(200) for tier in (MemoryType.EPISODIC, MemoryType.SEMANTIC)]
    low = [mem(MemoryType.WORKING, importance=0.5, age_h=5_000, idle_h=1, tokens=100)
           for _ in range(40)]
    memories = [*low, *bulk]
    decided = _decisions(plan("ns", memories, T0, WEIGHTS))
    assert [decided[m.id].action for m in low] == ["demote"] * 20 + ["keep"] * 20
    assert {decided[m.id].to_tier for m in low[:20]} == {MemoryType.ARCHIVED}
    assert decided[low[0].id].reason == (
        "working over capacity (2,000 tokens held by higher scores): score 0.150 moves to "
        "episodic; then episodic over capacity (8,000 tokens held by higher scores): score "
        "0.150 moves to semantic; then semantic over capacity (32,000 tokens held by higher "
        "scores): score 0.150 moves to archived")
    ranked = _reference_order(memories, T0)
    for m in [*low, *bulk[::7]]:
        assert _predicted(m, ranked) == decided[m.id]
