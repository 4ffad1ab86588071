"""MemoryService over a real SQLite file: the seed's rules plus what we added."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest

from pma_mcp.config import Settings
from pma_mcp.core.budget import WordEstimate
from pma_mcp.core.errors import AmbiguousError, InvalidInputError, NotFoundError
from pma_mcp.core.models import MemoryType
from pma_mcp.service import MemoryService
from pma_mcp.store.sqlite.schema import SCHEMA_VERSION
from tests.conftest import PROJECT, FakeClock
from tests.stores import sqlite_store


@pytest.fixture
def settings(store_settings: Settings) -> Settings:
    """Every test here runs on each backend (tests/backends.py)."""
    return store_settings


async def test_add_stores_every_field(service: MemoryService, clock: FakeClock) -> None:
    result = await service.add(
        "Use WAL mode for the store", importance=0.7, memory_type="semantic",
        tags=["db", "decision"], linked_entities=["sqlite"], metadata={"source": "review"},
        session_id="s1",
    )
    m = result.memory
    assert not result.deduplicated
    assert len(m.id) == 32 and m.namespace == PROJECT
    assert (m.memory_type, m.importance, m.tags, m.linked_entities) == (
        MemoryType.SEMANTIC, 0.7, ["db", "decision"], ["sqlite"])
    assert m.metadata == {"source": "review"} and m.session_id == "s1"
    assert m.token_count == 8  # ceil(6 words × 1.3)
    assert m.created_at.timestamp() == clock.now
    assert await service.get(m.id) == m


async def test_exact_duplicate_is_reinforced_not_stored_twice(service: MemoryService) -> None:
    first = await service.add("The deploy script lives in ops/deploy.sh")
    again = await service.add("The deploy script lives in ops/deploy.sh  ")
    assert again.deduplicated and again.memory.id == first.memory.id
    assert again.memory.access_count == 1
    assert await service.store.count(PROJECT) == 1
    events = [e.event for e in await service.store.lineage(first.memory.id)]
    assert events == ["created", "accessed"]


async def test_same_content_in_another_namespace_is_a_different_memory(
    service: MemoryService,
) -> None:
    a = await service.add("Prefer tabs over spaces")
    b = await service.add("Prefer tabs over spaces", namespace="/other/project")
    assert not b.deduplicated and a.memory.id != b.memory.id


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"content": "   "}, "content"),
        ({"content": ""}, "content"),
        ({"content": 42}, "content"),
        ({"content": "x" * 100_001}, "content"),
        ({"content": "a\x00b"}, "content"),
        ({"content": "bad \ud800 surrogate"}, "content"),
        ({"importance": 1.5}, "importance"),
        ({"importance": -0.1}, "importance"),
        ({"importance": float("nan")}, "importance"),
        ({"importance": float("inf")}, "importance"),
        ({"importance": "high"}, "importance"),
        ({"importance": True}, "importance"),
        ({"memory_type": "longterm"}, "memory_type"),
        ({"memory_type": 3}, "memory_type"),
        ({"tags": "db"}, "tags"),
        ({"tags": ["ok", 5]}, "tags[1]"),
        ({"tags": ["", "x"]}, "tags[0]"),
        ({"tags": [f"t{i}" for i in range(10_000)]}, "tags"),
        ({"linked_entities": [None]}, "linked_entities[0]"),
        ({"metadata": ["not", "an", "object"]}, "metadata"),
        ({"metadata": {"x": float("nan")}}, "metadata"),
        ({"metadata": {"x": object()}}, "metadata"),
        ({"session_id": 7}, "session_id"),
        ({"supersedes": "xyz"}, "supersedes"),
    ],
)
async def test_invalid_input_names_the_field_and_writes_nothing(
    service: MemoryService, kwargs: dict[str, object], field: str
) -> None:
    args: dict[str, object] = {"content": "valid content"} | kwargs
    content = args.pop("content")
    with pytest.raises(InvalidInputError) as err:
        await service.add(content, **args)  # type: ignore[arg-type]
    assert err.value.field == field
    assert await service.store.count() == 0


async def test_unknown_tier_is_never_coerced(service: MemoryService) -> None:
    with pytest.raises(InvalidInputError, match="working, episodic, semantic, archived"):
        await service.add("x", memory_type="long-term")


async def test_supersedes_archives_the_old_memory_and_links_it(service: MemoryService) -> None:
    old = (await service.add("The API runs on port 8080")).memory
    new = (await service.add("The API runs on port 9090", supersedes=old.id[:8])).memory
    stored_old = await service.get(old.id)
    assert stored_old.memory_type == MemoryType.ARCHIVED
    assert stored_old.superseded_by == new.id
    results = await service.search("API port")
    assert [r.memory.id for r in results] == [new.id]
    events = await service.store.lineage(old.id)
    assert events[-1].event == "supersede" and new.id in events[-1].reason


async def test_delete_by_unique_prefix(service: MemoryService) -> None:
    m = (await service.add("Temporary note")).memory
    result = await service.delete(m.id[:6])
    assert result.deleted_id == m.id and result.content_preview == "Temporary note"
    with pytest.raises(NotFoundError):
        await service.get(m.id)


@pytest.mark.sqlite_only  # gives memories chosen ids with direct SQL
async def test_ambiguous_prefix_lists_candidates_and_deletes_nothing(
    service: MemoryService,
) -> None:
    a = (await service.add("first")).memory
    b = (await service.add("second")).memory
    await _set_id(service, a.id, "abcdef01" + "0" * 24)
    await _set_id(service, b.id, "abcdef02" + "0" * 24)
    with pytest.raises(AmbiguousError) as err:
        await service.delete("abcdef")
    assert set(err.value.candidates) == {"abcdef01" + "0" * 24, "abcdef02" + "0" * 24}
    assert await service.store.count() == 2
    assert (await service.delete("abcdef01")).deleted_id.startswith("abcdef01")


async def test_prefix_never_reaches_another_namespace(service: MemoryService) -> None:
    other = (await service.add("secret of another project", namespace="/other")).memory
    with pytest.raises(NotFoundError):
        await service.delete(other.id[:8])
    with pytest.raises(NotFoundError):
        await service.delete(other.id)
    with pytest.raises(NotFoundError):
        await service.inspect(other.id)
    assert await service.store.count("/other") == 1


async def test_global_namespace_memories_are_visible_and_deletable_from_a_project(
    service: MemoryService,
) -> None:
    glob = service.settings.global_namespace  # on a shared database, this person's own
    rule = (await service.add("Always answer in English", namespace=glob)).memory
    assert (await service.get(rule.id[:8])).id == rule.id
    results = await service.search("answer English")
    assert [r.memory.id for r in results] == [rule.id]
    assert await service.search("answer English", include_global=False) == []


@pytest.mark.parametrize("bad", ["abc", "zzzzzzzz", "", 12345678, None])
async def test_malformed_ids_are_refused(service: MemoryService, bad: object) -> None:
    with pytest.raises(InvalidInputError, match="memory_id"):
        await service.delete(bad)


async def test_tag_filter_and_memory_type_filter(service: MemoryService) -> None:
    await service.add("Postgres connection pool size is 20", tags=["db"])
    await service.add("Postgres backups run nightly", tags=["ops"], memory_type="semantic")
    await service.add("Postgres upgrade planned", tags=["db", "ops"])
    db = await service.search("postgres", tags=["db"])
    assert {r.memory.content for r in db} == {
        "Postgres connection pool size is 20", "Postgres upgrade planned"}
    sem = await service.search("postgres", memory_type="semantic")
    assert [r.memory.content for r in sem] == ["Postgres backups run nightly"]


async def test_min_score_and_limit(service: MemoryService) -> None:
    await service.add("Redis caches sessions", importance=0.9)
    await service.add("Redis is also used for rate limiting", importance=0.1)
    results = await service.search("redis", limit=5)
    assert len(results) == 2 and results[0].score >= results[1].score
    cut = results[0].score - 1e-9
    high = await service.search("redis", min_score=cut)
    assert [r.memory.content for r in high] == ["Redis caches sessions"]
    assert len(await service.search("redis", limit=1)) == 1
    for bad in (0, 51, "5", 2.5):
        with pytest.raises(InvalidInputError, match="limit"):
            await service.search("redis", limit=bad)
    with pytest.raises(InvalidInputError, match="min_score"):
        await service.search("redis", min_score=1.5)


async def test_recall_bumps_access_and_records_one_coalesced_lineage_row(
    service: MemoryService, clock: FakeClock
) -> None:
    m = (await service.add("Feature flags live in LaunchDarkly")).memory
    for _ in range(3):
        clock.advance(1)
        await service.search("feature flags")
    stored = await service.get(m.id)
    assert stored.access_count == 3
    assert stored.accessed_at.timestamp() == clock.now
    events = await service.store.lineage(m.id)
    assert [e.event for e in events] == ["created", "accessed"]
    assert events[1].count == 3 and events[1].last_at is not None
    assert events[1].last_at.timestamp() == clock.now


async def test_search_without_touch_changes_nothing(service: MemoryService) -> None:
    m = (await service.add("Read-only search")).memory
    await service.search("search", touch=False)
    assert (await service.get(m.id)).access_count == 0


async def test_no_query_ranks_by_composite_alone(
    service: MemoryService, clock: FakeClock
) -> None:
    await service.add("old and unimportant", importance=0.1)
    clock.advance(10)
    await service.add("new and important", importance=0.9)
    await service.add("new and middling", importance=0.5)
    results = await service.search("", limit=3)
    assert [r.memory.content for r in results] == [
        "new and important", "new and middling", "old and unimportant"]
    assert all(r.breakdown.semantic_similarity == 0.0 for r in results)
    only_stopwords = await service.search("what is the", limit=3)
    assert [r.memory.id for r in only_stopwords] == [r.memory.id for r in results]


async def test_lineage_survives_deletion_and_reopening(
    settings: Settings, clock: FakeClock
) -> None:
    async with await MemoryService.open(settings, clock=clock, counter=WordEstimate()) as svc:
        m = (await svc.add("short-lived")).memory
        await svc.search("short-lived")
        await svc.delete(m.id)
    async with await MemoryService.open(settings, clock=clock, counter=WordEstimate()) as svc:
        events = await svc.lineage_of(m.id)
        assert [e.event for e in events] == ["created", "accessed", "deleted"]
        with pytest.raises(NotFoundError):
            await svc.lineage_of(m.id, namespace="/elsewhere")


@pytest.mark.sqlite_only
async def test_database_file_is_private_and_schema_is_current(
    service: MemoryService, db_path: Path
) -> None:
    await service.add("private text")
    assert stat.S_IMODE(os.stat(db_path).st_mode) == 0o600
    assert await service.store.schema_version() == SCHEMA_VERSION


async def test_in_memory_storage_runs_the_same_code(clock: FakeClock) -> None:
    settings = Settings.from_env({"PMA_STORAGE": "memory", "PMA_NAMESPACE": "mem"})
    async with await MemoryService.open(settings, clock=clock, counter=WordEstimate()) as svc:
        await svc.add("kept in RAM only")
        assert [r.memory.content for r in await svc.search("RAM")] == ["kept in RAM only"]


async def test_inspect_explains_score_gc_and_lineage(
    service: MemoryService, clock: FakeClock
) -> None:
    m = (await service.add("Old low-value note", importance=0.3)).memory
    clock.advance(30)
    report = await service.inspect(m.id[:8], query="note")
    assert report.breakdown.semantic_similarity > 0
    assert report.gc_action == "archive" and report.predicted_tier == MemoryType.ARCHIVED
    assert "< 0.1" in report.gc_reason
    assert [e.event for e in report.lineage] == ["created"]


async def test_related_returns_tagged_and_linked_memories(service: MemoryService) -> None:
    await service.add("Billing uses Stripe", tags=["billing"], linked_entities=["stripe"])
    await service.add("Stripe webhooks need a secret", linked_entities=["stripe", "webhooks"])
    await service.add("Unrelated", tags=["misc"])
    related = await service.related("stripe")
    assert len(related.memories) == 2
    assert related.related_nodes == ["billing", "webhooks"]


async def test_stats_per_tier(service: MemoryService) -> None:
    await service.add("one", memory_type="working")
    await service.add("two words", memory_type="semantic")
    await service.add("three more words")
    stats = await service.stats()
    assert stats.total == 3
    assert stats.by_tier[MemoryType.WORKING].count == 1
    assert stats.by_tier[MemoryType.SEMANTIC].tokens == 3
    assert stats.total_tokens == 2 + 3 + 4
    assert 0 < stats.avg_composite_score <= 1


async def test_context_packs_greedily_within_budget(service: MemoryService) -> None:
    await service.add("alpha " * 10, importance=0.9)  # 13 tokens
    await service.add("alpha beta " * 10, importance=0.8)  # 26 tokens
    await service.add("alpha gamma", importance=0.1)  # 3 tokens
    pack = await service.get_context("alpha", token_budget=20)
    assert [r.memory.token_count for r in pack.memories] == [13, 3]
    assert pack.total_tokens == 16 and pack.budget_used == pytest.approx(0.8)
    touched = [r.memory.id for r in pack.memories]
    for memory_id in touched:
        assert (await service.get(memory_id)).access_count == 1


async def test_index_stays_consistent(service: MemoryService) -> None:
    ids = [(await service.add(f"note number {i}", tags=[f"t{i % 3}"])).memory.id
           for i in range(20)]
    for memory_id in ids[::3]:
        await service.delete(memory_id)
    report = await service.store.check_consistency()
    assert report.ok and report.memories == report.fts_rows == 13


async def _set_id(service: MemoryService, old: str, new: str) -> None:
    """Give a memory a chosen id so prefix collisions are deterministic."""
    with sqlite3.connect(sqlite_store(service).location) as conn:
        conn.execute("UPDATE memories SET id = ? WHERE id = ?", (new, old))
    conn.close()


async def test_concurrent_calls_on_one_service_do_not_nest_transactions(
    service: MemoryService,
) -> None:
    import asyncio

    results = await asyncio.gather(
        *(service.add(f"parallel fact number {i}") for i in range(20)),
        *(service.search("parallel fact") for _ in range(10)),
    )
    assert len(results) == 30
    assert await service.store.count() == 20
    assert (await service.store.check_consistency()).ok


async def test_storing_a_superseded_text_again_makes_it_current_and_supersedes(
    service: MemoryService,
) -> None:
    """8080 → corrected to 8081 → corrected back to 8080: recall must answer 8080."""
    a = (await service.add("The API runs on port 8080")).memory
    b = (await service.add("The API runs on port 8081", supersedes=a.id)).memory
    again = await service.add("The API runs on port 8080", supersedes=b.id)
    assert again.deduplicated and again.memory.id == a.id
    assert again.memory.superseded_by is None
    assert (await service.get(b.id)).superseded_by == a.id
    assert [r.memory.id for r in await service.search("API port")] == [a.id]


async def test_related_leaves_out_superseded_memories(service: MemoryService) -> None:
    old = (await service.add("We run postgres 13", tags=["db"])).memory
    new = (await service.add("We run postgres 16", tags=["db"], supersedes=old.id)).memory
    assert [m.id for m in (await service.related("db")).memories] == [new.id]
