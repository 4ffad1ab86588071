"""The calls of recall and remember run whole on the SQLite connection's thread, in one trip
(store/sqlite/store.py): on that thread, never inside another call's transaction, and whole
or not at all when their caller is cancelled. Real files, the real threaded connection."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any

from pma_mcp.config import Settings
from pma_mcp.core import similar
from pma_mcp.core.budget import WordEstimate
from pma_mcp.core.models import Scope
from pma_mcp.service import MemoryService
from tests.test_gc_bounded_read import memories

NAMESPACE = "/home/dev/acme-api"


async def _service(tmp_path: Path, *, blocking: bool = False) -> MemoryService:
    settings = Settings(db_path=tmp_path / "store.db", namespace=NAMESPACE)
    return await MemoryService.open(settings, counter=WordEstimate(), blocking=blocking)


async def test_a_call_runs_on_the_connections_thread_and_a_blocking_store_on_the_callers(
    tmp_path: Path,
) -> None:
    seen: list[int] = []

    def choose(doc_freq: Mapping[str, int]) -> Sequence[str]:
        seen.append(threading.get_ident())
        return similar.probe(doc_freq)

    for blocking in (False, True):
        service = await _service(tmp_path, blocking=blocking)
        try:
            await service.add("The export job retries five times with jitter.")
            await service.add("The export job retries after a timeout of ten seconds.")
            found = await service.store.sharing_candidates(
                "export job retries", Scope(namespaces=(NAMESPACE,)), 10, choose)
            assert len(found) == 2
        finally:
            await service.close()
    on_thread, on_caller = seen
    assert on_thread != threading.get_ident()
    assert on_caller == threading.get_ident()


async def test_one_trip_calls_and_step_by_step_writes_never_interleave(tmp_path: Path) -> None:
    """Parallel calls on one connection: remembers and recalls (one trip each) beside an
    import and GC runs, which go statement by statement, holding the write lock between
    their trips."""
    service = await _service(tmp_path)
    try:
        texts = [f"Decision {i}: the payments webhook uses queue {i} with {i % 3} retries."
                 for i in range(40)]

        async def remember(i: int) -> None:
            await service.add(texts[i], importance=0.3 + (i % 5) / 10)

        async def recall(i: int) -> None:
            await service.search(f"payments webhook queue {i}", limit=5)

        imported = service.store.insert_many(memories(300, NAMESPACE, 1), skip_existing=False)
        jobs: list[Coroutine[Any, Any, object]] = [remember(i) for i in range(40)]
        jobs += [recall(i) for i in range(40)]
        jobs += [imported, service.gc_run(), service.gc_run()]
        await asyncio.gather(*jobs)
        report = await service.store.check_consistency()
        assert report.memories == 340  # nothing lost: every text is new
        assert not (report.missing_in_fts or report.orphaned_fts or report.mismatched)
    finally:
        await service.close()


async def test_a_cancelled_remember_is_stored_whole_or_not_at_all(tmp_path: Path) -> None:
    service = await _service(tmp_path)
    try:
        for i in range(30):
            task = asyncio.ensure_future(service.add(f"Fact {i}: the cache holds {i} pages."))
            await asyncio.sleep(0)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        kept = await service.count()
        assert 0 <= kept <= 30
        report = await service.store.check_consistency()
        assert report.memories == kept
        assert not (report.missing_in_fts or report.orphaned_fts or report.mismatched)
        result = await service.add("After the cancellations the store still takes writes.")
        assert not result.deduplicated
        assert await service.count() == kept + 1
    finally:
        await service.close()
