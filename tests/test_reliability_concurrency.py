"""Eight processes write into one new store at once (issue 6, CI size), on each backend.

Three stdio servers (raw JSON-RPC `remember` calls), two chains of `stop` hook processes
(realistic Stop input, distinct replies ≥ 120 characters), two MemoryService writers and a
CLI importer. Every write must be present, no caller may see "database is locked", the FTS
index must agree with the table, and every memory must have its `created` lineage event.
On PostgreSQL "database is locked" is StorageBusyError's "busy": no caller may see it either.
benchmarks/stress.py runs the same scenario at 8 × 500.
"""

from __future__ import annotations

from pathlib import Path

from pma_mcp.config import Settings
from tests.reliability.scenarios import Layout, run_concurrency

PER_PROCESS = 25


def test_eight_processes_write_into_one_store_and_nothing_is_lost(
    tmp_path: Path, store_settings: Settings
) -> None:
    report = run_concurrency(tmp_path, PER_PROCESS, Layout(servers=3, hooks=2, writers=2, cli=1),
                             store=store_settings)

    assert report.layout.processes == 8
    assert report.lock_errors == []
    assert report.failures == []
    assert report.missing == []
    assert report.present == report.expected == 8 * PER_PROCESS
    assert report.lineage_missing == []
    assert report.integrity == "ok"
    assert report.consistent, report.consistency
