"""The MCP App view through the SDK client: a `ui://` resource with the app MIME type,
linked from recall and inspect, with today's results unchanged for every client."""

from __future__ import annotations

import json
from typing import Any

from mcp.server import MCPServer
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID
from mcp.types import TextContent, TextResourceContents

from pma_mcp.server.mcp_app import APP_URI
from tests.test_server import Mode, app, connect, mode, ok, remember, schemas

__all__ = ["app", "mode"]  # fixtures shared with test_server


async def test_view_is_listed_as_an_app_resource(app: MCPServer[Any], mode: Mode) -> None:
    async with connect(app, mode) as client:
        listed = {str(r.uri): r for r in (await client.list_resources()).resources}
        assert listed[APP_URI].mime_type == APP_MIME_TYPE
        read = await client.read_resource(APP_URI)
        (doc,) = read.contents
        assert isinstance(doc, TextResourceContents) and doc.mime_type == APP_MIME_TYPE
        assert doc.text.startswith("<!doctype html>")
        assert "ui/notifications/tool-result" in doc.text
        assert '"semantic": 0.4' in doc.text  # this server's weights, not a copy in JS
        assert "innerHTML" not in doc.text and "http" not in doc.text  # text only, offline


async def test_recall_and_inspect_link_the_view(app: MCPServer[Any], mode: Mode) -> None:
    async with connect(app, mode) as client:
        tools = await schemas(client)
        for name in ("recall", "inspect"):
            assert tools[name].meta == {"ui": {"resourceUri": APP_URI}}, name
        for name in set(tools) - {"recall", "inspect"}:
            assert not (tools[name].meta or {}).get("ui"), name


async def test_server_advertises_the_apps_extension(app: MCPServer[Any]) -> None:
    """Capability extensions exist from protocol 2026-07-28 on (the SDK's "auto" mode); an
    older client still sees the resource and the tools' links, as the tests above show."""
    async with connect(app, "auto") as client:
        capabilities = client.server_capabilities
        assert capabilities is not None and capabilities.extensions is not None
        assert EXTENSION_ID in capabilities.extensions


async def test_results_are_unchanged_for_clients_without_apps(
    app: MCPServer[Any], mode: Mode
) -> None:
    """The SDK client declares no Apps support: recall is the JSON text plus structured
    content it always was, with no extra blocks."""
    async with connect(app, mode) as client:
        stored = await remember(client, "We chose SQLite with WAL for the store")
        result = await client.call_tool("recall", {"query": "SQLite store"})
        assert len(result.content) == 1 and isinstance(result.content[0], TextContent)
        data = json.loads(result.content[0].text)
        assert data == result.structured_content
        assert [r["id"] for r in data["results"]] == [stored["id"]]
        assert set(data) == {"results"}
        inspected = await ok(client, "inspect", {"memory_id": stored["id"]})
        assert set(inspected) == {"memory", "breakdown", "gc_action", "gc_reason",
                                  "predicted_tier", "lineage"}
