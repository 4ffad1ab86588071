"""The service calls behind the browser's pages: browse (filters, keyset pages) and overview."""

from __future__ import annotations

import pytest

from pma_mcp.core.errors import InvalidInputError
from pma_mcp.core.models import Browse, MemoryType
from pma_mcp.service import CHART_PERIODS, MemoryService
from tests.conftest import PROJECT, T0, FakeClock

DAY = 86_400.0


async def fill(service: MemoryService, clock: FakeClock, days: int) -> list[str]:
    """One memory a day for `days` days; every third auto-saved, every fifth semantic."""
    ids = []
    for i in range(days):
        clock.now = T0 + i * DAY
        added = await service.add(
            f"note number {i} about the release", tags=["auto-saved"] if i % 3 == 0 else [],
            memory_type="semantic" if i % 5 == 0 else "episodic",
            metadata={"source": "hook:stop"} if i % 3 == 0 else {})
        ids.append(added.memory.id)
    return ids


@pytest.mark.parametrize("span_days", [3, 40])  # through the index, and by seq order
async def test_date_range_selects_exactly_the_days_in_it(
    service: MemoryService, clock: FakeClock, span_days: int
) -> None:
    ids = await fill(service, clock, 60)
    since, until = T0 + 10 * DAY, T0 + (10 + span_days) * DAY
    page = await service.browse(Browse(namespace=PROJECT, since=since, until=until), limit=200)
    assert [m.id for m in page.memories] == ids[10:10 + span_days][::-1]  # newest first


async def test_filters_combine(service: MemoryService, clock: FakeClock) -> None:
    ids = await fill(service, clock, 30)
    where = Browse(namespace=PROJECT, memory_type=MemoryType.SEMANTIC, tag="auto-saved",
                   source="hook:stop")
    page = await service.browse(where, limit=200)
    assert [m.id for m in page.memories] == [ids[i] for i in (15, 0)]
    other = await service.browse(Browse(namespace="/home/dev/other"), limit=200)
    assert other.memories == [] and other.next_before is None


async def test_keyset_pages_cover_the_namespace_once(
    service: MemoryService, clock: FakeClock
) -> None:
    ids = await fill(service, clock, 23)
    seen: list[str] = []
    before = None
    while True:
        page = await service.browse(Browse(namespace=PROJECT), before=before, limit=5)
        seen.extend(m.id for m in page.memories)
        if page.next_before is None:
            break
        before = page.next_before
    assert seen == ids[::-1]
    with pytest.raises(InvalidInputError):
        await service.browse(Browse(namespace=PROJECT), limit=0)


async def test_overview_counts_sources_and_periods(
    service: MemoryService, clock: FakeClock
) -> None:
    await fill(service, clock, 30)
    clock.now = T0 + 400 * DAY  # a year later: periods widen to stay within CHART_PERIODS
    await service.add("a year later")
    ov = await service.overview()
    assert (ov.total, ov.auto_saved) == (31, 10)
    assert sum(n for _, n in ov.created) == 31
    assert len(ov.created) <= CHART_PERIODS and ov.period_days == 7
    assert ov.created[0] == (T0 // DAY * DAY, 7)
    tiers = {t.tier: t for t in ov.tiers}
    assert tiers[MemoryType.SEMANTIC].count == 6 and tiers[MemoryType.ARCHIVED].capacity is None
    empty = await service.overview(namespace="/home/dev/empty")
    assert (empty.total, empty.created) == (0, [])
