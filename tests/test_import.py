"""`pma-mcp import --from FORMAT PATH`: each importer's round trip on input its tool writes.

For every format: the counts imported, a second run adding 0, `--dry-run` writing nothing, a
recall that finds an imported memory, the source's secret stored redacted, and a clear error
naming the expected format for input of another kind. Run as the CLI, as a user would.
"""

from __future__ import annotations

import json
import os
import pty
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pma_mcp.config import Settings
from pma_mcp.core.budget import WordEstimate
from pma_mcp.core.namespaces import GLOBAL_NAMESPACE
from pma_mcp.service import MemoryService
from tests import import_sources as src
from tests.node_tools import node_tool

NAMESPACE = "/home/dev/acme-api"


def env_for(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {"PATH": os.environ["PATH"], "HOME": str(home), "PMA_DB_PATH":
            str(tmp_path / "store.db"), "PMA_NAMESPACE": NAMESPACE,
            "CLAUDE_CONFIG_DIR": str(home / ".claude")}


def pma(
    env: dict[str, str], *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pma_mcp", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=120, check=False)


def imported(env: dict[str, str], *args: str, cwd: Path | None = None) -> dict[str, Any]:
    done = pma(env, "import", *args, "--json", cwd=cwd)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


async def stored(env: dict[str, str], namespace: str = NAMESPACE) -> list[Any]:
    settings = Settings(db_path=Path(env["PMA_DB_PATH"]), namespace=namespace)
    async with await MemoryService.open(settings, counter=WordEstimate()) as service:
        return await service.store.namespace_memories(namespace)


async def recall(env: dict[str, str], query: str, namespace: str = NAMESPACE) -> list[str]:
    settings = Settings(db_path=Path(env["PMA_DB_PATH"]), namespace=namespace)
    async with await MemoryService.open(settings, counter=WordEstimate()) as service:
        return [r.memory.content for r in await service.search(query, limit=3)]


def make_source(fmt: str, tmp_path: Path, env: dict[str, str]) -> tuple[list[str], Path | None]:
    """argv after `import` and the cwd to run in."""
    if fmt == "claude-code":
        project = src.claude_code_project(tmp_path, Path(env["CLAUDE_CONFIG_DIR"]))
        return ["--from", fmt, str(project)], None
    if fmt == "claude-mem":
        return ["--from", fmt, str(src.claude_mem_db(tmp_path / "claude-mem.db"))], None
    if fmt == "mcp-memory":
        return ["--from", fmt, str(src.MCP_MEMORY_FIXTURE)], None
    return ["--from", fmt, str(src.openmemory_zip(tmp_path / "memories_export_dev.zip"))], None


# format → (memories read, a recall query, words the best hit holds)
CASES = {
    "claude-code": (5, "integer cents money", "integer cents"),
    "claude-mem": (6, "gzip level exports", "gzip level 6"),
    "mcp-memory": (7, "who maintains payments-service", "Alice maintains payments-service"),
    "mem0": (2, "pnpm npm javascript", "Prefers pnpm"),
}


@pytest.mark.parametrize("fmt", list(CASES))
async def test_round_trip(fmt: str, tmp_path: Path) -> None:
    env = env_for(tmp_path)
    argv, cwd = make_source(fmt, tmp_path, env)
    count, query, words = CASES[fmt]

    dry = imported(env, *argv, "--dry-run", cwd=cwd)
    assert dry["dry_run"] is True and dry["imported"] == count and dry["read"] == count
    assert not Path(env["PMA_DB_PATH"]).exists()  # a dry run writes nothing, not even the file

    first = imported(env, *argv, cwd=cwd)
    assert first["imported"] == count, first
    second = imported(env, *argv, cwd=cwd)
    assert second["imported"] == 0 and second["skipped"] == count
    before = Path(env["PMA_DB_PATH"]).read_bytes()
    assert imported(env, *argv, "--dry-run", cwd=cwd)["imported"] == 0
    assert Path(env["PMA_DB_PATH"]).read_bytes() == before

    namespaces = first["namespaces"]
    memories = [m for ns in namespaces for m in await stored(env, ns)]
    assert len(memories) == count
    assert all(src.SECRET not in m.content for m in memories)
    assert all(src.SECRET not in json.dumps(m.metadata) for m in memories)
    home_ns = next(ns for ns in namespaces if ns != GLOBAL_NAMESPACE)
    hits = await recall(env, query, home_ns)
    assert hits and words in hits[0], hits


async def test_claude_mem_keeps_times_sessions_projects_and_files(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    env["PMA_NAMESPACE"] = "/home/dev/acme-api"  # its last part is claude-mem's project name
    db = src.claude_mem_db(tmp_path / "claude-mem.db")
    result = imported(env, "--from", "claude-mem", str(db))
    assert set(result["namespaces"]) == {NAMESPACE}
    memories = await stored(env)
    observation = next(m for m in memories if "Capped retries" in m.content)
    assert observation.memory_type == "episodic" and observation.session_id == "mem-7d3f2b10"
    assert observation.created_at == datetime(2026, 1, 1, tzinfo=UTC)
    assert "export/retry.py" in observation.linked_entities and "bugfix" in observation.tags
    assert "[REDACTED" in observation.content
    summary = next(m for m in memories if m.content.startswith("Session summary"))
    assert summary.memory_type == "semantic" and "Next steps: Add an alert" in summary.content
    # v13's memory_items: copies of legacy rows skipped, the rest mapped by kind
    assert sum("Export job retried forever" in m.content for m in memories) == 1
    assert sum(m.content.startswith("Session summary") for m in memories) == 1
    manual = next(m for m in memories if "Always run the test suite" in m.content)
    assert manual.memory_type == "semantic" and {"manual", "rule"} <= set(manual.tags)
    assert manual.session_id == "mem-7d3f2b10"
    assert src.SECRET not in json.dumps(manual.metadata)
    assert "cli" in json.dumps(manual.metadata["claude_mem_metadata"])
    queue = next(m for m in memories if "BullMQ" in m.content)
    assert queue.memory_type == "episodic" and "export/queue.ts" in queue.linked_entities
    assert queue.created_at == datetime(2026, 1, 1, 0, 23, tzinfo=UTC)
    assert await stored(env, GLOBAL_NAMESPACE) == []

    other = tmp_path / "other"
    other.mkdir()
    env2 = env_for(other)
    env2["PMA_NAMESPACE"] = "/home/dev/elsewhere"
    result = imported(env2, "--from", "claude-mem", str(db))
    assert "acme-api" in result["namespaces"]  # no namespace here matches: the project name


async def test_mem0_get_all_shape(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    result = imported(env, "--from", "mem0", str(src.mem0_get_all(tmp_path / "all.json")))
    assert result["imported"] == 2
    memories = await stored(env)
    peanuts = next(m for m in memories if "peanuts" in m.content)
    assert peanuts.metadata["user_id"] == "alice"
    assert peanuts.author == "alice"  # the source's own author, not the importing person
    assert peanuts.created_at == datetime(2025, 10, 1, 15, tzinfo=UTC)


async def test_mcp_memory_from_the_real_server(tmp_path: Path) -> None:
    server = node_tool("mcp-server-memory")
    path = await src.write_mcp_memory(server, tmp_path / "memory.jsonl")
    assert path.read_text().splitlines() == src.MCP_MEMORY_FIXTURE.read_text().splitlines()
    env = env_for(tmp_path)
    assert imported(env, "--from", "mcp-memory", str(path))["imported"] == 7
    relation = next(m for m in await stored(env) if m.content == "Alice maintains payments-service")
    assert set(relation.linked_entities) == {"Alice", "payments-service"}


@pytest.mark.parametrize(("fmt", "expects"), [
    ("claude-mem", "a claude-mem SQLite database"),
    ("mcp-memory", "a @modelcontextprotocol/server-memory file"),
    ("mem0", "an OpenMemory export"),
    ("claude-code", "a Claude Code project directory"),
])
def test_wrong_input_names_the_expected_format_and_changes_nothing(
    fmt: str, expects: str, tmp_path: Path
) -> None:
    env = env_for(tmp_path)
    wrong = tmp_path / "notes.txt"
    wrong.write_text("just some text\nnot a memory store\n")
    done = pma(env, "import", "--from", fmt, str(wrong))
    assert done.returncode == 1 and done.stdout == ""
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1 and expects in line and f"--from {fmt}" in line
    assert not Path(env["PMA_DB_PATH"]).exists()


def test_unknown_format_is_a_usage_error(tmp_path: Path) -> None:
    done = pma(env_for(tmp_path), "import", "--from", "evernote", "x")
    assert done.returncode == 2 and "claude-code" in done.stderr


def test_progress_bar_on_a_terminal_goes_to_stderr(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    controller, terminal = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pma_mcp", "import", "--from", "mcp-memory",
             str(src.MCP_MEMORY_FIXTURE)], env=env, stdout=subprocess.PIPE, stderr=terminal)
        out, _ = proc.communicate(timeout=120)
        os.close(terminal)
        terminal = -1
        screen = b""
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:
                break
            if not chunk:
                break
            screen += chunk
    finally:
        os.close(controller)
        if terminal >= 0:
            os.close(terminal)
    assert proc.returncode == 0
    assert b"importing [" in screen and b"7/7" in screen
    assert b"importing [" not in out and b"imported 7 of 7" in out


def test_claude_mem_rows_are_read_leniently(tmp_path: Path) -> None:
    """An older claude-mem database (no v13 tables, legacy `text` only) still imports."""
    db = tmp_path / "old.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE observations (id INTEGER PRIMARY KEY, memory_session_id TEXT, "
                 "project TEXT, text TEXT, type TEXT, created_at TEXT, created_at_epoch INTEGER)")
    conn.execute("INSERT INTO observations VALUES (1, 's1', 'acme-api', "
                 "'Legacy observation about export retries', 'discovery', "
                 "'2025-01-01T00:00:00Z', 1735689600000)")
    conn.commit()
    conn.close()
    env = env_for(tmp_path)
    assert imported(env, "--from", "claude-mem", str(db))["imported"] == 1
