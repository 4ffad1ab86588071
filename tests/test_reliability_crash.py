"""SIGKILL at random moments (issue 6, CI size: 5 kills; benchmarks/stress.py: 50).

Victims rotate between a MemoryService writer, a stdio server with calls in flight, a bulk
importer and a chain of stop hooks, all on one accumulating store, on each backend. After
every kill: the store passes its integrity check (SQLite: `PRAGMA integrity_check` and FTS5's
own), every write acknowledged before the kill is present, and no memory is half-written
(check_consistency: no row without its index and label rows, no index row without its memory).
On PostgreSQL the killed process is a client of the server: its acknowledged writes were
committed by the server and must all be there.
"""

from __future__ import annotations

import os
from pathlib import Path

from pma_mcp.config import Settings
from tests.reliability.scenarios import VICTIMS, run_crashes

KILLS = 5
SEED = int(os.environ.get("RELIABILITY_SEED", "20261130"))


def test_sigkill_never_corrupts_or_loses_an_acknowledged_write(
    tmp_path: Path, store_settings: Settings
) -> None:
    report = run_crashes(tmp_path, KILLS, SEED, store=store_settings)

    assert report.kills == KILLS
    assert set(report.victims) == set(VICTIMS)
    assert report.corrupt == []
    assert report.lost == []
    assert report.inconsistent == []
    assert report.lineage_missing == []
    assert report.failures == []
    assert report.acknowledged > 0
    assert report.final_memories >= report.acknowledged
