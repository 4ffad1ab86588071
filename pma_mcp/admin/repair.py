"""`pma-mcp doctor --repair`: salvage a damaged SQLite store into a new file, keeping the old.

The rows that can still be read (store/sqlite/salvage.py) are validated like an import and
written into a fresh store through the store itself, so the full-text index, labels and term
statistics are rebuilt rather than copied. The damaged file is copied aside first and never
written to.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

from pma_mcp.config import Settings
from pma_mcp.core import export_format
from pma_mcp.core.errors import InvalidInputError, StorageError
from pma_mcp.core.models import Memory
from pma_mcp.store import open_store
from pma_mcp.store.sqlite import db, salvage


@dataclass
class Salvage:
    """What a repair read, saved and lost; `kept` is the damaged file's copy."""

    kept: Path
    memories_saved: int = 0
    memories_expected: int | None = None
    memories_unreadable: int = 0
    lineage_saved: int = 0
    used_recover: bool = False
    notes: list[str] = field(default_factory=list)


async def repair(database: Path, *, use_sqlite_cli: bool = True) -> Salvage | None:
    """Replace `database` with a new store holding every memory that can still be read;
    None, and nothing touched, when it is healthy (servers may be writing to it: a healthy
    file moved aside would take their next writes with it)."""
    if not database.is_file():
        raise StorageError(f"{database} does not exist; there is nothing to repair")
    if await healthy(database):
        return None
    kept = salvage.keep_aside(database)
    done = Salvage(kept=kept, memories_expected=salvage.expected_count(kept))
    memories = _read_memories(kept, done)
    lineage = salvage.lineage_rows(kept)
    recovered = database.with_name(database.name + ".recovered")
    if use_sqlite_cli and salvage.recover(kept, recovered, done.notes):
        done.used_recover = True
        try:  # .recover reaches pages the b-tree lost: take its rows too (ids dedupe)
            memories += _read_memories(recovered, Salvage(kept=kept))
            more = salvage.lineage_rows(recovered)
            lineage = more if len(more) > len(lineage) else lineage
        finally:
            salvage.remove_store(recovered)
    fresh = database.with_name(database.name + ".repairing")
    salvage.remove_store(fresh)
    store = await open_store(Settings(db_path=fresh))
    try:
        done.memories_saved = await store.insert_many(memories, skip_existing=True)
        done.lineage_saved = await store.restore_lineage(lineage)
    finally:
        await store.close()
    for suffix in ("-wal", "-shm"):  # the old file's log must not be replayed into the new one
        with contextlib.suppress(FileNotFoundError):
            Path(f"{database}{suffix}").unlink()
    fresh.replace(database)
    db.clear_damage(str(database))
    return done


async def healthy(database: Path) -> bool:
    """Whether the store opens, passes SQLite's integrity check and agrees with its own
    index and statistics, with no damage recorded against it."""
    if db.damage_recorded(str(database)) is not None:
        return False
    try:
        store = await open_store(Settings(db_path=database))
    except StorageError:
        return False
    try:
        return (await store.integrity_check() == "ok"
                and (await store.check_consistency()).ok)
    except StorageError:
        return False
    finally:
        with contextlib.suppress(StorageError):
            await store.close()


def _read_memories(source: Path, done: Salvage) -> list[Memory]:
    """Every memory row that reads and validates (as an import would) from `source`."""
    memories: list[Memory] = []
    for index, record in enumerate(salvage.memory_records(source), 1):
        try:
            memories.append(export_format.from_record(record, index))
        except (InvalidInputError, ValueError, TypeError):
            done.memories_unreadable += 1
    return memories
