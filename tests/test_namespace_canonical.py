"""One project is one namespace, however its path is spelled (issue 11, item 3).

Claude Code gives hooks `cwd` and CLAUDE_PROJECT_DIR as the user reached the project: through
a symlink, with a trailing slash, with `.` or `..` segments. The server and the CLI see the
physical working directory. All of them resolve through `config.canonical_namespace`, and a
store that already holds memories under another spelling has them merged at open.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from pma_mcp.config import Settings
from pma_mcp.core.budget import WordEstimate
from pma_mcp.core.namespaces import canonical_namespace
from pma_mcp.service import MemoryService
from pma_mcp.store.sqlite.schema import SPELLINGS_FOLDED as FOLD_VERSION
from tests.reliability import checks
from tests.test_hooks import REPLY, Hook, Transcript, hook_env, stop_input


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, Path]:
    """(real project dir, a symlink to it), as a user who keeps projects behind a link."""
    real = (tmp_path / "src" / "billing").resolve()
    real.mkdir(parents=True)
    link = tmp_path / "billing-link"
    link.symlink_to(real)
    return real, link


def spellings(real: Path, link: Path) -> list[str]:
    return [str(link), f"{link}/", f"{real}/", f"{real}/.", f"{real}/../billing",
            f"{link}/./", str(real)]


def test_canonical_namespace_is_the_real_path_without_a_trailing_separator(
    project: tuple[Path, Path],
) -> None:
    real, link = project
    assert {canonical_namespace(s) for s in spellings(real, link)} == {str(real)}
    assert canonical_namespace(" locomo/conv-1 ") == "locomo/conv-1"  # a name, not a path
    assert canonical_namespace("default") == "default"
    assert canonical_namespace("/") == "/"
    assert canonical_namespace("/no/such/dir/../x/") == "/no/such/x"


def namespaces(db: Path) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        return [r[0] for r in conn.execute("SELECT DISTINCT namespace FROM memories")]
    finally:
        conn.close()


@pytest.mark.parametrize("how", ["cwd", "CLAUDE_PROJECT_DIR"])
async def test_stop_hook_through_a_symlink_saves_where_the_server_recalls(
    tmp_path: Path, project: tuple[Path, Path], how: str
) -> None:
    real, link = project
    db = tmp_path / "store.db"
    hook = Hook(db=db, env=hook_env(db, tmp_path))
    for i, spelling in enumerate([f"{link}/", f"{real}/./", f"{link.parent}/src/../billing-link/"]):
        transcript = Transcript(tmp_path / f"t{i}.jsonl")
        transcript.exchange(f"Why does export job {i} time out?", REPLY)
        payload = stop_input(transcript.write(), message=f"Job {i}: {REPLY}")
        env = {}
        if how == "cwd":
            payload["cwd"] = spelling
        else:
            env["CLAUDE_PROJECT_DIR"] = spelling
        proc = hook.run("stop", payload, env=env)
        assert proc.returncode == 0 and proc.stdout == b"", proc.stderr
    assert namespaces(db) == [str(real)]

    params = StdioServerParameters(  # the server as Claude Code starts it: in the real dir
        command=sys.executable, args=["-m", "pma_mcp"], cwd=str(real),
        env={"PMA_DB_PATH": str(db), "HOME": str(tmp_path), "TIKTOKEN_CACHE_DIR": ""},
    )
    async with Client(params) as client:
        found = await client.call_tool("recall", {"query": "export job time out", "limit": 10})
    assert found.structured_content is not None
    assert len(found.structured_content["results"]) == 3


def test_cli_in_a_symlinked_dir_uses_the_real_path(
    tmp_path: Path, project: tuple[Path, Path]
) -> None:
    real, link = project
    env = hook_env(tmp_path / "store.db", tmp_path)
    env["PWD"] = str(link)  # a shell that cd'd through the link reports it here
    proc = subprocess.run([sys.executable, "-m", "pma_mcp", "stats", "--json"], cwd=link,
                          env=env, capture_output=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["namespace"] == str(real)


async def old_store(db: Path, real: Path, link: Path) -> None:
    """Memories as hooks before this fix left them: one namespace spelling per process.

    Written through the service under placeholder names (the service now canonicalises
    every path), then renamed to the literal spellings the old resolution stored.
    """
    async with await MemoryService.open(Settings(db_path=db, namespace="placeholder"),
                                        counter=WordEstimate()) as svc:
        for i, _ in enumerate(spellings(real, link)):
            await svc.add(f"Decision {i}: retries are capped at five", session_id="s1",
                          tags=[f"t{i}"], namespace=f"old-{i}")
            await svc.add("The nightly export runs at 02:00 UTC", tags=[f"d{i}"],
                          namespace=f"old-{i}")
    conn = sqlite3.connect(db)
    with conn:
        for i, spelling in enumerate(spellings(real, link)):
            for table in ("memories", "lineage", "namespace_terms", "namespace_stats"):
                conn.execute(f"UPDATE {table} SET namespace = ? WHERE namespace = ?",
                             (spelling, f"old-{i}"))
    # ... and at the schema version before the one that folds old spellings, without what
    # later versions added (the kind column): the fold then reads rows of today's shape
    # only because every pending migration's columns come before any migration's fill.
    conn.execute("DROP INDEX memories_kind")
    conn.execute("ALTER TABLE memories DROP COLUMN kind")
    conn.execute(f"PRAGMA user_version = {FOLD_VERSION - 1}")
    conn.close()


async def test_open_merges_uncanonical_namespaces_once(
    tmp_path: Path, project: tuple[Path, Path]
) -> None:
    real, link = project
    db = tmp_path / "store.db"
    await old_store(db, real, link)
    assert len(namespaces(db)) == len(spellings(real, link))
    async with await MemoryService.open(Settings(db_path=db, namespace=str(real)),
                                        counter=WordEstimate()) as svc:
        assert namespaces(db) == [str(real)]
        assert await svc.count() == len(spellings(real, link)) + 1  # duplicates merged
        (dup,) = [r for r in await svc.search("nightly export", limit=50)
                  if "02:00" in r.memory.content]
        assert set(dup.memory.tags) == {f"d{i}" for i in range(len(spellings(real, link)))}
        assert (await svc.store.check_consistency()).ok
        lineage = await svc.lineage_of(dup.memory.id)
        assert any(e.event == "merge" for e in lineage)
    before = checks.snapshot(db, full=True)
    async with await MemoryService.open(Settings(db_path=db, namespace=str(real)),
                                        counter=WordEstimate()):
        pass
    assert checks.snapshot(db, full=True) == before  # idempotent: nothing left to fold
