"""The built wheel: only the package, and it serves MCP from a fresh venv with nothing else.

Built with `uv build`, installed (with the locked dependency versions, offline from uv's
cache) into a new virtual environment outside the checkout, then driven by the SDK's stdio
client: what a user of the released package gets.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.installs import ROOT, build_wheel, wheel_venv


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("dist"))


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return wheel_venv(wheel, tmp_path_factory.mktemp("venv"))


def test_wheel_holds_only_the_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    outside = [n for n in names if not n.startswith(("pma_mcp/", "pma_mcp-"))]
    assert not outside, outside
    assert "pma_mcp/server/mcp.py" in names and "pma_mcp/hooks.json" in names
    assert not any(n.startswith(("pma_mcp/tests", "tests/", "benchmarks/")) for n in names)
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), names


def test_installed_wheel_reports_its_version(venv: Path) -> None:
    from pma_mcp import __version__

    done = subprocess.run([str(venv / "bin" / "pma-mcp"), "--version"], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0 and done.stdout.strip() == f"pma-mcp {__version__}"


async def test_installed_wheel_serves_mcp_over_stdio(venv: Path, tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=str(venv / "bin" / "pma-mcp"), args=[], cwd=str(tmp_path),
        env={"PMA_DB_PATH": str(tmp_path / "store.db"), "PMA_NAMESPACE": "wheel-test"},
    )
    async with Client(params, mode="legacy") as client:
        saved = await client.call_tool("remember", {"content": "The wheel serves over stdio"})
        assert not saved.is_error
        found = await client.call_tool("recall", {"query": "wheel stdio"})
        assert not found.is_error
        assert isinstance(found.structured_content, dict)
        results = found.structured_content["results"]
        assert results[0]["content"] == "The wheel serves over stdio"
    # the server ran the installed copy, not this checkout
    origin = subprocess.run([str(venv / "bin" / "python"), "-c",
                             "import pma_mcp; print(pma_mcp.__file__)"],
                            capture_output=True, text=True, cwd=tmp_path, check=True)
    assert str(venv) in origin.stdout and str(ROOT) not in origin.stdout
    assert sys.prefix != str(venv)
