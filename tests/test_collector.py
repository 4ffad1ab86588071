"""GC policy: every seed branch, tier capacity, merges, and the plan's bookkeeping."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import count

import pytest

from pma_mcp.collector import apply_rules, plan
from pma_mcp.config import Weights
from pma_mcp.models import Memory, MemoryType, MergePair
from pma_mcp.scoring import breakdown

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
