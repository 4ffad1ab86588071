"""GC applies its plan in short transactions: other writers get in between, a kill between
batches leaves a valid store, and the next run finishes the job."""

from __future__ import annotations

import asyncio
import math
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

from pma_mcp.config import Settings
from pma_mcp.core.budget import WordEstimate
from pma_mcp.core.models import Memory, MemoryType, content_hash, to_datetime
from pma_mcp.service import MemoryService
from pma_mcp.store.base import GCBatching
from pma_mcp.store.sqlite.store import SQLiteStore
from tests.conftest import PROJECT, FakeClock

REPO = Path(__file__).resolve().parents[1]


def _memory(text: str, now: float, importance: float = 0.2) -> Memory:
    return Memory(
        id=uuid.uuid4().hex, namespace=PROJECT, content=text,
        memory_type=MemoryType.EPISODIC, importance=importance,
        token_count=len(text.split()), created_at=to_datetime(now),
        accessed_at=to_datetime(now), content_hash=content_hash(text),
    )


def duplicate_pairs(n: int, now: float) -> list[Memory]:
    """`n` facts, each stored twice (once with a trailing period): n merges to make."""
    out = []
    for i in range(n):
        text = f"deploy note {i}: service alpha{i} talks to beta{i * 7} over port {9000 + i}"
        out += [_memory(text, now, 0.6), _memory(text + ".", now, 0.5)]
    return out


async def test_a_concurrent_writer_commits_between_gc_batches(
    service: MemoryService, settings: Settings, clock: FakeClock
) -> None:
    await service.store.insert_many(
        [_memory(f"low value note {i} about item{i}", clock.now) for i in range(60)],
        skip_existing=False,
    )
    clock.advance(30)  # every note now scores < 0.10: 60 archive changes
    plan = await service.gc_preview()
    changes = plan.changes()
    assert len(changes) == 60
    memories = {m.id: m for m in await service.store.namespace_memories(PROJECT)}
    batch = GCBatching(changes=10, seconds=60.0)

    gc_done = asyncio.Event()
    written: list[str] = []

    async def writer() -> None:
        async with await MemoryService.open(settings, counter=WordEstimate(),
                                            merge_near_duplicates=False) as other:
            i = 0
            while not gc_done.is_set():
                added = await other.add(f"concurrent remember {i}", namespace="/other")
                written.append(added.memory.id)
                i += 1
                await asyncio.sleep(0)

    task = asyncio.create_task(writer())
    await asyncio.sleep(0.2)  # the writer is running
    transactions = await service.store.apply_gc(changes, memories, clock.now, batch=batch)
    gc_done.set()
    await task

    assert transactions >= math.ceil(len(changes) / batch.changes)
    conn = sqlite3.connect(settings.db_path)
    try:
        events = conn.execute(
            "SELECT namespace = ? FROM lineage WHERE event = 'archive' OR namespace = ? "
            "ORDER BY id", ("/other", "/other"),
        ).fetchall()
    finally:
        conn.close()
    sequence = [bool(r[0]) for r in events]
    gc_positions = [i for i, other in enumerate(sequence) if not other]
    assert len(gc_positions) == 60
    # The writer's lineage rows sit between GC rows: it committed while the plan was applied.
    between = sum(sequence[gc_positions[0]:gc_positions[-1]])
    assert between >= 1, "no write got in while GC was applying its plan"
    assert (await service.store.check_consistency()).ok


def test_a_gc_killed_between_batches_leaves_a_valid_store(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    # More merges than one transaction may hold (GCBatching.changes), so the plan takes at
    # least two transactions however fast the machine is.
    pairs = 1_200

    async def build() -> None:
        repo = await SQLiteStore.open(str(db))
        try:
            await repo.insert_many(duplicate_pairs(pairs, time.time()), skip_existing=False)
        finally:
            await repo.close()

    asyncio.run(build())
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.reliability.gc_runner", "--db", str(db),
         "--namespace", PROJECT],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        reader = sqlite3.connect(db, timeout=30)
        deadline = time.monotonic() + 120
        merged = 0
        while merged == 0 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
            merged = reader.execute(
                "SELECT count(*) FROM lineage WHERE event = 'merge' AND reason LIKE 'merged%'"
            ).fetchone()[0]
        # Hold the write lock before the kill: the GC cannot commit another batch in between.
        reader.execute("BEGIN IMMEDIATE")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        reader.rollback()
        reader.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert merged > 0, proc.stderr.read() if proc.stderr else ""

    async def check() -> None:
        async with await MemoryService.open(Settings(db_path=db, namespace=PROJECT),
                                            counter=WordEstimate()) as service:
            assert (await service.store.check_consistency()).ok
            assert await service.store.integrity_check() == "ok"
            left = await service.store.count(PROJECT)
            assert pairs < left < 2 * pairs, "the kill did not land mid-run"
            # Every merge that was applied is whole: the survivor absorbed the copy.
            done = 2 * pairs - left
            conn = sqlite3.connect(db)
            try:
                events = conn.execute(
                    "SELECT count(*) FROM lineage WHERE event = 'merge'").fetchone()[0]
            finally:
                conn.close()
            assert events == 2 * done
            rest = await service.gc_run()
            assert rest.merged == left - pairs
            assert await service.store.count(PROJECT) == pairs
            assert (await service.store.check_consistency()).ok

    asyncio.run(check())
