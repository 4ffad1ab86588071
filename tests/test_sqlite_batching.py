"""SQLite writes send statements that return nothing in batches (store/sqlite/backend.py
SqliteTx): a write must still read its own statements, and a failing statement anywhere in
the batch must roll the whole write back with the store's error, on a real file."""

from __future__ import annotations

from pathlib import Path

import pytest

from pma_mcp.core.errors import StorageError
from pma_mcp.store.seam import Tx
from pma_mcp.store.sqlite import db
from pma_mcp.store.sqlite.backend import SqliteBackend
from pma_mcp.store.sqlite.store import SQLiteStore

LINEAGE = ("INSERT INTO lineage (memory_id, namespace, event, at, reason, last_at) "
           "VALUES (?, 'ns', 'accessed', 1.0, ?, 1.0)")


async def _backend(tmp_path: Path) -> SqliteBackend:
    path = str(tmp_path / "memory.db")
    await (await SQLiteStore.open(path)).close()  # created and migrated
    return SqliteBackend(await db.connect(path), db.BUSY_TIMEOUT_MS)


async def _events(backend: SqliteBackend, memory_id: str) -> int:
    return int(await backend.reads.fetchval(
        "SELECT count(*) FROM lineage WHERE memory_id = ?", memory_id))


async def test_a_write_reads_the_statements_it_queued(tmp_path: Path) -> None:
    backend = await _backend(tmp_path)

    async def body(tx: Tx) -> int:
        await tx.execute(LINEAGE, "m1", "first")
        await tx.executemany(LINEAGE, [("m1", "second"), ("m1", "third")])
        return int(await tx.fetchval("SELECT count(*) FROM lineage WHERE memory_id = ?", "m1"))

    try:
        assert await backend.write(["ns"], body) == 3
        assert await _events(backend, "m1") == 3
    finally:
        await backend.close()


async def test_a_failing_queued_statement_rolls_the_whole_write_back(tmp_path: Path) -> None:
    backend = await _backend(tmp_path)

    async def body(tx: Tx) -> None:
        await tx.execute(LINEAGE, "m2", "kept only if the write commits")
        await tx.execute("INSERT INTO namespace_stats (namespace, docs, length) "
                         "VALUES ('ns', -1, NULL)")  # NOT NULL: fails when the batch is sent

    try:
        with pytest.raises(StorageError):
            await backend.write(["ns"], body)
        assert await _events(backend, "m2") == 0

        async def after(tx: Tx) -> None:  # the connection is usable, not left in a transaction
            await tx.execute(LINEAGE, "m3", "next write")

        await backend.write(["ns"], after)
        assert await _events(backend, "m3") == 1
    finally:
        await backend.close()


async def test_insert_fitting_skips_rows_that_clash_and_keeps_the_rest(tmp_path: Path) -> None:
    backend = await _backend(tmp_path)
    sql = "INSERT INTO term_df (term, df) VALUES (?, ?)"

    async def body(tx: Tx) -> int:
        await tx.execute(sql, "alpha", 1)  # queued: sent before the rows below
        return await tx.insert_fitting(sql, [("alpha", 2), ("beta", 3), ("beta", 4)])

    try:
        assert await backend.write(["ns"], body) == 1
        found = await backend.reads.fetch("SELECT term, df FROM term_df "
                                          "WHERE term IN ('alpha', 'beta') ORDER BY term")
        assert [tuple(r) for r in found] == [("alpha", 1), ("beta", 3)]
    finally:
        await backend.close()
