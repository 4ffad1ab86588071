"""GC through the service: preview is exactly what run applies; lineage for every change."""

from __future__ import annotations

import pytest

from pma_mcp.config import Settings
from pma_mcp.core.models import MemoryType
from pma_mcp.service import MemoryService
from tests.conftest import FakeClock


@pytest.fixture
def settings(store_settings: Settings) -> Settings:
    """Every test here that opens a store runs on each backend (tests/backends.py)."""
    return store_settings


async def populate(service: MemoryService, clock: FakeClock) -> dict[str, str]:
    ids = {}
    ids["stale"] = (await service.add("stale low value note", importance=0.3)).memory.id
    ids["gone"] = (await service.add("archived trivia", importance=0.1,
                                     memory_type="archived")).memory.id
    ids["old_important"] = (await service.add("core architecture rule", importance=0.9,
                                              memory_type="semantic")).memory.id
    clock.advance(30)
    ids["hot"] = (await service.add("fresh important decision", importance=0.95)).memory.id
    ids["plain"] = (await service.add("fresh plain fact", importance=0.5)).memory.id
    return ids


async def test_preview_is_exactly_what_run_applies(
    service: MemoryService, clock: FakeClock
) -> None:
    ids = await populate(service, clock)
    preview = await service.gc_preview()
    assert {d.memory_id for d in preview.to_archive} == {ids["stale"]}
    assert {d.memory_id for d in preview.to_delete} == {ids["gone"]}
    assert {d.memory_id for d in preview.to_promote} == {ids["hot"]}
    assert {d.memory_id for d in preview.to_keep} == {ids["old_important"], ids["plain"]}
    assert all(d.reason and d.breakdown.semantic_similarity == 0 for d in preview.changes())

    result = await service.gc_run()
    assert [(d.memory_id, d.action, d.to_tier) for d in result.decisions] == [
        (d.memory_id, d.action, d.to_tier) for d in preview.changes()]
    assert (result.promoted, result.archived, result.deleted, result.kept) == (1, 1, 1, 2)
    assert result.token_delta == preview.token_delta
    assert (await service.get(ids["stale"])).memory_type == MemoryType.ARCHIVED
    assert (await service.get(ids["hot"])).memory_type == MemoryType.WORKING
    assert await service.store.count() == 4
    for key, event in (("stale", "archive"), ("hot", "promote"), ("gone", "deleted")):
        lineage = await service.store.lineage(ids[key])
        assert lineage[-1].event == event and lineage[-1].reason
        assert lineage[-1].score is not None


async def test_a_second_run_has_nothing_left_to_do(
    service: MemoryService, clock: FakeClock
) -> None:
    await populate(service, clock)
    await service.gc_run()
    again = await service.gc_preview()
    assert again.changes() == []


async def test_old_but_important_survives_repeated_gc(
    service: MemoryService, clock: FakeClock
) -> None:
    m = (await service.add("never delete the prod database", importance=1.0,
                           memory_type="semantic")).memory
    for _ in range(10):
        clock.advance(24 * 40)
        await service.gc_run()
    assert (await service.get(m.id)).memory_type == MemoryType.SEMANTIC


async def test_capacity_is_enforced_per_namespace(
    service: MemoryService, clock: FakeClock
) -> None:
    def text(i: int) -> str:  # 300 distinct words: 390 tokens, no near-duplicates
        return " ".join(f"w{i}x{j}" for j in range(300))

    ids = [(await service.add(text(i), importance=0.4 + i * 0.01,
                              memory_type="working")).memory.id for i in range(8)]
    await service.add(text(99), namespace="/other", memory_type="working")
    result = await service.gc_run()
    working = [m for m in await service.store.namespace_memories(service.namespace)
               if m.memory_type == MemoryType.WORKING]
    assert sum(m.token_count for m in working) <= 2_000
    assert {m.id for m in working} == set(ids[-5:])  # the highest-scored stay
    assert result.demoted == 3
    other = await service.store.namespace_memories("/other")
    assert other[0].memory_type == MemoryType.WORKING


async def test_near_duplicates_are_merged_into_the_better_one(
    service: MemoryService,
) -> None:
    keep = (await service.add("The user prefers dark mode in every editor.", importance=0.8,
                              tags=["prefs"])).memory
    gone = (await service.add("The user prefers dark mode in every editor", importance=0.4,
                              tags=["ui"], linked_entities=["vscode"])).memory
    await service.search("editor dark mode")  # one access each
    distinct = (await service.add("Deploys happen on Tuesdays")).memory
    preview = await service.gc_preview()
    assert [(d.memory_id, d.merge_into) for d in preview.to_merge] == [(gone.id, keep.id)]
    await service.gc_run()
    merged = await service.get(keep.id)
    assert merged.tags == ["prefs", "ui"] and merged.linked_entities == ["vscode"]
    assert merged.access_count == 2
    assert await service.store.get(gone.id) is None
    assert await service.store.get(distinct.id) is not None
    assert "absorbed" in (await service.store.lineage(keep.id))[-1].reason
    gone_events = [e.event for e in await service.store.lineage(gone.id)]
    assert gone_events[-2:] == ["merge", "deleted"]
    assert (await service.related("vscode")).memories[0].id == keep.id
    assert (await service.store.check_consistency()).ok


async def test_bounded_run_touches_at_most_the_window(
    service: MemoryService, clock: FakeClock
) -> None:
    for i in range(30):
        await service.add(f"low value note about topic{i} and item{i * 7}", importance=0.2)
    clock.advance(30)
    result = await service.gc_run(max_memories=10)
    assert result.archived == 10
    assert await service.store.count() == 30


@pytest.mark.parametrize("namespace", ["/a", "/b"])
async def test_gc_never_crosses_namespaces(
    service: MemoryService, clock: FakeClock, namespace: str
) -> None:
    await service.add("same words here", namespace="/a")
    await service.add("same words here", namespace="/b", importance=0.1)
    clock.advance(30)
    preview = await service.gc_preview(namespace=namespace)
    assert len(preview.to_merge) == 0
    assert len(preview.changes()) + len(preview.to_keep) == 1


async def test_bounded_runs_rotate_through_the_whole_namespace(
    service: MemoryService, clock: FakeClock
) -> None:
    """Kept memories must not pin the window: successive bounded runs reach every memory."""
    keepers = [(await service.add(f"important rule {i} about area{i}", importance=1.0,
                                  memory_type="semantic")).memory.id for i in range(10)]
    stale = [(await service.add(f"low value detail {i} on thing{i}", importance=0.2)).memory.id
             for i in range(10)]
    clock.advance(30)
    preview = await service.gc_preview(max_memories=10)
    assert {d.memory_id for d in preview.to_keep} == set(keepers)
    first = await service.gc_run(max_memories=10)
    assert first.archived == 0
    second = await service.gc_run(max_memories=10)
    assert {d.memory_id for d in second.decisions} == set(stale)
    third = await service.gc_preview(max_memories=10)  # wrapped around to the start
    assert {d.memory_id for d in third.to_keep} == set(keepers)


async def test_a_plan_applied_twice_changes_nothing_the_second_time(
    service: MemoryService, clock: FakeClock
) -> None:
    """Two processes' GC runs can act on the same snapshot: the second must be a no-op."""
    await populate(service, clock)
    plan = await service.gc_preview()
    memories = {m.id: m for m in await service.store.namespace_memories(service.namespace)}
    await service.gc_run()
    lineage_before = {i: len(await service.store.lineage(i)) for i in memories}
    await service.store.apply_gc(plan.changes(), memories, clock.now)
    assert {i: len(await service.store.lineage(i)) for i in memories} == lineage_before
    assert (await service.store.check_consistency()).ok


async def test_superseded_memories_are_never_promoted_or_merged(
    service: MemoryService, clock: FakeClock
) -> None:
    old = (await service.add("The API listens on port 8080", importance=1.0)).memory
    new = (await service.add("The API listens on port 8081", importance=0.3,
                             supersedes=old.id)).memory
    result = await service.gc_run()
    assert old.id not in {d.memory_id for d in result.decisions if d.action == "promote"}
    assert result.merged == 0
    assert (await service.get(old.id)).memory_type == MemoryType.ARCHIVED
    assert [r.memory.id for r in await service.search("API port")] == [new.id]
