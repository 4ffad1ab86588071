"""The MCP surface through the SDK's in-process Client, over a real SQLite file.

Every test runs twice: `mode="auto"` (direct dispatch at protocol 2026-07-28) and
`mode="legacy"` (the JSON-RPC initialize handshake at 2025-11-25 that real clients use).
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
import jsonschema  # type: ignore[import-untyped]  # a dependency of mcp; no stubs
import pytest
from mcp import Client, MCPError
from mcp.server import MCPServer
from mcp.types import CallToolResult, TextContent, TextResourceContents, Tool

from pma_mcp.config import Settings
from pma_mcp.core.budget import WordEstimate
from pma_mcp.core.namespaces import GLOBAL_NAMESPACE
from pma_mcp.server import build_server, main
from pma_mcp.server.mcp import INSTRUCTIONS, banner
from pma_mcp.service import MemoryService
from tests.conftest import PROJECT, FakeClock

TOOLS = {
    "remember": ["content", "importance", "memory_type", "tags", "linked_entities", "metadata",
                 "session_id", "namespace", "supersedes", "kind"],
    "recall": ["query", "limit", "memory_type", "tags", "namespace", "min_score",
               "include_global", "kind"],
    "forget": ["memory_id"],
    "update": ["memory_id", "content", "importance", "memory_type", "tags", "linked_entities",
               "metadata", "kind"],
    "load_context": ["query", "token_budget", "namespace", "include_global"],
    "inspect": ["memory_id", "query"],
    "gc_preview": ["namespace"],
    "gc_run": ["namespace"],
    "memory_stats": ["namespace"],
    "related": ["entity", "namespace"],
}
Mode = Literal["auto", "legacy"]
READ_ONLY = {"recall", "load_context", "inspect", "gc_preview", "memory_stats", "related"}


@pytest.fixture
def settings(store_settings: Settings) -> Settings:
    """Every test here runs on each backend (tests/backends.py)."""
    return store_settings


@pytest.fixture
def app(settings: Settings, clock: FakeClock) -> MCPServer[Any]:
    return build_server(settings, clock=clock, counter=WordEstimate())


@pytest.fixture(params=["auto", "legacy"])
def mode(request: pytest.FixtureRequest) -> Mode:
    value: Mode = request.param
    return value


@asynccontextmanager
async def connect(app: MCPServer[Any], mode: Mode) -> AsyncIterator[Client]:
    """A Client per test body (an async fixture would enter and exit its cancel scope in
    different tasks under pytest-asyncio)."""
    async with Client(app, mode=mode, raise_exceptions=True) as client:
        yield client


async def schemas(client: Client) -> dict[str, Tool]:
    return {t.name: t for t in (await client.list_tools()).tools}


def text_of(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


async def ok(client: Client, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    """Call a tool that must succeed; its structuredContent must validate against its
    published outputSchema and be mirrored as JSON text for older clients."""
    result = await client.call_tool(tool, args or {})
    assert not result.is_error, text_of(result)
    data = result.structured_content
    assert isinstance(data, dict)
    schema = (await schemas(client))[tool].output_schema
    assert schema is not None
    jsonschema.validate(data, schema)
    assert json.loads(text_of(result)) == data
    return data


async def fails(client: Client, tool: str, args: dict[str, Any]) -> str:
    result = await client.call_tool(tool, args)
    assert result.is_error, result.structured_content
    text = text_of(result)
    assert "Traceback" not in text and 'File "' not in text
    return text


async def remember(client: Client, content: str, **kwargs: Any) -> dict[str, Any]:
    return await ok(client, "remember", {"content": content, **kwargs})


# ------------------------------------------------------------------------- shape


async def test_tools_list_names_arguments_titles_and_annotations(
    app: MCPServer[Any], mode: Mode
) -> None:
    async with connect(app, mode) as client:
        tools = await schemas(client)
        assert set(tools) == set(TOOLS)
        for name, tool in tools.items():
            assert list(tool.input_schema["properties"]) == TOOLS[name], name
            assert tool.title, name
            assert tool.description and len(tool.description.encode()) < 2048, name
            assert tool.description.startswith("Use "), name  # first sentence says when
            assert tool.output_schema and tool.output_schema["type"] == "object", name
            hints = tool.annotations
            assert hints is not None, name
            assert None not in (hints.read_only_hint, hints.destructive_hint,
                                hints.idempotent_hint, hints.open_world_hint), name
            assert hints.open_world_hint is False, name
            assert hints.read_only_hint is (name in READ_ONLY), name
        assert tools["forget"].annotations is not None
        assert tools["forget"].annotations.destructive_hint is True
        assert tools["forget"].annotations.idempotent_hint is True
        assert tools["gc_run"].annotations is not None
        assert tools["gc_run"].annotations.destructive_hint is True
        assert tools["remember"].annotations is not None
        assert tools["remember"].annotations.destructive_hint is False
        assert tools["remember"].input_schema["required"] == ["content"]
        limit = tools["recall"].input_schema["properties"]["limit"]
        assert (limit["minimum"], limit["maximum"], limit["default"]) == (1, 50, 5)


async def test_server_identity_and_instructions(app: MCPServer[Any], mode: Mode) -> None:
    async with connect(app, mode) as client:
        info = client.server_info
        assert info is not None and info.name == "pma" and info.version
        assert client.instructions == INSTRUCTIONS
        assert len(INSTRUCTIONS.encode()) < 2048
        for tool in ("load_context", "recall", "remember", "forget", "importance"):
            assert tool in INSTRUCTIONS


# ---------------------------------------------------------------- happy paths


async def test_remember_returns_the_stored_memory(app: MCPServer[Any], mode: Mode) -> None:
    async with connect(app, mode) as client:
        data = await remember(
            client, "Use WAL mode for the store", importance=0.8, memory_type="semantic",
            tags=["db", "decision"], linked_entities=["pma_mcp/db.py"], metadata={"pr": 12},
            session_id="s1",
        )
        assert len(data["id"]) == 32 and data["namespace"] == PROJECT
        assert (data["memory_type"], data["importance"], data["tags"]) == (
            "semantic", 0.8, ["db", "decision"])
        assert data["linked_entities"] == ["pma_mcp/db.py"] and data["metadata"] == {"pr": 12}
        assert data["token_count"] > 0 and data["deduplicated"] is False
        assert data["created_at"].startswith("2027-01-15")
        again = await remember(client, "Use WAL mode for the store")
        assert again["deduplicated"] is True and again["id"] == data["id"]


# ------------------------------------------------------------------ kinds and tiers


async def test_a_kind_is_what_a_memory_is_and_the_collector_never_changes_it(
    app: MCPServer[Any], mode: Mode, clock: FakeClock
) -> None:
    async with connect(app, mode) as client:
        chosen = await remember(client, "Invoices are stored for ten years", kind="fact",
                                importance=0.9)
        decided = await remember(client, "We decided to keep invoices in S3 Glacier")
        liked = await remember(client, "The user prefers short commit messages")
        happened = await remember(client, "The invoice export failed on Monday night")
        other = await remember(client, "Invoice numbering starts at 1000")
        assert [m["kind"] for m in (chosen, decided, liked, happened, other)] == [
            "fact", "decision", "preference", "event", "note"]  # given, then inferred
        assert {m["memory_type"] for m in (chosen, decided, liked)} == {"episodic"}

        found = await ok(client, "recall", {"query": "invoices", "kind": "decision"})
        assert [r["id"] for r in found["results"]] == [decided["id"]]
        assert found["results"][0]["kind"] == "decision"
        assert (await fails(client, "recall", {"query": "x", "kind": "rule"})).count("fact")

        clock.advance(24 * 365)  # a year idle: the collector moves tiers, never kinds
        await ok(client, "gc_run")
        kept = await ok(client, "inspect", {"memory_id": chosen["id"]})
        assert kept["memory"]["kind"] == "fact"
        assert kept["memory"]["memory_type"] == "episodic"  # important: not demoted for age
        moved = await ok(client, "inspect", {"memory_id": other["id"]})
        assert moved["memory"]["memory_type"] != "episodic"
        assert moved["memory"]["kind"] == "note"

        fixed = await ok(client, "update", {"memory_id": other["id"], "kind": "fact"})
        assert fixed["changed"] == ["kind"] and fixed["memory"]["kind"] == "fact"


async def test_a_correction_keeps_the_labels_of_what_it_corrects(
    app: MCPServer[Any], mode: Mode
) -> None:
    async with connect(app, mode) as client:
        old = await remember(client, "Alice owns the payments service", kind="fact",
                             importance=0.85, tags=["team"], linked_entities=["alice"])
        assert len((await ok(client, "related", {"entity": "alice"}))["memories"]) == 1
        new = await remember(client, "Alice owns the billing service since May",
                             supersedes=old["id"])
        assert (new["kind"], new["importance"], new["tags"], new["linked_entities"]) == (
            "fact", 0.85, ["team"], ["alice"])
        related = await ok(client, "related", {"entity": "alice"})
        assert [m["id"] for m in related["memories"]] == [new["id"]]
        given = await remember(client, "Bob owns the billing service since June",
                               supersedes=new["id"], importance=0.6, tags=[],
                               linked_entities=["bob"], kind="event")
        assert (given["kind"], given["importance"], given["tags"],
                given["linked_entities"]) == ("event", 0.6, [], ["bob"])


async def test_superseding_an_already_superseded_memory_names_the_newest(
    app: MCPServer[Any], mode: Mode
) -> None:
    async with connect(app, mode) as client:
        first = await remember(client, "Deploys run at 09:00")
        second = await remember(client, "Deploys run at 10:00", supersedes=first["id"])
        again = await remember(client, "Deploys run at 10:00", supersedes=first["id"])
        assert again["deduplicated"] is True and again["id"] == second["id"]  # a retry
        third = await remember(client, "Deploys run at 11:00", supersedes=second["id"])
        before = (await ok(client, "memory_stats"))["total"]
        for content in ("Deploys run at 12:00", "Deploys run at 10:00"):
            text = await fails(client, "remember", {"content": content,
                                                    "supersedes": first["id"]})
            assert f"already superseded by {second['id']}" in text
            assert f"supersedes={third['id']}" in text and "nothing was stored" in text
        assert (await ok(client, "memory_stats"))["total"] == before
        found = await ok(client, "recall", {"query": "deploys run"})
        assert [r["id"] for r in found["results"]] == [third["id"]]


async def test_remember_answers_with_what_it_likely_repeats_or_contradicts(
    app: MCPServer[Any], mode: Mode
) -> None:
    async with connect(app, mode) as client:
        lag = await remember(client, "The read replica lags; point the nightly report at the "
                             "primary at 02:00.", kind="fact", linked_entities=["reporting"])
        await remember(client, "The read replica is in eu-west-1", kind="note",
                       linked_entities=["reporting"])
        await remember(client, "Lunch is at noon on Fridays", kind="fact")
        again = await remember(client, "The read replica lags, so point the nightly report at "
                               "the primary at 02:00 UTC.", kind="fact")
        assert [s["id"] for s in again["similar"]] == [lag["id"]]
        assert again["similar"][0]["preview"].startswith("The read replica lags;")
        assert again["similar"][0]["overlap"] >= 0.6
        moved = await remember(client, "Point the reporting job at the replica again, it "
                               "no longer lags", kind="fact", linked_entities=["reporting"])
        assert [s["id"] for s in moved["similar"]] == [lag["id"], again["id"]] or [
            s["id"] for s in moved["similar"]] == [again["id"], lag["id"]]
        assert moved["similar"][0]["shared"] in (["reporting"], [])
        saved = await remember(client, "User: does the read replica lag?\nAssistant: it "
                               "lags; point the nightly report at the primary at 02:00.",
                               tags=["session", "auto-saved"], kind="fact")
        assert saved["similar"] == []  # an exchange a hook saved is not compared
        fresh = await remember(client, "Tabs, not spaces, in the Makefile", kind="fact")
        assert fresh["similar"] == []


async def test_recall_ranks_with_breakdown_and_filters(
    app: MCPServer[Any], mode: Mode, settings: Settings
) -> None:
    glob = settings.global_namespace  # default, or on a shared database this person's own
    async with connect(app, mode) as client:
        wal = await remember(client, "We chose SQLite WAL mode for concurrent writers",
                             importance=0.9, tags=["db"])
        await remember(client, "The CI runs on GitHub Actions", tags=["ci"])
        await remember(client, "Always answer in British English", namespace=glob,
                       memory_type="semantic")
        data = await ok(client, "recall", {"query": "sqlite writers"})
        top = data["results"][0]
        assert top["id"] == wal["id"] and top["content"].startswith("We chose SQLite")
        assert set(top["breakdown"]) == {"semantic_similarity", "importance", "recency",
                                         "access_frequency", "composite", "age_hours"}
        assert top["score"] == pytest.approx(top["breakdown"]["composite"])
        assert top["breakdown"]["semantic_similarity"] > 0
        assert {"metadata", "namespace", "memory_type", "importance", "tags", "linked_entities",
                "created_at", "access_count"} <= set(top)

        everything = await ok(client, "recall", {"query": "", "limit": 10})
        assert len(everything["results"]) == 3
        local = await ok(client, "recall", {"query": "", "limit": 10, "include_global": False})
        assert {r["namespace"] for r in local["results"]} == {PROJECT}
        ci = await ok(client, "recall", {"query": "", "tags": ["ci"]})
        assert [r["content"] for r in ci["results"]] == ["The CI runs on GitHub Actions"]
        semantic = await ok(client, "recall", {"query": "", "memory_type": "semantic"})
        assert [r["namespace"] for r in semantic["results"]] == [glob]
        assert (await ok(client, "recall", {"query": "", "limit": 1}))["results"][0]
        assert (await ok(client, "recall", {"query": "kubernetes helm"}))["results"] == []
        strict = await ok(client, "recall", {"query": "sqlite", "min_score": 0.99})
        assert strict["results"] == []


async def test_supersedes_hides_the_corrected_memory(app: MCPServer[Any], mode: Mode) -> None:
    async with connect(app, mode) as client:
        old = await remember(client, "The API listens on port 8000")
        new = await remember(client, "The API listens on port 9000", supersedes=old["id"][:8])
        found = await ok(client, "recall", {"query": "API port"})
        assert [r["id"] for r in found["results"]] == [new["id"]]


async def test_forget_by_prefix_then_it_is_gone(app: MCPServer[Any], mode: Mode) -> None:
    async with connect(app, mode) as client:
        m = await remember(client, "Temporary note about the staging database")
        data = await ok(client, "forget", {"memory_id": m["id"][:6]})
        assert data == {"deleted_id": m["id"],
                        "content_preview": "Temporary note about the staging database"}
        assert (await ok(client, "recall", {"query": "staging"}))["results"] == []
        again = await fails(client, "forget", {"memory_id": m["id"]})
        assert "no memory" in again and "call recall" in again


async def test_load_context_packs_into_the_budget_with_a_readable_block(
    app: MCPServer[Any], mode: Mode,
) -> None:
    async with connect(app, mode) as client:
        a = await remember(client, "Deploys go through the blue green pipeline", importance=0.9,
                           tags=["deploy"])
        await remember(client, "word " * 400, importance=0.1)
        data = await ok(client, "load_context", {"query": "deploy pipeline", "token_budget": 100})
        assert [m["id"] for m in data["memories"]] == [a["id"]]
        assert 0 < data["total_tokens"] <= 100 and data["token_budget"] == 100
        assert data["budget_used"] == pytest.approx(data["total_tokens"] / 100)
        assert "blue green pipeline" in data["text"] and a["id"][:8] in data["text"]
        assert "tags: deploy" in data["text"]
        assert "word word" not in data["text"]
        default = await ok(client, "load_context")
        assert len(default["memories"]) == 2 and default["token_budget"] == 2048


async def test_load_context_on_an_empty_store_says_so(app: MCPServer[Any], mode: Mode) -> None:
    async with connect(app, mode) as client:
        data = await ok(client, "load_context", {"query": "anything"})
        assert data["memories"] == [] and data["total_tokens"] == 0
        assert "No stored memories" in data["text"]


async def test_inspect_explains_score_gc_and_lineage(app: MCPServer[Any], mode: Mode) -> None:
    async with connect(app, mode) as client:
        m = await remember(client, "Use ruff for linting", importance=0.7, tags=["tooling"])
        await ok(client, "recall", {"query": "ruff"})
        data = await ok(client, "inspect", {"memory_id": m["id"][:10], "query": "ruff linting"})
        assert data["memory"]["id"] == m["id"]
        assert data["memory"]["content"] == "Use ruff for linting"
        assert data["memory"]["access_count"] == 1
        assert data["breakdown"]["semantic_similarity"] > 0
        assert data["gc_action"] in {"promote", "demote", "archive", "delete", "merge", "keep"}
        assert data["gc_reason"]
        assert [e["event"] for e in data["lineage"]][:2] == ["created", "accessed"]
        plain = await ok(client, "inspect", {"memory_id": m["id"]})
        assert plain["breakdown"]["semantic_similarity"] == 0


async def test_gc_preview_is_what_gc_run_applies(
    app: MCPServer[Any], mode: Mode, clock: FakeClock
) -> None:
    async with connect(app, mode) as client:
        stale = await remember(client, "stale low value note", importance=0.3)
        gone = await remember(client, "archived trivia", importance=0.1, memory_type="archived")
        clock.advance(30)
        hot = await remember(client, "fresh important decision", importance=0.95)
        stats = await ok(client, "memory_stats")
        assert stats["total"] == 3 and stats["gc_pressure"] == 3

        preview = await ok(client, "gc_preview")
        assert [d["memory_id"] for d in preview["to_archive"]] == [stale["id"]]
        assert [d["memory_id"] for d in preview["to_delete"]] == [gone["id"]]
        assert [d["memory_id"] for d in preview["to_promote"]] == [hot["id"]]
        assert preview["to_keep"] == 0 and preview["summary"]
        assert all(d["reason"] for d in preview["to_archive"] + preview["to_delete"])

        run = await ok(client, "gc_run")
        planned = [d for key in ("to_merge", "to_delete", "to_archive", "to_demote", "to_promote")
                   for d in preview[key]]
        assert run["decisions"] == planned
        assert (run["promoted"], run["archived"], run["deleted"]) == (1, 1, 1)
        assert run["token_delta"] == preview["token_delta"]
        after = await ok(client, "memory_stats")
        assert after["total"] == 2 and after["gc_pressure"] == 0
        assert after["by_tier"]["working"]["count"] == 1
        assert after["by_tier"]["archived"]["count"] == 1
        assert (await ok(client, "gc_preview"))["to_keep"] == 2


async def test_memory_stats_by_tier(
    app: MCPServer[Any], mode: Mode, settings: Settings
) -> None:
    async with connect(app, mode) as client:
        await remember(client, "one two three", memory_type="semantic")
        await remember(client, "four five", memory_type="working")
        stats = await ok(client, "memory_stats")
        assert stats["namespace"] == PROJECT and stats["total"] == 2
        assert set(stats["by_tier"]) == {"working", "episodic", "semantic", "archived"}
        assert stats["by_tier"]["semantic"]["count"] == 1
        assert stats["total_tokens"] == sum(t["tokens"] for t in stats["by_tier"].values())
        assert 0 < stats["avg_composite_score"] <= 1
        glob = settings.global_namespace
        other = await ok(client, "memory_stats", {"namespace": glob})
        assert other["namespace"] == glob and other["total"] == 0


async def test_related_finds_memories_by_entity(app: MCPServer[Any], mode: Mode) -> None:
    async with connect(app, mode) as client:
        m = await remember(client, "db.py opens every connection in WAL mode",
                           linked_entities=["pma_mcp/db.py"], tags=["sqlite"])
        await remember(client, "unrelated note", tags=["misc"])
        data = await ok(client, "related", {"entity": "pma_mcp/db.py"})
        assert data["entity"] == "pma_mcp/db.py"
        assert [x["id"] for x in data["memories"]] == [m["id"]]
        assert "sqlite" in data["related_nodes"]
        assert (await ok(client, "related", {"entity": "nothing-here"}))["memories"] == []


# ----------------------------------------------------------------------- errors


HUGE = "x" * 100_001
BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("remember", {}, "content"),
    ("remember", {"content": 123}, "valid string"),
    ("remember", {"content": ""}, "at least 1 character"),
    ("remember", {"content": "   "}, "must not be empty"),
    ("remember", {"content": HUGE}, "at most 100000 characters"),
    ("remember", {"content": "a\x00b"}, "NUL"),
    ("remember", {"content": "x", "importance": "NaN"}, "valid number"),
    # (NaN itself reaches the server as null, "not given", through the client's JSON)
    ("remember", {"content": "x", "importance": -0.5}, "importance"),
    ("remember", {"content": "x", "importance": "0.7"}, "valid number"),
    ("remember", {"content": "x", "importance": 1.5}, "less than or equal to 1"),
    ("remember", {"content": "x", "importance": True}, "valid number"),
    ("remember", {"content": "x", "memory_type": "hot"}, "'working', 'episodic'"),
    ("remember", {"content": "x", "tags": 7}, "valid list"),
    ("remember", {"content": "x", "tags": [""]}, "at least 1 character"),
    ("remember", {"content": "x", "metadata": [1, 2]}, "valid dictionary"),
    ("remember", {"content": "x", "namespace": ""}, "at least 1 character"),
    ("remember", {"content": "x", "supersedes": "zzzzzzzz"}, "hex characters"),
    ("remember", {"content": "x", "supersedes": "abcdef1234"}, "call recall"),
    ("recall", {"query": "x", "limit": 0}, "greater than or equal to 1"),
    ("recall", {"query": "x", "limit": True}, "valid integer"),
    ("recall", {"query": "x", "include_global": "no"}, "valid boolean"),
    ("recall", {"query": "x", "limit": 51}, "less than or equal to 50"),
    ("recall", {"query": "x", "memory_type": "hot"}, "'working', 'episodic'"),
    ("recall", {"query": "x" * 10_001}, "at most 10000 characters"),
    ("recall", {"query": "x", "min_score": -1}, "greater than or equal to 0"),
    ("recall", {}, "query"),
    ("forget", {"memory_id": "abc"}, "at least 6 characters"),
    ("forget", {"memory_id": "not-an-id!"}, "hex characters"),
    ("forget", {"memory_id": "0123456789abcdef0123456789abcdef"}, "call recall"),
    ("forget", {"memory_id": ["abcdef"]}, "valid string"),
    ("inspect", {"memory_id": "abcdef123456"}, "call recall"),
    ("load_context", {"token_budget": 0}, "greater than or equal to 1"),
    ("load_context", {"token_budget": "lots"}, "valid integer"),
    ("related", {"entity": ""}, "at least 1 character"),
    ("related", {"entity": "   "}, "must not be empty"),
    ("memory_stats", {"namespace": 5}, "valid string"),
    ("no_such_tool", {}, "Unknown tool"),
]


@pytest.mark.parametrize(("tool", "args", "expected"), BAD_CALLS,
                         ids=[f"{t}-{i}" for i, (t, _, _) in enumerate(BAD_CALLS)])
async def test_bad_calls_are_actionable_tool_errors(
    app: MCPServer[Any], mode: Mode, tool: str, args: dict[str, Any], expected: str
) -> None:
    async with connect(app, mode) as client:
        text = await fails(client, tool, args)
        assert expected in text
        assert len(text) < 2_000  # a huge argument is not echoed back whole
        # the server keeps serving, and nothing was written
        assert (await ok(client, "memory_stats"))["total"] == 0


WRONG_TYPES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("recall", {"query": "x", "limit": "five"},
     ["recall: limit must be a whole number from 1 to 50", "got 'five', a string",
      'e.g. "limit": 5']),
    ("remember", {"content": "x", "importance": "high"},
     ["remember: importance must be a number from 0 to 1", "got 'high'",
      'e.g. "importance": 0.5']),
    ("remember", {"content": "x", "importance": "0.7"}, ['e.g. "importance": 0.7']),
    ("remember", {"content": "x", "tags": "db"},
     ["tags must be a list of strings", 'send it as a JSON array, e.g. "tags": ["…"]']),
    ("recall", {"query": "x", "include_global": "no"},
     ["include_global must be true or false", 'e.g. "include_global": true']),
    ("recall", {"query": "x", "limit": 51}, ["got 51 (not less than or equal to 50)"]),
    ("remember", {"content": "x", "tags": ["ok", 5]}, ["tags[1] must be text"]),
    ("remember", {}, ["remember: content is required: text of at least 1 character"]),
    ("remember", {"content": "x", "importance": "high", "memory_type": "hot"},
     ["importance must be", "; memory_type must be one of 'working'"]),
]


@pytest.mark.parametrize(("tool", "args", "needles"), WRONG_TYPES,
                         ids=[f"{t}-{i}" for i, (t, _, _) in enumerate(WRONG_TYPES)])
async def test_wrong_typed_arguments_come_back_in_the_tools_words(
    app: MCPServer[Any], mode: Mode, tool: str, args: dict[str, Any], needles: list[str]
) -> None:
    """Not pydantic's report (its class names, error codes and a link to its website): the
    argument, what it must be, what came, and a value that works."""
    async with connect(app, mode) as client:
        text = await fails(client, tool, args)
        for needle in needles:
            assert needle in text, text
        for pydantic in ("pydantic", "validation error for", "[type=", "Arguments", "http"):
            assert pydantic not in text, text
        assert text.endswith("Nothing was done.")
        assert (await ok(client, "memory_stats"))["total"] == 0


async def test_hostile_query_text_is_just_text(app: MCPServer[Any], mode: Mode) -> None:
    async with connect(app, mode) as client:
        await remember(client, "NEAR the content column lives the index")
        for query in ('NEAR( " * content:', '"unbalanced', "a OR b AND NOT c", "*", "^col:x",
                      "\u202e\ufeff emoji 🧠", "'; DROP TABLE memories; --"):
            await ok(client, "recall", {"query": query})
            await ok(client, "load_context", {"query": query})
        assert (await ok(client, "memory_stats"))["total"] == 1


async def test_ambiguous_prefix_lists_the_candidates(
    app: MCPServer[Any], mode: Mode, service: MemoryService
) -> None:
    async with connect(app, mode) as client:
        records = [{"id": f"abcdef0{i}" + "0" * 24, "namespace": PROJECT, "content": f"note {i}",
                    "created_at": "2027-01-15T08:00:00+00:00", "token_count": 2} for i in (1, 2)]
        await service.import_document({"memories": records})
        text = await fails(client, "forget", {"memory_id": "abcdef"})
        assert "matches 2 memories" in text and "abcdef01" in text and "more characters" in text
        assert (await ok(client, "forget", {"memory_id": "abcdef02"}))["deleted_id"].startswith(
            "abcdef02")


async def test_another_namespace_is_out_of_reach_by_id(
    app: MCPServer[Any], mode: Mode, service: MemoryService
) -> None:
    async with connect(app, mode) as client:
        other = (await service.add("secret of another project", namespace="/other")).memory
        text = await fails(client, "forget", {"memory_id": other.id})
        assert "no memory" in text
        assert (await service.get(other.id, namespace="/other")).id == other.id


@pytest.mark.sqlite_only  # drops a table behind the server's back
async def test_internal_failure_is_generic_logged_and_survived(
    app: MCPServer[Any], mode: Mode, db_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with connect(app, mode) as client:
        await remember(client, "something to find")
        with sqlite3.connect(db_path) as conn:  # damage the store behind the server's back
            conn.execute("DROP TABLE memory_labels")
        text = await fails(client, "related", {"entity": "anything"})
        assert "internal database error" in text and "pma-mcp doctor" in text
        assert "memory_labels" not in text and "sqlite" not in text.lower()
        assert any(r.exc_info and "memory_labels" in str(r.exc_info[1])
                   for r in caplog.records)
        assert (await schemas(client))  # still serving
        await remember(client, "the server still stores after the failure")


async def test_concurrent_calls_all_succeed(app: MCPServer[Any], mode: Mode) -> None:
    async with connect(app, mode) as client:
        async with anyio.create_task_group() as tg:
            for i in range(20):
                tg.start_soon(remember, client, f"parallel note number {i}")
        assert (await ok(client, "memory_stats"))["total"] == 20


async def test_parallel_reads_writes_and_gc_leave_a_consistent_store(
    app: MCPServer[Any], mode: Mode, settings: Settings
) -> None:
    """No lock in the MCP layer: the store serialises its own writes, so parallel calls of
    every kind succeed and leave the index in step."""
    async with connect(app, mode) as client:
        first = [await remember(client, f"deploy checklist item {i} for the billing service")
                 for i in range(6)]
        async with anyio.create_task_group() as tg:
            for i in range(12):
                note = f"rollout note {i} about billing: {uuid.uuid4().hex}"
                tg.start_soon(remember, client, note)
                tg.start_soon(ok, client, "recall", {"query": "billing rollout"})
            tg.start_soon(ok, client, "forget", {"memory_id": first[0]["id"]})
            tg.start_soon(ok, client, "gc_run")
            tg.start_soon(ok, client, "memory_stats")
        assert (await ok(client, "memory_stats"))["total"] == 6 - 1 + 12
    async with await MemoryService.open(settings, counter=WordEstimate()) as service:
        assert (await service.store.check_consistency()).ok


# --------------------------------------------------------- resources and prompts


async def test_resources_stats_and_memory_by_id(app: MCPServer[Any], mode: Mode) -> None:
    async with connect(app, mode) as client:
        m = await remember(client, "Resource readable note")
        listed = await client.list_resources()
        assert [str(r.uri) for r in listed.resources] == ["ui://pma/memory-view.html",
                                                          "memory://stats"]
        templates = await client.list_resource_templates()
        assert [t.uri_template for t in templates.resource_templates] == ["memory://{id}"]

        stats = await client.read_resource("memory://stats", cache_mode="bypass")
        block = stats.contents[0]
        assert isinstance(block, TextResourceContents)
        assert block.mime_type == "application/json"
        assert json.loads(block.text)["total"] == 1
        one = (await client.read_resource(f"memory://{m['id'][:8]}")).contents[0]
        assert isinstance(one, TextResourceContents)
        assert json.loads(one.text)["content"] == "Resource readable note"
        with pytest.raises(MCPError) as err:
            await client.read_resource("memory://0123456789abcdef")
        assert err.value.error.code == -32602 and "call recall" in err.value.error.message


async def test_recall_topic_prompt_loads_context(app: MCPServer[Any], mode: Mode) -> None:
    async with connect(app, mode) as client:
        await remember(client, "Migrations are numbered by PRAGMA user_version", tags=["db"])
        prompts = (await client.list_prompts()).prompts
        assert [p.name for p in prompts] == ["recall_topic"]
        assert prompts[0].arguments and prompts[0].arguments[0].name == "topic"
        assert prompts[0].arguments[0].required
        got = await client.get_prompt("recall_topic", {"topic": "migrations"})
        message = got.messages[0]
        assert message.role == "user"
        assert isinstance(message.content, TextContent)
        assert "PRAGMA user_version" in message.content.text
        assert "'migrations'" in message.content.text
    async with Client(app, mode=mode) as client:  # without raise_exceptions, as in production
        for args, code in (({"topic": " "}, -32602), ({"topic": "x" * 10_001}, -32602),
                           ({}, None)):
            with pytest.raises(MCPError) as err:
                await client.get_prompt("recall_topic", args)
            assert code is None or err.value.error.code == code
            assert "topic" in err.value.error.message or code is None
        assert (await client.get_prompt("recall_topic", {"topic": "db"})).messages


# ------------------------------------------------------------ lifespan, startup


async def test_one_server_serves_consecutive_connections(app: MCPServer[Any]) -> None:
    async with Client(app) as first:
        await remember(first, "kept across connections")
    async with Client(app, mode="legacy") as second:
        found = await ok(second, "recall", {"query": "connections"})
        assert len(found["results"]) == 1


@pytest.mark.parametrize(
    ("env", "cwd", "expected"),
    [
        ({"PMA_NAMESPACE": "team-x", "CLAUDE_PROJECT_DIR": "/p"}, "work", "team-x"),
        ({"CLAUDE_PROJECT_DIR": "/home/dev/acme"}, "work", "/home/dev/acme"),
        ({}, "work", "<cwd>"),
        ({}, "/", GLOBAL_NAMESPACE),
    ],
)
async def test_namespace_is_resolved_once_at_startup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], cwd: str,
    expected: str,
) -> None:
    for key in ("PMA_NAMESPACE", "CLAUDE_PROJECT_DIR"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("PMA_DB_PATH", str(tmp_path / "ns.db"))
    where = tmp_path / cwd if cwd != "/" else Path("/")
    where.mkdir(exist_ok=True)
    monkeypatch.chdir(where)
    app = build_server(Settings.from_env())
    monkeypatch.chdir(tmp_path)  # later changes of directory do not move the namespace
    async with Client(app, mode="legacy") as c:
        stats = await ok(c, "memory_stats")
    assert stats["namespace"] == (str(where) if expected == "<cwd>" else expected)


def test_banner_names_namespace_and_database_and_hints_on_a_terminal(
    settings: Settings,
) -> None:
    quiet = banner(settings, tty=False)
    assert quiet.count("\n") == 1 and PROJECT in quiet and settings.database in quiet
    loud = banner(settings, tty=True)
    assert loud.startswith(quiet) and "claude mcp add" in loud


def test_main_usage_goes_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert main(["--port", "80"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "usage: pma-mcp" in err and "unexpected argument '--port'" in err


def test_main_refuses_bad_configuration_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PMA_STORAGE", "postgres")
    assert main([]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and "PMA_STORAGE" in err and "Traceback" not in err


def test_the_banner_never_shows_a_database_password() -> None:
    settings = Settings(namespace=PROJECT,
                        database_url="postgresql://alice:hunter2-pw@db.example:5432/memory")
    text = banner(settings, tty=True)
    assert "postgresql://alice@db.example:5432/memory" in text and "hunter2-pw" not in text
