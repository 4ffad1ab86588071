"""Which namespaces a tool call may name (issue 11, item 4), and unknown tool arguments.

A tool call may name this project's namespace, the global one and those listed in
PMA_READ_NAMESPACES; anything else is a tool error that says how to allow it and changes
nothing. Checked in-process (the SDK's in-memory Client) and through a real stdio server.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, TextContent

from pma_mcp.config import Settings, namespace_allowed
from pma_mcp.core.budget import WordEstimate
from pma_mcp.server import build_server
from pma_mcp.service import MemoryService
from tests.backends import store_env
from tests.conftest import PROJECT
from tests.reliability import checks

OTHER = "/home/dev/other-project"


def text(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


async def seed_other(store: Settings) -> str:
    async with await MemoryService.open(replace(store, namespace=OTHER),
                                        counter=WordEstimate()) as other:
        added = await other.add("The other project's deploy key rotates monthly")
    return added.memory.id


def test_read_namespaces_are_parsed_canonical_and_matched(tmp_path: Path) -> None:
    real = (tmp_path / "shared-notes").resolve()
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    settings = Settings.from_env({
        "PMA_NAMESPACE": PROJECT,
        "PMA_READ_NAMESPACES": f" locomo/* , {tmp_path}/link/ ,,team",
    })
    assert settings.read_namespaces == ("locomo/*", str(real), "team")
    allowed = [PROJECT, "default", "locomo/conv-26", str(real), "team"]
    refused = [OTHER, "locomo", "team2", "Default", f"{real}-x"]
    assert all(namespace_allowed(settings, n) for n in allowed)
    assert not any(namespace_allowed(settings, n) for n in refused)
    assert Settings.from_env({"PMA_NAMESPACE": PROJECT}).read_namespaces == ()


async def test_another_projects_namespace_is_refused_by_every_tool(
    store_settings: Settings,
) -> None:
    secret = await seed_other(store_settings)
    before = checks.snapshot(store_settings, full=True)
    app = build_server(store_settings, counter=WordEstimate())
    calls: list[tuple[str, dict[str, Any]]] = [
        ("remember", {"content": "planted into the other project"}),
        ("remember", {"content": "a correction", "supersedes": secret}),
        ("recall", {"query": "deploy key"}), ("load_context", {"query": "deploy key"}),
        ("gc_preview", {}), ("gc_run", {}), ("memory_stats", {}),
        ("related", {"entity": "deploy"}),
    ]
    async with Client(app, raise_exceptions=True) as client:
        for tool, args in calls:
            for spelling in (OTHER, OTHER + "/", "/home/dev/acme-api/../other-project"):
                result = await client.call_tool(tool, {**args, "namespace": spelling})
                assert result.is_error, (tool, spelling)
                message = text(result)
                assert "PMA_READ_NAMESPACES" in message and PROJECT in message, message
                assert secret not in message
    assert checks.snapshot(store_settings, full=True) == before


async def test_listed_namespaces_and_own_spellings_are_usable(
    store_settings: Settings,
) -> None:
    settings = replace(store_settings, read_namespaces=("locomo/*",))
    app = build_server(settings, counter=WordEstimate())
    async with Client(app, raise_exceptions=True) as client:
        stored = await client.call_tool("remember", {
            "content": "Caroline went to the support group", "namespace": "locomo/conv-26"})
        assert not stored.is_error, text(stored)
        found = await client.call_tool("recall", {"query": "support group",
                                                  "namespace": "locomo/conv-26"})
        assert found.structured_content is not None
        assert len(found.structured_content["results"]) == 1
        own = await client.call_tool("remember", {"content": "own project note",
                                                  "namespace": PROJECT + "/"})
        assert own.structured_content is not None
        assert own.structured_content["namespace"] == PROJECT  # the canonical spelling
        glob = await client.call_tool("memory_stats",
                                      {"namespace": settings.global_namespace})
        assert not glob.is_error
        refused = await client.call_tool("memory_stats", {"namespace": "locomo"})
        assert refused.is_error


async def test_unknown_arguments_are_named_with_the_accepted_ones(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    app = build_server(Settings(db_path=db, namespace=PROJECT), counter=WordEstimate())
    async with Client(app, raise_exceptions=True) as client:
        result = await client.call_tool("remember", {"content": "tagged note", "tag": ["db"]})
        assert result.is_error
        message = text(result)
        assert "'tag' (did you mean 'tags'?)" in message
        assert "Accepted arguments: content, importance, memory_type, tags" in message
        stats = await client.call_tool("memory_stats", {})
        assert stats.structured_content is not None and stats.structured_content["total"] == 0
        bare = await client.call_tool("gc_preview", {"dry": True})
        assert bare.is_error and "Accepted arguments: namespace" in text(bare)


async def test_stdio_server_honours_pma_read_namespaces(
    tmp_path: Path, store_settings: Settings
) -> None:
    await seed_other(store_settings)
    project = tmp_path / "acme"
    project.mkdir()
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "pma_mcp"], cwd=str(project),
        env={**store_env(store_settings), "PMA_READ_NAMESPACES": "locomo/*",
             "HOME": str(tmp_path), "TIKTOKEN_CACHE_DIR": ""},
    )
    async with Client(params) as client:
        refused = await client.call_tool("recall", {"query": "deploy key", "namespace": OTHER})
        assert refused.is_error and "PMA_READ_NAMESPACES" in text(refused)
        listed = await client.call_tool("remember", {"content": "a benchmark turn",
                                                     "namespace": "locomo/conv-1"})
        assert not listed.is_error, text(listed)
        typo = await client.call_tool("recall", {"query": "turn", "tag": ["x"]})
        assert typo.is_error and "did you mean 'tags'?" in text(typo)


@pytest.mark.parametrize("name", ["locomo/*", "*"])
def test_a_star_entry_allows_a_family(name: str) -> None:
    settings = Settings(namespace=PROJECT, read_namespaces=(name,))
    assert namespace_allowed(settings, "locomo/conv-1")
