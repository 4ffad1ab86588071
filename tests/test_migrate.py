"""`pma-mcp migrate --to`: a whole store copied losslessly, resumably, never over a live one."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pma_mcp.admin import migrate
from pma_mcp.config import Settings
from pma_mcp.core.budget import WordEstimate
from pma_mcp.core.errors import InvalidInputError
from pma_mcp.core.models import Memory
from pma_mcp.service import MemoryService
from tests.conftest import PROJECT, FakeClock

OTHER = "/home/dev/other-project"
SESSION = "session-1"


async def fill(settings: Settings, clock: FakeClock) -> None:
    """A store with history: two namespaces, a session, a correction, accesses, GC moves,
    an injection record and a context reset."""
    async with await MemoryService.open(settings, clock=clock, counter=WordEstimate()) as svc:
        for i in range(12):
            await svc.add(f"User: step {i} of the release checklist for the billing api",
                          session_id=SESSION, tags=["release"], linked_entities=["billing"])
            clock.advance(0.01)
        old = (await svc.add("The staging database is on port 5433",
                             importance=0.8, memory_type="semantic")).memory
        await svc.add("The staging database is on port 6543", supersedes=old.id,
                      importance=0.8, memory_type="semantic", metadata={"pr": 7})
        await svc.add("Other project: deploys happen on Fridays", namespace=OTHER)
        found = await svc.search("release checklist billing", limit=3)
        await svc.record_injections(SESSION, [r.memory for r in found])
        clock.advance(24 * 30)
        await svc.gc_run()
        await svc.reset_injections("session-0")


async def snapshot(settings: Settings) -> dict[str, Any]:
    """Everything a copy must keep, keyed by memory id (seq is the store's own)."""
    async with await MemoryService.open(settings, counter=WordEstimate()) as svc:
        repo = svc.store
        memories: list[Memory] = []
        after = 0
        while page := await repo.memories_after(after, 100):
            memories.extend(page)
            after = page[-1].seq
        lineage = {m.id: [dataclasses.asdict(e) for e in await repo.lineage(m.id)]
                   for m in memories}
        state = await repo.session_state()
        assert (await repo.check_consistency()).ok
        search = [r.memory.id for r in await svc.search("billing release step", limit=5,
                                                         touch=False)]
        return {
            "memories": {m.id: {k: v for k, v in dataclasses.asdict(m).items() if k != "seq"}
                         for m in memories},
            "lineage": lineage,
            "injections": sorted(state.injections),
            "resets": sorted(state.resets),
            "search": search,
        }


@pytest.fixture
async def source(tmp_path: Path, clock: FakeClock) -> Settings:
    settings = Settings(db_path=tmp_path / "source.db", namespace=PROJECT)
    await fill(settings, clock)
    return settings


async def test_a_copy_holds_everything_the_source_held(
    source: Settings, tmp_path: Path
) -> None:
    target = tmp_path / "copy" / "target.db"
    report = await migrate.migrate(source, str(target), states=tmp_path / "state")
    before, after = await snapshot(source), await snapshot(migrate.target_settings(source,
                                                                                 str(target)))
    assert report.memories_copied == len(before["memories"]) == 15
    assert after == before
    assert report.sessions_copied == 2
    assert not list((tmp_path / "state").glob("*.json"))  # finished: no progress left


async def test_a_target_with_memories_is_refused_unless_merging(
    source: Settings, tmp_path: Path, clock: FakeClock
) -> None:
    target = Settings(db_path=tmp_path / "live.db", namespace=PROJECT)
    async with await MemoryService.open(target, clock=clock, counter=WordEstimate()) as svc:
        await svc.add("A memory of the live target")
    with pytest.raises(InvalidInputError, match="--merge"):
        await migrate.migrate(source, str(target.db_path), states=tmp_path / "state")
    assert len((await snapshot(target))["memories"]) == 1  # untouched

    report = await migrate.migrate(source, str(target.db_path), merge=True,
                                   states=tmp_path / "state")
    merged = await snapshot(target)
    assert report.memories_copied == 15 and len(merged["memories"]) == 16
    again = await migrate.migrate(source, str(target.db_path), merge=True,
                                  states=tmp_path / "state")
    assert again.memories_copied == 0 and again.memories_skipped == 15


async def test_copying_a_store_onto_itself_is_refused(source: Settings, tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="being copied"):
        await migrate.migrate(source, str(source.db_path), states=tmp_path / "state")


async def test_an_interrupted_copy_resumes_where_it_stopped(
    source: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(migrate, "PAGE", 4)
    target = tmp_path / "target.db"
    pages: list[int] = []

    def interrupt(done: int, total: int) -> None:
        pages.append(done)
        if len(pages) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        await migrate.migrate(source, str(target), progress=interrupt,
                              states=tmp_path / "state")
    partial = await snapshot(migrate.target_settings(source, str(target)))
    assert len(partial["memories"]) == 8

    report = await migrate.migrate(source, str(target), states=tmp_path / "state")
    assert report.resumed and report.memories_copied == 7
    assert await snapshot(migrate.target_settings(source, str(target))) == await snapshot(source)


def test_the_command_copies_and_reports(source: Settings, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMA_", "CLAUDE_"))}
    env.update({"PMA_DB_PATH": str(source.db_path), "HOME": str(tmp_path / "home"),
                "XDG_STATE_HOME": str(tmp_path / "state")})
    target = tmp_path / "cli.db"
    run = [sys.executable, "-m", "pma_mcp", "migrate", "--to", str(target), "--json"]
    proc = subprocess.run(run, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["memories_copied"] == 15 and report["target"] == str(target)

    again = subprocess.run(run[:-1], env=env, capture_output=True, text=True, check=False)
    assert again.returncode == 1
    assert "already holds 15 memories; pass --merge" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1


@pytest.mark.postgres
async def test_a_store_goes_to_postgresql_and_back_unchanged(
    source: Settings, tmp_path: Path, postgres_url: str
) -> None:
    """SQLite → PostgreSQL → SQLite: every memory, lineage event and session record kept,
    and the same search results on each."""
    to_pg = await migrate.migrate(source, postgres_url, states=tmp_path / "state")
    shared = migrate.target_settings(source, postgres_url)
    assert to_pg.memories_copied == 15 and to_pg.target == shared.database
    assert await snapshot(shared) == await snapshot(source)
    back = tmp_path / "back.db"
    await migrate.migrate(shared, str(back), states=tmp_path / "state")
    assert await snapshot(migrate.target_settings(source, str(back))) == await snapshot(source)


@pytest.mark.postgres
async def test_a_copy_into_postgresql_leaves_its_planner_statistics_fresh(
    source: Settings, tmp_path: Path, postgres_url: str
) -> None:
    """A bulk-loaded store would otherwise wait for autovacuum to have statistics."""
    from tests import postgres

    await migrate.migrate(source, postgres_url, states=tmp_path / "state")
    rows = await postgres.fetch(
        postgres_url, "SELECT relname, last_vacuum, last_analyze FROM pg_stat_user_tables "
        "WHERE schemaname = $1", postgres_url.rpartition("%3D")[2])
    fresh = {r["relname"] for r in rows if r["last_vacuum"] and r["last_analyze"]}
    assert {"memories", "postings", "namespace_terms", "lineage"} <= fresh
