"""Two connections of one process to one SQLite file: the server's own, and the one it opens
to answer a hook (hooks/listener.py). Opening the second must not touch the file outside
SQLite: closing any descriptor of a file drops every POSIX lock the process holds on it, so
another process closing its connection would find no other user, and delete the WAL and its
index from under the first (bench_latency met SQLITE_IOERR_SHORT_READ that way)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from pma_mcp.store.sqlite.store import SQLiteStore


async def test_a_second_connection_leaves_the_first_ones_wal_alone(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    await (await SQLiteStore.open(str(path))).close()  # created and migrated
    first = sqlite3.connect(path, isolation_level=None)
    try:
        assert first.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        first.execute("SELECT count(*) FROM memories").fetchone()  # holds its shared lock
        for _ in range(3):
            second = await SQLiteStore.open(str(path), blocking=True)
            await second.close()
            other = subprocess.run(  # another process's last-looking close
                [sys.executable, "-c", "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
                 "c.execute('SELECT count(*) FROM memories').fetchone(); c.close()", str(path)],
                capture_output=True, timeout=60, check=False)
            assert other.returncode == 0, other.stderr
            assert Path(f"{path}-shm").exists(), "the first connection's WAL index was removed"
        first.execute("INSERT INTO namespace_stats (namespace, docs, length) "
                      "VALUES ('ns', 1, 1)")
        assert first.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    finally:
        first.close()
