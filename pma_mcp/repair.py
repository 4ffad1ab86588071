"""`pma-mcp doctor --repair`: salvage a damaged store into a new file, keeping the old one.

Python's sqlite3 has no `.recover`. When the sqlite3 command-line tool is installed its
`.recover` runs first (it reads pages the b-trees no longer reach); either way the rows are
then read table by table, a row at a time where a scan fails, validated like an import, and
written into a fresh store through the repository, so the full-text index, labels and term
statistics are rebuilt rather than copied. The damaged file (with its -wal) is copied aside
before anything else and never written to.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pma_mcp import transfer
from pma_mcp.errors import InvalidInput, StorageError
from pma_mcp.models import Memory
from pma_mcp.store.sqlite import db
from pma_mcp.store.sqlite.repository import SQLiteStore

MEMORY_COLUMNS = (
    "id, namespace, content, memory_type, importance, tags, linked_entities, token_count, "
    "access_count, created_at, accessed_at, metadata, session_id, superseded_by"
)
LINEAGE_COLUMNS = (
    "memory_id, namespace, event, at, from_tier, to_tier, score, reason, count, last_at"
)
RECOVER_TIMEOUT_S = 600


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


async def repair(database: Path, *, use_sqlite_cli: bool = True) -> Salvage:
    """Replace `database` with a new store holding every memory that can still be read."""
    if not database.is_file():
        raise StorageError(f"{database} does not exist; there is nothing to repair")
    kept = _keep_aside(database)
    salvage = Salvage(kept=kept)
    salvage.memories_expected = _expected_count(kept)
    memories = _read_memories(kept, salvage)
    lineage = list(_read_rows(kept, "lineage", LINEAGE_COLUMNS))
    recovered = database.with_name(database.name + ".recovered")
    if use_sqlite_cli and shutil.which("sqlite3") and _recover(kept, recovered, salvage):
        try:  # .recover reaches pages the b-tree lost: take its rows too (ids dedupe)
            memories += _read_memories(recovered, Salvage(kept=kept))
            more = list(_read_rows(recovered, "lineage", LINEAGE_COLUMNS))
            lineage = more if len(more) > len(lineage) else lineage
        finally:
            _remove_store(recovered)
    fresh = database.with_name(database.name + ".repairing")
    _remove_store(fresh)
    repo = await SQLiteStore.open(str(fresh))
    try:
        salvage.memories_saved = await repo.insert_many(memories, skip_existing=True)
        salvage.lineage_saved = await repo.restore_lineage(lineage)
    finally:
        await repo.close()
    for suffix in ("-wal", "-shm"):  # the old file's log must not be replayed into the new one
        with contextlib.suppress(FileNotFoundError):
            Path(f"{database}{suffix}").unlink()
    fresh.replace(database)
    db.clear_damage(str(database))
    return salvage


def _keep_aside(database: Path) -> Path:
    """Copy the damaged file and its -wal beside it, under a name with the time."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    kept = database.with_name(f"{database.name}.damaged-{stamp}")
    shutil.copy2(database, kept)
    wal = Path(f"{database}-wal")
    if wal.exists():
        shutil.copy2(wal, f"{kept}-wal")
    return kept


def _remove_store(path: Path) -> None:
    for candidate in (path, Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal")):
        with contextlib.suppress(FileNotFoundError):
            candidate.unlink()


def _recover(damaged: Path, target: Path, salvage: Salvage) -> bool:
    """sqlite3's `.recover` into `target`; False (with a note) if it could not run."""
    _remove_store(target)
    try:
        dump = subprocess.run(["sqlite3", str(damaged), ".recover"], capture_output=True,
                              timeout=RECOVER_TIMEOUT_S, check=False)
        load = subprocess.run(["sqlite3", str(target)], input=dump.stdout,
                              capture_output=True, timeout=RECOVER_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        salvage.notes.append(f"sqlite3 .recover did not run ({exc}); read rows directly")
        return False
    if dump.returncode != 0 or load.returncode != 0 or not _has_memories(target):
        reason = dump.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["failed"]
        salvage.notes.append(f"sqlite3 .recover could not help ({reason[0]}); "
                             "rows were read directly")
        _remove_store(target)
        return False
    salvage.used_recover = True
    return True


def _has_memories(path: Path) -> bool:
    with _open(path) as conn:
        try:
            conn.execute("SELECT 1 FROM memories LIMIT 1").fetchall()
        except sqlite3.Error:
            return False
    return True


def _read_memories(source: Path, salvage: Salvage) -> list[Memory]:
    """Every memory row that reads and validates (as an import would) from `source`."""
    memories: list[Memory] = []
    for index, row in enumerate(_read_rows(source, "memories", MEMORY_COLUMNS), 1):
        try:
            memories.append(transfer.from_record(_record(row), index))
        except (InvalidInput, ValueError, TypeError):
            salvage.memories_unreadable += 1
    return memories


def _record(row: sqlite3.Row) -> dict[str, Any]:
    record = dict(row)
    for key in ("tags", "linked_entities", "metadata"):
        record[key] = json.loads(record[key])
    return record


def _expected_count(source: Path) -> int | None:
    with _open(source) as conn:
        try:
            row = conn.execute("SELECT value FROM counters WHERE name = 'memories'").fetchone()
        except sqlite3.Error:
            return None
    return int(row[0]) if row else None


@contextlib.contextmanager
def _open(path: Path) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    try:
        yield conn
    finally:
        conn.close()


def _read_rows(source: Path, table: str, columns: str) -> Iterator[sqlite3.Row]:
    """The rows of `table` that can be read: a scan, else one rowid at a time.

    A scan stops at the first damaged page; seeking each rowid through the b-tree still
    reaches every row whose own page is intact.
    """
    with _open(source) as conn:
        try:
            rows = conn.execute(f"SELECT {columns} FROM {table} ORDER BY rowid").fetchall()
        except sqlite3.Error:
            pass
        else:
            yield from rows
            return
        top = _top_rowid(conn, table)
        for rowid in range(1, top + 1):
            try:
                row = conn.execute(f"SELECT {columns} FROM {table} WHERE rowid = ?",
                                   (rowid,)).fetchone()
            except sqlite3.Error:
                continue
            if row is not None:
                yield row


def _top_rowid(conn: sqlite3.Connection, table: str) -> int:
    for sql, params in (("SELECT max(rowid) FROM " + table, ()),
                        ("SELECT seq FROM sqlite_sequence WHERE name = ?", (table,))):
        try:
            row = conn.execute(sql, params).fetchone()
        except sqlite3.Error:
            continue
        if row and row[0] is not None:
            return int(row[0])
    return 0
