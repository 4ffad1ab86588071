"""Schema versioning: fresh files migrate once, newer files are refused, opens race safely."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from pma_mcp.core.errors import StorageError
from pma_mcp.store.sqlite import db
from pma_mcp.store.sqlite.schema import MIGRATIONS, SCHEMA_VERSION
from pma_mcp.store.sqlite.store import SQLiteStore
from tests.stores import sqlite_store


async def test_fresh_file_gets_every_migration(tmp_path: Path) -> None:
    repo = await SQLiteStore.open(str(tmp_path / "new.db"))
    try:
        assert await repo.schema_version() == SCHEMA_VERSION == MIGRATIONS[-1].version
    finally:
        await repo.close()
    with sqlite3.connect(tmp_path / "new.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert {"memories", "memory_labels", "memory_fts", "lineage"} <= tables


async def test_a_newer_schema_is_refused_with_advice(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StorageError, match="upgrade pma-mcp"):
        await SQLiteStore.open(str(path))


async def test_a_failing_migration_leaves_the_file_untouched(tmp_path: Path) -> None:
    conn = await db.connect(str(tmp_path / "x.db"))
    try:
        steps = (db.Migration(1, "ok", ("CREATE TABLE a (x)",)),
                 db.Migration(2, "broken", ("CREATE TABLE b (",)))
        with pytest.raises(sqlite3.OperationalError):
            await db.migrate(conn, steps)
        assert await db.schema_version(conn) == 0
        found = await conn.execute_fetchall("SELECT count(*) FROM sqlite_master")
        assert [tuple(row) for row in found] == [(0,)]
    finally:
        await conn.close()


async def test_concurrent_opens_migrate_exactly_once(tmp_path: Path) -> None:
    path = str(tmp_path / "race.db")
    repos = await asyncio.gather(*(SQLiteStore.open(path) for _ in range(6)))
    try:
        assert {await r.schema_version() for r in repos} == {SCHEMA_VERSION}
    finally:
        for r in repos:
            await r.close()


async def test_unwritable_location_is_a_storage_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StorageError, match="PMA_DB_PATH"):
        await SQLiteStore.open(str(blocker / "sub" / "db.sqlite"))


async def test_a_file_that_is_not_sqlite_is_a_storage_error(tmp_path: Path) -> None:
    path = tmp_path / "garbage.db"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StorageError):
        await SQLiteStore.open(str(path))


async def test_row_counter_follows_inserts_deletes_and_imports(tmp_path: Path) -> None:
    from pma_mcp.config import Settings
    from pma_mcp.core.budget import WordEstimate
    from pma_mcp.service import MemoryService

    settings = Settings(db_path=tmp_path / "c.db", namespace="ns")
    async with await MemoryService.open(settings, counter=WordEstimate()) as svc:
        ids = [(await svc.add(f"memory {i}")).memory.id for i in range(5)]
        await svc.add("memory 0")  # a duplicate is not a new row
        await svc.delete(ids[0])
        doc = await svc.export()
        for n, record in enumerate(doc["memories"]):
            record["id"] = f"{n:032x}"
        await svc.import_document(doc, namespace="other")
        stats = await sqlite_store(svc).term_stats([])
        assert stats.total_docs == await svc.store.count() == 8


async def test_term_counts_follow_writes_deletes_and_merges(tmp_path: Path) -> None:
    from pma_mcp.config import Settings
    from pma_mcp.core.budget import WordEstimate
    from pma_mcp.service import MemoryService

    settings = Settings(db_path=tmp_path / "df.db", namespace="ns")
    async with await MemoryService.open(settings, counter=WordEstimate()) as svc:
        a = (await svc.add("Running the exporter nightly", session_id="s")).memory
        await svc.add("The exporter runs again", session_id="s")
        await svc.add("The user prefers dark mode in every editor.")
        await svc.add("The user prefers dark mode in every editor")
        stats = await sqlite_store(svc).term_stats(["export", "run", "editor"])
        assert stats.content_freq == {"export": 2, "run": 2, "editor": 2}
        await svc.delete(a.id)
        await svc.gc_run()  # merges the two editor memories
        stats = await sqlite_store(svc).term_stats(["export", "run", "editor"])
        assert stats.content_freq == {"export": 1, "run": 1, "editor": 1}
        assert (await svc.store.check_consistency()).ok


async def test_cancelling_a_write_that_waits_for_the_lock_releases_it(tmp_path: Path) -> None:
    """A tool call cancelled while its BEGIN waits must not leave the file locked."""
    from pma_mcp.config import Settings
    from pma_mcp.core.budget import WordEstimate
    from pma_mcp.service import MemoryService

    settings = Settings(db_path=tmp_path / "cancel.db", namespace="ns")
    async with await MemoryService.open(settings, counter=WordEstimate()) as svc:
        blocker = sqlite3.connect(settings.db_path, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")
        task = asyncio.create_task(svc.add("waits for the lock"))
        await asyncio.sleep(0.3)
        task.cancel()
        await asyncio.sleep(0.1)
        blocker.execute("ROLLBACK")  # the cancelled BEGIN now gets the lock on its thread
        with pytest.raises(asyncio.CancelledError):
            await task
        stored = await svc.add("written after the cancelled call")  # queued behind it
        assert not stored.deduplicated
        other = sqlite3.connect(settings.db_path, timeout=2, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # the lock is free again
        other.execute("ROLLBACK")
        other.close()
        blocker.close()
        assert await svc.store.count() == 1
