"""Garbage collection of a namespace: the plan (`gc_preview`), applying exactly it (`gc_run`),
the statistics that report its pressure, and the decision one memory would get (`predict`).

A full plan reads the whole namespace as light rows; a bounded one (`max_memories`) the next
window of a rotation through it. The rule itself is core/collector.py.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from pma_mcp.core.models import Memory, MemoryType, Planned
from pma_mcp.core.scoring import score as composite_score
from pma_mcp.service.context import Context

if TYPE_CHECKING:
    from pma_mcp.core.records import GCDecision, GCPreview, GCResult, MergePair, Stats

_Window = tuple[Sequence[Planned], Mapping[int, bytes] | None]


@contextlib.contextmanager
def _cycle_collection_paused() -> Iterator[None]:
    """Pause CPython's cycle collector while a GC plan is made.

    A whole-namespace plan makes ~10 objects per memory, a million at 100k memories, and the
    collector's full passes over the growing heap then cost ~1.5 s of a 4 s plan. A plan's
    objects form no cycles (reference counting frees them), so nothing piles up meanwhile.
    Re-enabled only by whoever paused it (plans may overlap on one server)."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


class GarbageCollection:
    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    async def gc_preview(
        self, *, namespace: str | None = None, max_memories: int | None = None
    ) -> GCPreview:
        return await self._plan(self._ctx.own(namespace), self._ctx.clock(), max_memories)

    async def gc_run(
        self, *, namespace: str | None = None, max_memories: int | None = None
    ) -> GCResult:
        """Compute the plan `gc_preview` shows for this instant and apply exactly it."""
        from pma_mcp.core.records import GCResult  # records are built on first use (models)

        own = self._ctx.own(namespace)
        now = self._ctx.clock()
        window = await self._window(own, max_memories)
        plan = await self._plan(own, now, max_memories, window)
        memories = window[0]
        changes, by_id = await self._changed_memories(plan.changes(), memories)
        cursor = (own, memories[-1].seq) if max_memories is not None and memories else None
        await self._ctx.store.apply_gc(changes, by_id, now, cursor=cursor)
        return GCResult(
            namespace=own,
            promoted=len(plan.to_promote),
            demoted=len(plan.to_demote),
            archived=len(plan.to_archive),
            deleted=len(plan.to_delete),
            merged=len(plan.to_merge),
            kept=len(plan.to_keep),
            token_delta=plan.token_delta,
            decisions=changes,
            summary=plan.summary,
        )

    async def stats(self, *, namespace: str | None = None) -> Stats:
        own = self._ctx.own(namespace)
        now = self._ctx.clock()
        with _cycle_collection_paused():  # 100k rows and a plan: see there
            return await self._stats(own, now)

    async def _stats(self, own: str, now: float) -> Stats:
        from pma_mcp.core import collector  # only GC needs it, not every reader (hooks)
        from pma_mcp.core.records import Stats, TierStats

        memories = await self._ctx.store.gc_facts(own)
        weights = self._ctx.settings.weights
        by_tier = {tier: TierStats() for tier in MemoryType}
        total_score = 0.0
        for memory in memories:
            score = composite_score(memory.importance, memory.created_epoch,
                                    memory.access_count, now, weights).composite
            tier = by_tier[memory.memory_type]
            tier.count += 1
            tier.tokens += memory.token_count
            tier.avg_score += score
            total_score += score
        for tier in by_tier.values():
            tier.avg_score = tier.avg_score / tier.count if tier.count else 0.0
        plan = collector.plan(own, memories, now, collector.WEIGHTS)
        return Stats(
            namespace=own,
            total=len(memories),
            total_tokens=sum(t.tokens for t in by_tier.values()),
            by_tier=by_tier,
            gc_pressure=len(plan.changes()),
            avg_composite_score=total_score / len(memories) if memories else 0.0,
        )

    async def predict(self, memory: Memory, now: float) -> GCDecision:
        """The decision a full GC run at `now` makes for `memory`, from the memories that
        score higher and its own near-duplicates, never the whole namespace (see
        collector.Prediction and consolidate.merge_of)."""
        from pma_mcp.core import collector  # only GC needs it, not every reader (hooks)

        weights = collector.WEIGHTS  # never PMA_WEIGHTS: see collector
        prediction = collector.Prediction(memory, now, weights)
        store = self._ctx.store
        if not prediction.settled:
            ranked = store.tier_facts_by_score(
                memory.namespace, now, weights,
                at_least=prediction.score.composite,
                archived_at_least=collector.PROMOTION_THRESHOLD,
            )
            async for other in ranked:
                if prediction.higher(other):
                    break
            await ranked.aclose()
        merge = None
        if self._ctx.merge:
            from pma_mcp.service import consolidate

            merge = await consolidate.merge_of(
                store, memory, lambda m: collector.gc_score(m, now, weights).composite)
        return prediction.decision(merge)

    async def _window(self, namespace: str, max_memories: int | None) -> _Window:
        """All memories (as the lighter GCFacts, with their term sequences if near-duplicates
        are merged), or for a bounded run the next window of a rotation through them."""
        store = self._ctx.store
        if max_memories is not None:
            return list(await store.gc_window(namespace, max_memories)), None
        if self._ctx.merge:
            facts, sequences = await store.gc_facts_and_sequences(namespace)
            return list(facts), sequences
        return list(await store.gc_facts(namespace)), None

    async def _changed_memories(
        self, changes: list[GCDecision], planned: Sequence[Planned]
    ) -> tuple[list[GCDecision], dict[str, Memory]]:
        """The full memories a plan's changes touch (it was made from lighter rows), and the
        changes whose memories still exist: one gone since the plan's read is skipped, as
        apply_gc skips a step on a memory changed since."""
        seq_of = {m.id: m.seq for m in planned}
        wanted = sorted({seq_of[i] for d in changes for i in (d.memory_id, d.merge_into)
                         if i is not None})
        found = await self._ctx.store.memories_by_seq(wanted)
        by_id = {m.id: m for m in found.values()}
        kept = [d for d in changes
                if d.memory_id in by_id and (d.merge_into is None or d.merge_into in by_id)]
        return kept, by_id

    async def _plan(
        self, namespace: str, now: float, max_memories: int | None = None,
        window: _Window | None = None,
    ) -> GCPreview:
        with _cycle_collection_paused():
            return await self._plan_paused(namespace, now, max_memories, window)

    async def _plan_paused(
        self, namespace: str, now: float, max_memories: int | None, window: _Window | None
    ) -> GCPreview:
        from pma_mcp.core import collector  # only GC needs it, not every reader (hooks)

        memories, vectors = window or await self._window(namespace, max_memories)
        weights = collector.WEIGHTS  # never PMA_WEIGHTS: see collector
        outside: dict[MemoryType, int] = {}
        if max_memories is not None:
            totals = await self._ctx.store.tier_tokens(namespace)
            for tier, (_, tokens) in totals.items():
                outside[tier] = tokens
            for memory in memories:  # totals were read after the window: a tier may be new
                outside[memory.memory_type] = (
                    outside.get(memory.memory_type, 0) - memory.token_count
                )
        merges: list[MergePair] = []
        if self._ctx.merge:
            from pma_mcp.service import consolidate

            merges = await consolidate.near_duplicates(
                self._ctx.store, memories,
                lambda m: collector.gc_score(m, now, weights).composite, vectors)
        return collector.plan(namespace, memories, now, weights, merges=merges,
                              outside_tokens=outside)
