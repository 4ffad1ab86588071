"""`SQLiteStore.tier_facts_by_score` reads the best-scored memories through bounds instead of
scoring the whole namespace; its order must be exactly the brute-force order of the query-less
score."""

from __future__ import annotations

import random
import uuid
from pathlib import Path

from pma_mcp.core import collector, scoring
from pma_mcp.core.models import Memory, MemoryType, content_hash, to_datetime
from pma_mcp.store.sqlite.store import SQLiteStore

NOW = 1_800_000_000.0
TIERS = (MemoryType.WORKING, MemoryType.EPISODIC, MemoryType.SEMANTIC, MemoryType.ARCHIVED)


def memories(n: int, namespace: str, seed: int) -> list[Memory]:
    """Fresh and old, rarely and often used, with tied importances and ages: memories whose
    recency or access lifts them past more important ones."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        text = f"note {namespace} {i} {uuid.UUID(int=rng.getrandbits(128)).hex}"
        age_hours = rng.choice([0.0, 1.0, 5.0, 47.9, 48.1, 100.0, rng.uniform(0, 500)])
        created = to_datetime(NOW - age_hours * 3600.0)
        out.append(Memory(
            id=uuid.UUID(int=rng.getrandbits(128)).hex, namespace=namespace, content=text,
            memory_type=rng.choice(TIERS), importance=rng.choice([0.1, 0.5, 0.9, rng.random()]),
            token_count=5, access_count=rng.choice([0, 0, 1, 3, 40, rng.randrange(10_000)]),
            created_at=created, accessed_at=created, content_hash=content_hash(text)))
    return out


def brute_force(stored: list[Memory], at_least: float, archived_at_least: float) -> list[int]:
    scored = []
    for m in stored:
        if m.superseded_by is not None:
            continue
        value = scoring.breakdown(m, NOW, collector.WEIGHTS).composite
        if value >= at_least and (m.memory_type != MemoryType.ARCHIVED
                                  or value >= archived_at_least):
            scored.append((value, m.seq))
    return [seq for _, seq in sorted(scored, reverse=True)]


async def test_bounded_read_is_the_brute_force_order(tmp_path: Path) -> None:
    repo = await SQLiteStore.open(str(tmp_path / "m.db"))
    try:
        await repo.insert_many(memories(3_000, "/p", 1), skip_existing=False)
        await repo.insert_many(memories(500, "/other", 2), skip_existing=False)
        stored = await repo.namespace_memories("/p")
        for at_least, archived in ((0.0, 0.0), (0.2, 0.45), (0.35, 0.45), (0.55, 0.6)):
            read = [m.seq async for m in repo.tier_facts_by_score(
                "/p", NOW, collector.WEIGHTS, at_least=at_least, archived_at_least=archived)]
            expected = brute_force(stored, at_least, archived)
            assert read == expected, (at_least, len(read), len(expected))
            assert len(expected) > 0
    finally:
        await repo.close()
