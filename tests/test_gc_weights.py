"""Ranking weights cannot destroy memories: the collector scores with its own weights.

PMA_WEIGHTS=1,0,0,0 is a valid weighting (rank on similarity alone). Before the collector had
its own weights, the next GC scored every memory 0 without a query, archived it, then deleted
it (2,684 memories in a time-true replay of the LoCoMo dev split).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import locomo
from pma_mcp.config import Settings, parse_weights
from pma_mcp.service import MemoryService
from tests.conftest import FakeClock

DEV_SPLIT = Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo_dev.json"

ACCEPTED = [
    "1,0,0,0", "0,1,0,0", "0,0,1,0", "0,0,0,1", "0.5,0,0.5,0", "0.9,0,0,0.1",
    "0.7,0.05,0.2,0.05", "0.4,0.3,0.2,0.1",
]


@pytest.mark.parametrize("raw", ACCEPTED)
async def test_gc_deletes_nothing_important_under_any_weighting(
    tmp_path: Path, clock: FakeClock, raw: str
) -> None:
    settings = Settings(db_path=tmp_path / "w.db", namespace="p", weights=parse_weights(raw))
    async with await MemoryService.open(settings, clock=clock) as service:
        for i in range(30):
            await service.add(f"decision {i}: keep the retry budget at {i} seconds",
                              importance=0.5 + (i % 5) / 10)
        for _ in range(6):  # a year of collections
            clock.advance(24 * 60)
            await service.gc_run()
        # Old and unimportant enough memories may go down to the archived tier (the seed's
        # rule); none is deleted.
        assert await service.count() == 30


@pytest.mark.skipif(not DEV_SPLIT.exists(), reason=f"LoCoMo dev split not at {DEV_SPLIT}")
@pytest.mark.parametrize("raw", ["1,0,0,0", "0,0,0,1", "0.5,0,0.5,0"])
async def test_time_true_replay_of_the_dev_split_keeps_every_memory(
    tmp_path: Path, raw: str
) -> None:
    conv = locomo.load(DEV_SPLIT, limit=1)[0]
    clock = locomo.Clock()
    settings = Settings(db_path=tmp_path / "tt.db", namespace="locomo",
                        weights=parse_weights(raw))
    async with await MemoryService.open(settings, clock=clock,
                                        merge_near_duplicates=False) as service:
        actions = await locomo.store_time_true(service, clock, conv)
        clock.now += 365 * 86_400.0
        await service.gc_run(namespace=conv.namespace)
        kept = await service.count(namespace=conv.namespace)
    assert "delete" not in actions
    assert kept == len({t.content for t in conv.turns})

