"""`inspect` predicts one memory's GC fate from its neighbours and the memories that score
higher, and the prediction is exactly what the namespace plan (gc_preview / gc_run) does."""

from __future__ import annotations

from pma_mcp.core.models import GCPreview, MemoryType
from pma_mcp.service import MemoryService
from tests.conftest import FakeClock


def big(i: int) -> str:
    """300 distinct words (390 tokens): a few of these fill the working tier."""
    return " ".join(f"w{i}x{j}" for j in range(300))


async def build(service: MemoryService, clock: FakeClock) -> None:
    """Duplicates (a pair and a chain of three), a full working tier, idle and archived
    memories, a superseded one, and another namespace that must not count."""
    for text in ("Background: the billing service retries webhooks three times.",
                 "Background: the search page debounces keystrokes by 300 ms.",
                 "Background: nightly backups go to the acme-backups bucket.",
                 "Background: staging uses the eu-west-1 region for load tests."):
        await service.add(text, importance=0.5)
    await service.add("The user prefers dark mode in every editor.", importance=0.8)
    await service.add("the user prefers dark mode in every editor", importance=0.4)
    chain = "Deploys go out on Tuesdays after the release review meeting with the whole team"
    await service.add(chain, importance=0.6)
    await service.add(chain + " present", importance=0.7)
    await service.add(chain + " present and on time", importance=0.5)
    for i in range(8):
        await service.add(big(i), importance=0.4 + i * 0.05, memory_type="working")
    old = await service.add("The API listens on port 8080", importance=0.9)
    await service.add("The API listens on port 8081", supersedes=old.memory.id)
    await service.add(big(99), namespace="/other", memory_type="working")
    clock.advance(80)  # past episodic's 72 h idle limit
    await service.add("stale low value note", importance=0.1)
    await service.add("archived trivia nobody needs", importance=0.05, memory_type="archived")
    clock.advance(30)  # the note scores < 0.10, the trivia < 0.05
    await service.add("Never deploy on Fridays", importance=1.0, memory_type="archived")
    for i in range(6):  # fresh: kept by the rules, but 2,340 tokens > working's 2,000
        await service.add(big(10 + i), importance=0.5 + i * 0.05, memory_type="working")
    for i in range(3):
        await service.add(f"semantic rule {i}: {big(200 + i)}", importance=0.2 + 0.3 * i,
                          memory_type="semantic")


def planned(preview: GCPreview) -> dict[str, tuple[str, MemoryType | None]]:
    out: dict[str, tuple[str, MemoryType | None]] = {}
    for group in (preview.to_merge, preview.to_delete, preview.to_archive, preview.to_demote,
                  preview.to_promote, preview.to_keep):
        for d in group:
            out[d.memory_id] = (d.action, d.to_tier if d.action != "keep" else d.from_tier)
    return out


async def test_inspect_predicts_what_gc_preview_plans_for_every_memory(
    service: MemoryService, clock: FakeClock
) -> None:
    await build(service, clock)
    preview = await service.gc_preview()
    plan = planned(preview)
    actions = {action for action, _ in plan.values()}
    # The store exercises every kind of decision inspect has to predict.
    assert {"merge", "delete", "archive", "demote", "promote", "keep"} <= actions
    assert any("over capacity" in d.reason for d in preview.changes() + preview.to_keep)
    reasons = {d.memory_id: d.reason for d in [*preview.changes(), *preview.to_keep]}
    for memory in await service.store.namespace_memories(service.namespace):
        report = await service.inspect(memory.id)
        assert (report.gc_action, report.predicted_tier) == plan[memory.id], memory.content[:40]
        assert report.gc_reason == reasons[memory.id]


async def test_predictions_still_agree_after_a_run(
    service: MemoryService, clock: FakeClock
) -> None:
    await build(service, clock)
    await service.gc_run()
    clock.advance(200)
    plan = planned(await service.gc_preview())
    for memory in await service.store.namespace_memories(service.namespace):
        report = await service.inspect(memory.id)
        assert (report.gc_action, report.predicted_tier) == plan[memory.id]


async def test_a_chain_of_near_duplicates_merges_as_the_plan_does(
    service: MemoryService,
) -> None:
    """B is like A and like C: B's fate depends on A–C, which inspect of B must follow."""
    base = "The staging cluster runs Postgres sixteen with logical replication to the warehouse"
    a = (await service.add(base, importance=0.9)).memory
    b = (await service.add(base + " nightly", importance=0.5)).memory
    c = (await service.add(base + " nightly at two", importance=0.3)).memory
    plan = planned(await service.gc_preview())
    merged = {i for i, (action, _) in plan.items() if action == "merge"}
    assert merged and merged <= {a.id, b.id, c.id}
    for m in (a, b, c):
        assert (await service.inspect(m.id)).gc_action == plan[m.id][0]
