"""`pma-mcp migrate --to`: a whole store copied losslessly, resumably, never over a live one."""

from __future__ import annotations

import asyncio
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
from tests.test_postgres_server import password_role  # noqa: F401  (a fixture)

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


def _cli_env(source: Settings, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMA_", "CLAUDE_", "PG"))}
    env.update({"PMA_DB_PATH": str(source.db_path), "HOME": str(tmp_path / "home"),
                "XDG_STATE_HOME": str(tmp_path / "state")})
    return env


def test_a_hard_link_to_the_source_is_refused_in_one_line(
    source: Settings, tmp_path: Path
) -> None:
    """Another name for the same file is the same store: refused before it is opened, no
    traceback, the source unchanged (not even a journal of the other name)."""
    link = tmp_path / "elsewhere" / "link.db"
    link.parent.mkdir()
    os.link(source.db_path, link)
    before = source.db_path.read_bytes()
    for spelling in (str(link), f"{tmp_path}/elsewhere/../source.db"):
        proc = subprocess.run([sys.executable, "-m", "pma_mcp", "migrate", "--to", spelling,
                               "--merge"], env=_cli_env(source, tmp_path), capture_output=True,
                              text=True, check=False, timeout=60)
        assert proc.returncode == 1 and proc.stdout == ""
        assert "is the store being copied" in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    assert source.db_path.read_bytes() == before
    assert sorted(p.name for p in link.parent.iterdir()) == ["link.db"]


async def test_the_progress_file_is_private_whatever_the_umask(
    source: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(migrate, "PAGE", 4)

    def interrupt(done: int, total: int) -> None:
        raise KeyboardInterrupt

    previous = os.umask(0)
    try:
        with pytest.raises(KeyboardInterrupt):
            await migrate.migrate(source, str(tmp_path / "target.db"), progress=interrupt,
                                  states=tmp_path / "state")
    finally:
        os.umask(previous)
    [state] = (tmp_path / "state").iterdir()
    assert state.stat().st_mode & 0o777 == 0o600


def test_a_password_in_the_to_url_is_warned_about_and_never_shown(
    source: Settings, tmp_path: Path
) -> None:
    """The process list shows the command line: the warning says how to pass it instead."""
    from tests.postgres import free_port

    url = f"postgresql://someone:hunter2secret@127.0.0.1:{free_port()}/nowhere"
    proc = subprocess.run([sys.executable, "-m", "pma_mcp", "migrate", "--to", url],
                          env=_cli_env(source, tmp_path), capture_output=True, text=True,
                          check=False, timeout=60)
    assert proc.returncode == 1 and proc.stdout == ""
    warning, error = proc.stderr.strip().splitlines()
    assert "carries a password" in warning and "PGPASSWORD" in warning and ".pgpass" in warning
    assert error.startswith("pma-mcp: error: ")
    assert "hunter2secret" not in proc.stderr


@pytest.mark.postgres
async def test_the_same_database_under_another_host_name_is_refused(
    source: Settings, tmp_path: Path, postgres_url: str
) -> None:
    """`localhost` and `127.0.0.1` reach one cluster: merging it into itself would read back
    the lineage it writes, without end. Nothing is written."""
    from tests import postgres

    await migrate.migrate(source, postgres_url, states=tmp_path / "state")
    shared = migrate.target_settings(source, postgres_url)
    before = await snapshot(shared)
    count = "SELECT count(*) AS n FROM lineage"
    lineage = (await postgres.fetch(postgres_url, count))[0]["n"]
    other_spelling = postgres_url.replace("@127.0.0.1:", "@localhost:")
    assert other_spelling != postgres_url
    with pytest.raises(InvalidInputError, match="is the store being copied"):
        # bounded: the old check let this copy read back its own writes without end
        await asyncio.wait_for(migrate.migrate(shared, other_spelling, merge=True,
                                               states=tmp_path / "state"), 120)
    assert (await postgres.fetch(postgres_url, count))[0]["n"] == lineage
    assert await snapshot(shared) == before
    assert not list((tmp_path / "state").iterdir())


@pytest.mark.postgres
def test_a_to_url_without_password_takes_it_from_pgpassword(
    source: Settings, tmp_path: Path, postgres_url: str,
    password_role: tuple[str, str],  # noqa: F811  (the fixture imported above)
) -> None:
    """As libpq does (asyncpg reads PGPASSWORD and ~/.pgpass the same way)."""
    from tests.test_postgres_server import as_role

    role, password = password_role
    env = _cli_env(source, tmp_path) | {"PGPASSWORD": password}
    proc = subprocess.run([sys.executable, "-m", "pma_mcp", "migrate", "--to",
                           as_role(postgres_url, role), "--json"], env=env,
                          capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "" and json.loads(proc.stdout)["memories_copied"] == 15
