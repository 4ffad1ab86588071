"""Recall order with a query: relevance first, importance/recency/access among comparable ones.

The composite (what results show, what GC uses) stays the seed's; the order is
`scoring.relevance_rank`. These pin both halves of the rule, through the real service.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from pma_mcp.config import Settings
from pma_mcp.core.models import ScoreBreakdown
from pma_mcp.core.scoring import Weights, relevance_rank
from pma_mcp.service import MemoryService
from tests.conftest import FakeClock


@pytest.fixture
def settings(store_settings: Settings) -> Settings:
    """Every test here that opens a store runs on each backend (tests/backends.py)."""
    return store_settings

ANSWER = "Melanie: I painted a sunrise over the lake last summer, it hangs in the kitchen"
LOOSE = "Caroline: what a lovely summer, we went to the lake again"


async def _ids(service: MemoryService, query: str) -> list[str]:
    return [r.memory.content for r in await service.search(query, limit=5, touch=False)]


async def test_a_fresh_weak_match_does_not_outrank_an_old_clear_answer(
    service: MemoryService, clock: FakeClock
) -> None:
    await service.add(ANSWER, importance=0.5)
    clock.advance(24 * 90)  # the answer is three months old
    await service.add(LOOSE, importance=0.9)
    clock.advance(1 / 60)  # asked a minute after the loosely related turn was saved
    found = await service.search("when did Melanie paint the sunrise over the lake", limit=2)
    assert [r.memory.content for r in found] == [ANSWER, LOOSE]
    # ...although the fresh, important one has the higher composite, which is what is shown.
    assert found[1].score > found[0].score


@pytest.mark.parametrize("edge", ["newer", "more important", "more used"])
async def test_of_two_equally_relevant_memories_context_decides(
    service: MemoryService, clock: FakeClock, edge: str
) -> None:
    first = await service.add("deploy the billing service with blue green rollout, step one",
                              importance=0.5)
    if edge == "newer":
        clock.advance(2)
    second = await service.add("deploy the billing service with blue green rollout, step two",
                               importance=0.9 if edge == "more important" else 0.5)
    favoured = second.memory.id
    if edge == "more used":
        for _ in range(5):
            await service.search("step one", limit=1)
        favoured = first.memory.id
    clock.advance(1)
    found = await service.search("billing service blue green rollout deploy", limit=3,
                                 touch=False)
    sims = {round(r.breakdown.semantic_similarity, 6) for r in found}
    assert len(found) == 2 and len(sims) == 1, "the memories must be equally relevant"
    assert found[0].memory.id == favoured


def _parts(semantic: float, importance: float, recency: float, access: float) -> ScoreBreakdown:
    return ScoreBreakdown(semantic_similarity=semantic, importance=importance, recency=recency,
                          access_frequency=access, composite=0.0, age_hours=0.0)


def test_relevance_rank_lift_is_bounded_and_proportional() -> None:
    w = Weights()
    best_context = _parts(0.5, 1.0, 1.0, 1.0)
    no_context = _parts(0.6, 0.0, 0.0, 0.0)
    # Everything in its favour cannot carry a memory past one ≥ 15% more similar.
    assert relevance_rank(best_context, w) < relevance_rank(no_context, w)
    # A close one (within a few percent) is passed by the fresher, more important one.
    assert relevance_rank(_parts(0.58, 0.8, 1.0, 0.2), w) > relevance_rank(
        _parts(0.6, 0.5, 0.0, 0.0), w)
    assert relevance_rank(_parts(0.0, 1.0, 1.0, 1.0), w) == 0.0
    # Similarity alone when the weights say so.
    only = Weights(1.0, 0.0, 0.0, 0.0)
    assert relevance_rank(best_context, only) == pytest.approx(0.5)


async def test_query_less_requests_still_rank_by_composite(
    service: MemoryService, clock: FakeClock
) -> None:
    await service.add("an old important rule", importance=0.9)
    clock.advance(48)
    await service.add("a fresh note", importance=0.3)
    found = await service.search("", limit=2, touch=False)
    assert [r.score for r in found] == sorted((r.score for r in found), reverse=True)


async def test_similarity_only_weights_rank_on_similarity(
    settings: Settings, clock: FakeClock
) -> None:
    settings = replace(settings, namespace="p", weights=Weights(1.0, 0.0, 0.0, 0.0))
    async with await MemoryService.open(settings, clock=clock) as service:
        await service.add(ANSWER)
        clock.advance(24 * 30)
        await service.add(LOOSE)
        found = await service.search("Melanie painted a sunrise", limit=2)
        sims = [r.breakdown.semantic_similarity for r in found]
        assert sims == sorted(sims, reverse=True)
