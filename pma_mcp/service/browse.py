"""Looking through a store without a query: its namespaces, a namespace page by page, and
an overview of its tiers, auto-saved memories, growth and GC pressure (the local browser).

Everything here is bounded whatever the namespace's size, and nothing counts an access.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from pma_mcp.core.models import MemoryType
from pma_mcp.core.namespaces import AUTO_SAVED_TAG
from pma_mcp.service.context import DAY, Context, bounded_int
from pma_mcp.service.gc import GarbageCollection

if TYPE_CHECKING:
    from pma_mcp.core.records import Browse, Overview, Page

MAX_PAGE = 200
OVERVIEW_GC_WINDOW = 200
"""The overview shows GC pressure over the next window of a bounded pass, not a full one."""
CHART_PERIODS = 60
"""The overview's chart has at most this many bars (periods of whole days)."""


class Browsing:
    def __init__(self, ctx: Context, gc: GarbageCollection) -> None:
        self._ctx = ctx
        self._gc = gc

    async def namespaces(self) -> list[str]:
        """Every namespace holding memories that this person may see (the local browser's
        picker): not another member's personal one."""
        return [n for n in await self._ctx.store.namespaces()
                if not self._ctx.settings.someone_elses(n)]

    async def count(self, *, namespace: str | None = None) -> int:
        """How many memories the namespace holds (all tiers)."""
        return await self._ctx.store.count(self._ctx.own(namespace))

    async def browse(
        self, where: Browse, *, before: int | None = None, limit: object = 50
    ) -> Page:
        """One page of `where.namespace`'s memories, newest first; nothing is touched."""
        from pma_mcp.core.records import Page  # records are built on first use (models)

        size = bounded_int("limit", limit, 1, MAX_PAGE)
        where = dataclasses.replace(where, namespace=self._ctx.own(where.namespace))
        found = await self._ctx.store.browse(where, before, size + 1)
        more = len(found) > size
        page = found[:size]
        return Page(memories=page, next_before=page[-1].seq if more and page else None)

    async def overview(self, *, namespace: str | None = None,
                       gc_window: int = OVERVIEW_GC_WINDOW) -> Overview:
        """Tier use against capacity, auto-saved count, memories per day and the changes the
        next bounded GC pass would make: all bounded, whatever the namespace's size."""
        from pma_mcp.core import collector  # only here and in GC, not on every reader's path
        from pma_mcp.core.records import Overview, TierUse

        store = self._ctx.store
        own = self._ctx.own(namespace)
        totals = await store.tier_tokens(own)
        tiers = [TierUse(tier=t, count=totals.get(t, (0, 0))[0], tokens=totals.get(t, (0, 0))[1],
                         capacity=collector.TIER_CAPACITY.get(t)) for t in MemoryType]
        plan = await self._gc.gc_preview(namespace=own, max_memories=gc_window)
        starts, days = await self._periods(own)
        counts = await store.created_counts(own, starts, days * DAY)
        return Overview(
            namespace=own,
            total=sum(t.count for t in tiers),
            tiers=tiers,
            auto_saved=await store.tagged_count(own, AUTO_SAVED_TAG),
            gc_window=gc_window,
            gc_changes=len(plan.changes()),
            created=list(zip(starts, counts, strict=True)),
            period_days=days,
        )

    async def _periods(self, namespace: str) -> tuple[list[float], int]:
        """Period starts covering the namespace's creation times in at most CHART_PERIODS
        periods of whole UTC days, and the days per period."""
        span = await self._ctx.store.created_range(namespace)
        if span is None:
            return [], 1
        first = span[0] // DAY * DAY
        days = int((span[1] - first) // DAY) + 1
        width = -(-days // CHART_PERIODS)
        return [first + i * width * DAY for i in range(-(-days // width))], width
