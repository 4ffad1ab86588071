"""A GC plan made from the store's lighter rows (GCFacts, TierFacts) is the plan made from the
full memories, decision for decision and reason for reason, and gc_run applies it."""

from __future__ import annotations

import random

from pma_mcp.core import collector
from pma_mcp.core.models import GCPreview, Planned, stored_epoch, to_datetime
from pma_mcp.service import MemoryService, consolidate
from tests.conftest import FakeClock
from tests.test_gc_predict import build


async def _plan(service: MemoryService, memories: list[Planned], now: float
                ) -> GCPreview:
    weights = collector.WEIGHTS
    merges = await consolidate.near_duplicates(
        service.store, memories, lambda m: collector.gc_score(m, now, weights).composite)
    return collector.plan(service.namespace, memories, now, weights, merges=merges)


async def test_a_plan_from_facts_is_the_plan_from_memories(
    service: MemoryService, clock: FakeClock
) -> None:
    await build(service, clock)
    clock.now += 0.123_456_7  # a time between microseconds: rows and memories round alike
    facts = await service.store.gc_facts(service.namespace)
    memories = await service.store.namespace_memories(service.namespace)
    assert [f.seq for f in facts] == [m.seq for m in memories]
    for fact, memory in zip(facts, memories, strict=True):
        assert (fact.created_epoch, fact.accessed_epoch) == (
            memory.created_at.timestamp(), memory.accessed_at.timestamp())
    from_facts = await _plan(service, list(facts), clock.now)
    from_memories = await _plan(service, list(memories), clock.now)
    assert from_facts.to_merge and from_facts.to_demote and from_facts.to_keep
    assert from_facts == from_memories
    assert from_facts == await service.gc_preview()


async def test_the_ranked_tier_read_is_what_the_full_read_sees(
    service: MemoryService, clock: FakeClock
) -> None:
    await build(service, clock)
    by_seq = {m.seq: m for m in await service.store.namespace_memories(service.namespace)}
    ranked = [f async for f in service.store.tier_facts_by_score(
        service.namespace, clock.now, collector.WEIGHTS, at_least=0.0, archived_at_least=0.0)]
    assert len(ranked) == sum(m.superseded_by is None for m in by_seq.values())
    for fact in ranked:
        memory = by_seq[fact.seq]
        assert (fact.memory_type, fact.importance, fact.token_count, fact.access_count,
                fact.created_epoch, fact.accessed_epoch, fact.superseded_by) == (
            memory.memory_type, memory.importance, memory.token_count, memory.access_count,
            memory.created_at.timestamp(), memory.accessed_at.timestamp(), None)


async def test_gc_run_applies_the_plan_it_made_from_facts(
    service: MemoryService, clock: FakeClock
) -> None:
    await build(service, clock)
    preview = await service.gc_preview()
    result = await service.gc_run()
    assert result.decisions == preview.changes()
    after = {m.id: m for m in await service.store.namespace_memories(service.namespace)}
    for d in preview.changes():
        if d.action in ("merge", "delete"):
            assert d.memory_id not in after
        else:
            assert after[d.memory_id].memory_type == d.to_tier


def test_stored_epoch_rounds_as_a_datetime_does() -> None:
    rng = random.Random(7)
    values = [rng.uniform(-2e9, 4e9) for _ in range(20_000)]
    values += [t + (k + 0.5) / 1e6 for t in (1_780_000_000, 0, -5) for k in range(-3, 1000)]
    values += [t + rng.randrange(10**6) / 1e6 for t in range(1_780_000_000, 1_780_001_000)]
    for value in values:
        assert stored_epoch(value) == to_datetime(value).timestamp(), value
