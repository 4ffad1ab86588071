"""The PostgreSQL server restarting under a running MCP server: the calls caught by it get a
clear, retryable error at worst, the next calls work, and no acknowledged memory is lost."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import TextContent

from pma_mcp.config import Settings
from pma_mcp.core.budget import WordEstimate
from pma_mcp.server import build_server
from tests import postgres
from tests.conftest import PROJECT, FakeClock

pytestmark = pytest.mark.postgres


async def call(client: Client, tool: str, args: dict[str, Any]) -> tuple[bool, str]:
    result = await client.call_tool(tool, args)
    block = result.content[0]
    assert isinstance(block, TextContent)
    return not result.is_error, block.text


@pytest.mark.parametrize("mode", ["immediate", "fast"])
async def test_a_server_restart_mid_session_loses_no_acknowledged_memory(
    postgres_url: str, postgres_cluster: postgres.Cluster, tmp_path: Path, clock: FakeClock,
    mode: str,
) -> None:
    settings = Settings(db_path=tmp_path / "unused.db", namespace=PROJECT,
                        database_url=postgres_url)
    app = build_server(settings, clock=clock, counter=WordEstimate())
    acknowledged: list[str] = []
    async with Client(app, mode="legacy") as client:
        for i in range(3):
            ok, text = await call(client, "remember", {"content": f"before restart {i}"})
            assert ok, text
            acknowledged.append(json.loads(text)["id"])
        postgres_cluster.restart(mode)  # type: ignore[arg-type]
        failures = []
        for i in range(5):
            ok, text = await call(client, "remember", {"content": f"after restart {i}"})
            if ok:
                acknowledged.append(json.loads(text)["id"])
            else:
                failures.append(text)
        # At most the call that met the cut fails, and it says so plainly; then it works.
        assert len(failures) <= 1, failures
        for text in failures:
            assert "could not be reached" in text and "retry it" in text, text
        ok, text = await call(client, "recall", {"query": "", "limit": 50})
        assert ok, text
        stored = {r["id"] for r in json.loads(text)["results"]}
        assert set(acknowledged) <= stored
        assert len(acknowledged) >= 7
