"""A database written by every earlier schema version migrates forward with nothing lost.

tests/fixtures/schema_v<k>.db is a frozen file per version (built once by
tests/fixtures/make_fixtures.py and committed). Each is copied, opened by today's code, and
compared with what was written: the same memories with the same content, tags, entities,
metadata, tiers, scores and times; lineage (also of a deleted memory); hook-injection records;
and the full-text index working on the old rows.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pma_mcp.config import Settings
from pma_mcp.core.budget import WordEstimate
from pma_mcp.service import MemoryService
from pma_mcp.store.sqlite.schema import SCHEMA_VERSION
from tests.fixtures.make_fixtures import (
    DELETED_ID,
    FIXTURE_MEMORIES,
    INJECTION,
    PROJECT,
    path_for,
)
from tests.reliability import checks
from tests.reliability.procs import DEADLINE, child_env, pma
from tests.stores import sqlite_store

VERSIONS = list(range(1, SCHEMA_VERSION + 1))
BUILT = [v for v in VERSIONS if path_for(v).exists()]
"""A missing fixture fails test_a_fixture_exists_for_every_schema_version, once."""
FIELDS = ("namespace", "content", "memory_type", "importance", "tags", "linked_entities",
          "token_count", "access_count", "created_at", "accessed_at", "metadata", "session_id",
          "content_hash", "superseded_by", "kind")
"""Kinds came with v15: an older file gets them from that migration (hook-saved exchanges
become events, the rest as core/kinds.py infers them), so they are compared for every file."""


def copy_of(version: int, tmp_path: Path) -> Path:
    target = tmp_path / f"from_v{version}.db"
    shutil.copyfile(path_for(version), target)
    return target


def test_a_fixture_exists_for_every_schema_version() -> None:
    missing = [v for v in VERSIONS if not path_for(v).exists()]
    assert not missing, (f"no fixture for schema version(s) {missing}: run "
                         "`uv run python -m tests.fixtures.make_fixtures` and commit the file")
    for version in VERSIONS:
        conn = sqlite3.connect(f"file:{path_for(version)}?mode=ro", uri=True)
        try:
            assert conn.execute("PRAGMA user_version").fetchone()[0] == version
            assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == len(
                FIXTURE_MEMORIES)
        finally:
            conn.close()


@pytest.mark.parametrize("version", BUILT)
async def test_fixture_migrates_forward_with_nothing_lost(tmp_path: Path, version: int) -> None:
    db = copy_of(version, tmp_path)
    settings = Settings(db_path=db, namespace=PROJECT)
    async with await MemoryService.open(settings, counter=WordEstimate()) as service:
        assert await service.store.schema_version() == SCHEMA_VERSION

        rows = checks.row_dump(db)
        assert set(rows) == {m["id"] for m in FIXTURE_MEMORIES}
        for expected in FIXTURE_MEMORIES:
            row = rows[expected["id"]]
            assert {k: row[k] for k in FIELDS} == {k: expected[k] for k in FIELDS}, expected["id"]

        for expected in FIXTURE_MEMORIES:  # the FTS index answers for every old row
            marker = expected["content"].rsplit("(marker ", 1)[1].split(")")[0]
            found = await service.search(marker, namespace=expected["namespace"],
                                         include_global=False, touch=False,
                                         memory_type=expected["memory_type"])
            assert [r.memory.id for r in found] == [expected["id"]], marker
        related = await service.related("config/jobs.toml")
        assert [m.id for m in related.memories] == [FIXTURE_MEMORIES[0]["id"]]

        for expected in FIXTURE_MEMORIES:
            events = [e.event for e in await service.store.lineage(expected["id"])]
            assert events[0] == "created"
        assert [e.event for e in await service.lineage_of(DELETED_ID)] == ["created", "deleted"]
        if version >= 2:
            assert INJECTION[1] in await service.injected_ids(INJECTION[0])

        added = await service.add("Written after the upgrade (marker bilby)", tags=["ops"])
        found = await service.search("bilby", touch=False)
        assert [r.memory.id for r in found] == [added.memory.id]
        assert (await sqlite_store(service).term_stats([])).total_docs == len(FIXTURE_MEMORIES) + 1
        result = await service.store.check_consistency()
        assert result.ok, result
    assert checks.integrity(db) == "ok"


def test_processes_opening_an_old_file_at_once_migrate_it_once(tmp_path: Path) -> None:
    """Four CLI processes start together on a v1 file right after an upgrade: the file is
    migrated once (in one transaction) and every process sees every memory."""
    db = copy_of(1, tmp_path)
    env = child_env(db, tmp_path, PMA_NAMESPACE=PROJECT)
    procs = [subprocess.Popen(pma("export", "--all"), env=env, cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(4)]
    outputs: list[dict[str, Any]] = []
    for proc in procs:
        out, err = proc.communicate(timeout=DEADLINE)
        assert proc.returncode == 0, err
        outputs.append(json.loads(out))
    for doc in outputs:
        assert {r["id"] for r in doc["memories"]} == {m["id"] for m in FIXTURE_MEMORIES}
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    finally:
        conn.close()
    assert checks.consistency(db).ok
