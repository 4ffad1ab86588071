"""Synthetic but realistic-shaped memory text for latency benchmarks (not for quality).

Words follow a Zipf distribution over a fixed pseudo-vocabulary, so common words are shared by
many memories (long posting lists, as in real notes) and rare words by few. Deterministic.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from pma_mcp.config import Settings
from pma_mcp.core.budget import WordEstimate
from pma_mcp.core.models import Memory, MemoryType, content_hash
from pma_mcp.store import open_store

VOCABULARY = 20_000
_SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "qu", "dri",
              "sto", "ble", "xen", "gar", "fil", "mon", "tep", "wax"]


def _word(i: int) -> str:
    parts = []
    n = i + 1
    while n:
        n, r = divmod(n, len(_SYLLABLES))
        parts.append(_SYLLABLES[r])
    return "".join(parts)


WORDS = [_word(i) for i in range(VOCABULARY)]
_WEIGHTS = [1.0 / (rank + 1) ** 1.07 for rank in range(VOCABULARY)]

BATCH = 5_000


async def store(path: str, memories: Iterable[Memory], batch_size: int = BATCH) -> None:
    """Bulk-insert `memories` into the SQLite store at `path` (see `store_in`)."""
    await store_in(Settings(db_path=Path(path)), memories, batch_size)


async def store_in(settings: Settings, memories: Iterable[Memory],
                   batch_size: int = BATCH) -> None:
    """Bulk-insert `memories` into the store `settings` open, `batch_size` per transaction
    (the real index, neighbour context and term counts; repeated content is skipped)."""
    repo = await open_store(settings)
    try:
        batch: list[Memory] = []
        for memory in memories:
            batch.append(memory)
            if len(batch) == batch_size:
                await repo.insert_many(batch, skip_existing=True)
                batch = []
        if batch:
            await repo.insert_many(batch, skip_existing=True)
    finally:
        await repo.close()


class Corpus:
    def __init__(self, seed: int = 7) -> None:
        self._rng = random.Random(seed)

    def sentence(self, low: int = 8, high: int = 40) -> str:
        n = self._rng.randint(low, high)
        return " ".join(self._rng.choices(WORDS, weights=_WEIGHTS, k=n))

    def query(self) -> str:
        return self.sentence(3, 6)

    def memories(self, n: int, namespace: str, now: float) -> Iterator[Memory]:
        counter = WordEstimate()
        tiers = list(MemoryType)
        for i in range(n):
            text = f"{self.sentence()} #{i}"
            when = datetime.fromtimestamp(now - self._rng.uniform(0, 90 * 86400), tz=UTC)
            yield Memory(
                id=uuid.UUID(int=self._rng.getrandbits(128)).hex, namespace=namespace,
                content=text, memory_type=tiers[i % 4],
                importance=round(self._rng.random(), 3),
                token_count=counter.count(text), access_count=self._rng.randint(0, 5),
                created_at=when, accessed_at=when, session_id=f"s{i // 50}",
                content_hash=content_hash(text),
            )
