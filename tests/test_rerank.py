"""The second pass over recall's pool (core/rerank.py), through the real service on each
backend: a when-question prefers the turn that says when, a list question spreads over
sessions, and a store of one memory still finds it."""

from __future__ import annotations

import pytest

from pma_mcp.config import Settings
from pma_mcp.service import MemoryService


@pytest.fixture
def settings(store_settings: Settings) -> Settings:
    return store_settings


async def _contents(service: MemoryService, query: str, limit: int) -> list[str]:
    found = await service.search(query, limit=limit, touch=False)
    return [r.memory.content for r in found]


async def test_a_when_question_prefers_the_turn_with_a_time_expression(
    service: MemoryService,
) -> None:
    dated = "Jon: I opened my dance studio last Friday"
    undated = "Jon: I opened my dance studio with friends"
    await service.add(dated, session_id="s1")
    await service.add(undated, session_id="s2")  # newer: first among equals without the pass
    assert (await _contents(service, "When did Jon open his dance studio?", 2))[0] == dated
    assert (await _contents(service, "How did Jon open his dance studio?", 2))[0] == undated


async def test_a_list_question_reaches_a_second_session(service: MemoryService) -> None:
    crowd = ["Tim: we hiked the ridge trail to the old fire tower, a long trail hike",
             "Tim: the trail hike by the fire tower was steep, the best hike this year",
             "Tim: after the fire tower trail hike we camped near the trail head"]
    other = "Tim: in spring I hiked a coastal trail in Oregon"
    await service.add(other, session_id="s1")
    for text in crowd:
        await service.add(text, session_id="s2")
    assert other not in await _contents(service, "Did Tim hike a trail?", 3)
    assert other in await _contents(service, "Which trails has Tim hiked?", 3)


async def test_one_memory_is_found_for_a_follow_up(service: MemoryService) -> None:
    await service.add("Deploys go through the blue green pipeline on Fridays", session_id="s")
    for query in ("when do deploys happen?", "which pipelines do we use?", "pipeline"):
        assert await _contents(service, query, 5) == [
            "Deploys go through the blue green pipeline on Fridays"]
