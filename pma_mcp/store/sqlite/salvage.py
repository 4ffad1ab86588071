"""Reading what is left of a damaged SQLite store (for `doctor --repair`, see repair.py).

Python's sqlite3 has no `.recover`. When the sqlite3 command-line tool is installed its
`.recover` runs first (it reads pages the b-trees no longer reach); either way rows are read
table by table, a row at a time where a scan fails. The damaged file (with its -wal) is
copied aside before anything else and never written to.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

MEMORY_COLUMNS = (
    "id, namespace, content, memory_type, importance, tags, linked_entities, token_count, "
    "access_count, created_at, accessed_at, metadata, session_id, superseded_by"
)
LINEAGE_COLUMNS = (
    "memory_id, namespace, event, at, from_tier, to_tier, score, reason, count, last_at"
)
RECOVER_TIMEOUT_S = 600


def keep_aside(database: Path) -> Path:
    """Copy the damaged file and its -wal beside it, under a name with the time."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    kept = database.with_name(f"{database.name}.damaged-{stamp}")
    shutil.copy2(database, kept)
    wal = Path(f"{database}-wal")
    if wal.exists():
        shutil.copy2(wal, f"{kept}-wal")
    return kept


def remove_store(path: Path) -> None:
    for candidate in (path, Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal")):
        with contextlib.suppress(FileNotFoundError):
            candidate.unlink()


def recover(damaged: Path, target: Path, notes: list[str]) -> bool:
    """sqlite3's `.recover` into `target`; False (with a note) if it could not run."""
    remove_store(target)
    if not shutil.which("sqlite3"):
        return False
    try:
        dump = subprocess.run(["sqlite3", str(damaged), ".recover"], capture_output=True,
                              timeout=RECOVER_TIMEOUT_S, check=False)
        load = subprocess.run(["sqlite3", str(target)], input=dump.stdout,
                              capture_output=True, timeout=RECOVER_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        notes.append(f"sqlite3 .recover did not run ({exc}); read rows directly")
        return False
    if dump.returncode != 0 or load.returncode != 0 or not _has_memories(target):
        reason = dump.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["failed"]
        notes.append(f"sqlite3 .recover could not help ({reason[0]}); rows were read directly")
        remove_store(target)
        return False
    return True


def memory_records(source: Path) -> Iterator[dict[str, Any]]:
    """Every memory row that can be read from `source`, as an export record."""
    for row in _read_rows(source, "memories", MEMORY_COLUMNS):
        record = dict(row)
        for key in ("tags", "linked_entities", "metadata"):
            with contextlib.suppress(TypeError, ValueError):
                record[key] = json.loads(record[key])
        yield record


def lineage_rows(source: Path) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in _read_rows(source, "lineage", LINEAGE_COLUMNS)]


def expected_count(source: Path) -> int | None:
    """How many memories the store's own counter says it held, if that still reads."""
    with _open(source) as conn:
        try:
            row = conn.execute("SELECT value FROM counters WHERE name = 'memories'").fetchone()
        except sqlite3.Error:
            return None
    return int(row[0]) if row else None


def _has_memories(path: Path) -> bool:
    with _open(path) as conn:
        try:
            conn.execute("SELECT 1 FROM memories LIMIT 1").fetchall()
        except sqlite3.Error:
            return False
    return True


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
