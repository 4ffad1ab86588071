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

from tests.node_tools import base_python, uv_binary

ROOT = Path(__file__).resolve().parents[1]


def uv(*args: str, cwd: Path = ROOT) -> str:
    done = subprocess.run([uv_binary(), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (ROOT / "pyproject.toml").is_file():
        pytest.skip("needs the source tree to build from")
    out = tmp_path_factory.mktemp("dist")
    uv("build", "--wheel", "--offline", "--out-dir", str(out), "--quiet")
    return next(out.glob("pma_mcp-*.whl"))


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("venv")
    pins = where / "requirements.txt"
    uv("export", "--frozen", "--no-dev", "--no-hashes", "--no-emit-project", "--quiet",
       "-o", str(pins))
    uv("venv", "--quiet", "--python", base_python(), str(where / "venv"))
    python = where / "venv" / "bin" / "python"
    uv("pip", "install", "--quiet", "--python", str(python), "-r", str(pins),
       str(wheel))
    return where / "venv"


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
