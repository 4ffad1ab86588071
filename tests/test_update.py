"""`update`: a memory edited in place through the service, the MCP tool and the CLI.

The edit keeps the id, is validated like `remember`, moves the full-text index, term counts
and token count with the content in one write, and leaves an `edited` lineage event.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from mcp.server import MCPServer

from pma_mcp.core.errors import InvalidInputError
from pma_mcp.service import MemoryService
from tests.conftest import PROJECT, FakeClock
from tests.test_cli import cli, cli_env
from tests.test_server import Mode, app, connect, fails, mode, ok, remember, schemas

__all__ = ["app", "mode"]  # fixtures shared with test_server

OLD = "The payments service retries webhooks with exponential backoff"
NEW = "The billing gateway deduplicates callbacks by their idempotency key, never twice"


async def ids(service: MemoryService, query: str) -> list[str]:
    return [r.memory.id for r in await service.search(query, touch=False)]


async def test_edited_content_is_found_by_new_words_not_old(service: MemoryService) -> None:
    memory = (await service.add(OLD, importance=0.5, tags=["payments"])).memory
    done = await service.update(memory.id, content=NEW)
    assert done.changed == ["content"]
    assert done.memory.id == memory.id and done.memory.seq == memory.seq
    assert done.memory.content == NEW
    assert done.memory.token_count == service.counter.count(NEW) != memory.token_count
    assert await ids(service, "idempotency callbacks") == [memory.id]
    assert await ids(service, "webhooks backoff") == []
    consistency = await service.store.check_consistency()
    assert consistency.ok, consistency  # FTS row and term_df moved with the content


async def test_lineage_records_old_and_new_values(
    service: MemoryService, clock: FakeClock
) -> None:
    memory = (await service.add(OLD, importance=0.5, tags=["a", "b"])).memory
    clock.advance(1)
    done = await service.update(memory.id[:8], importance=0.9, memory_type="semantic",
                                tags=["b", "c"], metadata={"source": "review"})
    assert done.changed == ["importance", "memory_type", "tags", "metadata"]
    event = (await service.store.lineage(memory.id))[-1]
    assert event.event == "edited"
    assert event.at.timestamp() == clock.now
    assert (event.from_tier, event.to_tier) == ("episodic", "semantic")
    assert "importance 0.5 → 0.9" in event.reason
    assert "memory_type episodic → semantic" in event.reason
    assert "tags +c −a" in event.reason and "metadata keys source" in event.reason
    stored = await service.get(memory.id)
    assert (stored.importance, stored.memory_type, stored.tags) == (0.9, "semantic", ["b", "c"])
    assert [m.id for m in (await service.related("c")).memories] == [memory.id]
    assert (await service.related("a")).memories == []


async def test_old_content_is_not_copied_into_lineage(service: MemoryService) -> None:
    memory = (await service.add("the staging password is hunter2-swordfish")).memory
    await service.update(memory.id, content="the staging password lives in the vault")
    reasons = " ".join(e.reason for e in await service.store.lineage(memory.id))
    assert "hunter2" not in reasons and "tokens" in reasons


async def test_same_edit_twice_changes_nothing_the_second_time(service: MemoryService) -> None:
    memory = (await service.add(OLD)).memory
    first = await service.update(memory.id, importance=0.8)
    second = await service.update(memory.id, importance=0.8)
    assert first.changed == ["importance"] and second.changed == []
    assert [e.event for e in await service.store.lineage(memory.id)] == ["created", "edited"]


async def test_edited_content_is_redacted_before_it_is_stored(service: MemoryService) -> None:
    token = "ghp_R4nD0mT0k3nV4lu3F0rT3st1ngAbCdEf1234"
    memory = (await service.add(OLD)).memory
    text = f"CI reads GITHUB_TOKEN={token} <private>home address</private>"
    done = await service.update(memory.id, content=text)
    assert token not in done.memory.content and "[REDACTED" in done.memory.content
    conn = sqlite3.connect(service.settings.database)
    try:
        dump = "\n".join(conn.iterdump())
    finally:
        conn.close()
    assert token not in dump
    # Text stored on purpose keeps <private> as written, for update as for remember.
    added = (await service.add(text)).memory
    assert done.memory.content == added.content
    assert "<private>home address</private>" in done.memory.content


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"content": "   "}, "content"),
        ({"content": "x" * 100_001}, "content"),
        ({"importance": 1.5}, "importance"),
        ({"importance": True}, "importance"),
        ({"memory_type": "lukewarm"}, "memory_type"),
        ({"tags": "db"}, "tags"),
        ({"metadata": ["not", "an", "object"]}, "metadata"),
        ({}, "update"),
    ],
)
async def test_bad_edits_are_refused_and_change_nothing(
    service: MemoryService, kwargs: dict[str, Any], field: str
) -> None:
    memory = (await service.add(OLD)).memory
    with pytest.raises(InvalidInputError) as err:
        await service.update(memory.id, **kwargs)
    assert err.value.field == field
    assert await service.get(memory.id) == memory
    assert [e.event for e in await service.store.lineage(memory.id)] == ["created"]


async def test_content_of_another_memory_is_refused(service: MemoryService) -> None:
    first = (await service.add(OLD)).memory
    second = (await service.add(NEW)).memory
    with pytest.raises(InvalidInputError, match=first.id):
        await service.update(second.id, content=OLD)
    assert (await service.get(second.id)).content == NEW


async def test_another_namespace_cannot_edit(service: MemoryService) -> None:
    other = (await service.add(OLD, namespace="/home/dev/other")).memory
    with pytest.raises(Exception, match="no memory"):
        await service.update(other.id, importance=1.0)
    assert (await service.get(other.id, namespace="/home/dev/other")).importance == 0.5


async def test_edit_refreshes_session_neighbours_context(service: MemoryService) -> None:
    """A neighbour's `context` column holds this memory's text; recall by context follows."""
    before = (await service.add("we chose the zeppelin queue", session_id="s1")).memory
    after = (await service.add("deployment finished fine", session_id="s1")).memory
    await service.update(before.id, content="we chose the kestrel queue")
    consistency = await service.store.check_consistency()
    assert consistency.ok
    conn = sqlite3.connect(service.settings.database)
    try:
        (context,) = conn.execute(
            "SELECT context FROM memory_fts WHERE rowid = ?", (after.seq,)).fetchone()
    finally:
        conn.close()
    assert "kestrel" in context and "zeppelin" not in context


# ------------------------------------------------------------------- MCP tool


async def test_update_tool_edits_in_place_with_lineage(app: MCPServer[Any], mode: Mode) -> None:
    async with connect(app, mode) as client:
        tool = (await schemas(client))["update"]
        hints = tool.annotations
        assert hints is not None
        assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == (
            False, False, True)
        stored = await remember(client, OLD, tags=["payments"])
        done = await ok(client, "update", {"memory_id": stored["id"], "content": NEW,
                                           "importance": 0.9})
        assert done["changed"] == ["content", "importance"]
        assert done["memory"]["id"] == stored["id"] and done["memory"]["content"] == NEW
        found = await ok(client, "recall", {"query": "idempotency callbacks"})
        assert [r["id"] for r in found["results"]] == [stored["id"]]
        assert (await ok(client, "recall", {"query": "webhooks backoff"}))["results"] == []
        inspected = await ok(client, "inspect", {"memory_id": stored["id"]})
        (edited,) = [e for e in inspected["lineage"] if e["event"] == "edited"]
        assert "importance 0.5 → 0.9" in edited["reason"]
        message = await fails(client, "update", {"memory_id": stored["id"]})
        assert "give at least one field" in message
        message = await fails(client, "update", {"memory_id": stored["id"], "importance": 2})
        assert "importance" in message


# ------------------------------------------------------------------------ CLI


def test_cli_edit_changes_the_memory_and_search_follows(db_path: Path, tmp_path: Path) -> None:
    env = cli_env(db_path, tmp_path / "home", PMA_NAMESPACE=PROJECT)
    assert cli("import", "-", env=env, stdin=json.dumps({"memories": [{
        "id": "ab" * 16, "namespace": PROJECT, "content": OLD, "memory_type": "episodic",
        "importance": 0.5, "token_count": 9, "access_count": 0,
        "created_at": "2027-01-15T00:00:00Z",
        "accessed_at": "2027-01-15T00:00:00Z"}]})).returncode == 0
    proc = cli("edit", "ababab", "--content", NEW, "--importance", "0.7", "--tag", "billing",
               env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"edited {'ab' * 16}: content, importance, tags"
    search = json.loads(cli("search", "idempotency", "--json", env=env).stdout)
    assert [r["id"] for r in search["results"]] == ["ab" * 16]
    assert json.loads(cli("search", "webhooks", "--json", env=env).stdout)["results"] == []
    shown = json.loads(cli("inspect", "ababab", "--json", env=env).stdout)
    assert shown["memory"]["tags"] == ["billing"]
    assert shown["lineage"][-1]["event"] == "edited"
    again = cli("edit", "ababab", "--importance", "0.7", env=env)
    assert again.stdout.startswith("nothing to change")
    bad = cli("edit", "ababab", "--importance", "7", env=env)
    assert bad.returncode == 1 and "importance" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
