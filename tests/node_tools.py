"""Where the tests find the real Node tools (`claude`, `mcp-server-memory`).

.ci/run installs them with npm into NODE_TOOLS_DIR; a developer can run the same command, or
have them on PATH. A test that needs a missing tool is skipped with one reason naming it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

NODE_TOOLS_DIR = Path(
    os.environ.get("PMA_NODE_TOOLS")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pma-mcp-ci" / "node"
)
INSTALL_HINT = "bash .ci/run installs it (npm install --prefix ~/.cache/pma-mcp-ci/node ...)"


def node_tool(name: str) -> str:
    """The path of a Node tool, or skip the test with the reason."""
    local = NODE_TOOLS_DIR / "node_modules" / ".bin" / name
    if local.exists():
        return str(local)
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed: {INSTALL_HINT}")
    return found


def uv_binary() -> str:
    """The uv on PATH (its folder goes on the PATH Claude Code gets)."""
    found = shutil.which("uv")
    if found is None:
        pytest.skip("uv is not on PATH")
    return found


def uv_cache_dir() -> str:
    """The developer's uv cache: `uv sync` filled it, so uv can resolve the project offline."""
    out = subprocess.run([uv_binary(), "cache", "dir"], capture_output=True, text=True,
                         check=True)
    return out.stdout.strip()


def base_python() -> str:
    """The interpreter behind this venv, for uv to build a fresh environment with."""
    return os.path.realpath(sys.executable)
