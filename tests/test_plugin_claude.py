"""The repository as a Claude Code plugin, checked with the real `claude` CLI (npm).

Everything runs in a throwaway HOME, on a copy of the checkout's files without a virtual
environment (a clean clone), with uv offline: the plugin must start its server from its own
folder with nothing published, as a user who cloned the repository would see it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.node_tools import base_python, node_tool, uv_binary, uv_cache_dir

ROOT = Path(__file__).resolve().parents[1]
CONNECTED = "plugin:pma:pma: "


@pytest.fixture
def clean_clone(tmp_path: Path) -> Path:
    """The files git would check out (tracked plus new, not ignored): no .venv, no caches."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT, capture_output=True, check=False,
    )
    if listed.returncode != 0:
        pytest.skip("not a git checkout: cannot tell which files a clone would hold")
    target = tmp_path / "pma-mcp"
    for name in listed.stdout.decode().split("\0"):
        source = ROOT / name
        if name and source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


@pytest.fixture
def claude_env(tmp_path: Path) -> dict[str, str]:
    claude = node_tool("claude")
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text('{"enableAllProjectMcpServers": true}')
    path = os.pathsep.join([str(Path(uv_binary()).parent), str(Path(claude).parent),
                            "/usr/local/bin", "/usr/bin", "/bin"])
    return {
        "HOME": str(home),
        "PATH": path,
        "UV_CACHE_DIR": uv_cache_dir(),
        "UV_OFFLINE": "1",
        "UV_PYTHON": base_python(),
        "PMA_DB_PATH": str(tmp_path / "store.db"),
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }


def claude(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([node_tool("claude"), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=180, check=False)


def test_plugin_dir_of_a_clean_clone_connects(
    clean_clone: Path, claude_env: dict[str, str], tmp_path: Path
) -> None:
    assert not (clean_clone / ".venv").exists()
    project = tmp_path / "project"
    project.mkdir()
    done = claude(claude_env, "--plugin-dir", str(clean_clone), "mcp", "list", cwd=project)
    line = next((x for x in done.stdout.splitlines() if x.startswith(CONNECTED)), "")
    assert "✔ Connected" in line, done.stdout + done.stderr
    assert "${CLAUDE_PLUGIN_ROOT}" not in line and str(clean_clone) in line


def test_plugin_and_marketplace_validate_strictly(
    clean_clone: Path, claude_env: dict[str, str]
) -> None:
    for manifest in ("plugin.json", "marketplace.json"):
        done = claude(claude_env, "plugin", "validate", "--strict",
                      str(clean_clone / ".claude-plugin" / manifest), cwd=clean_clone)
        assert done.returncode == 0, f"{manifest}: {done.stdout}{done.stderr}"
        assert "Validation passed" in done.stdout


def test_marketplace_add_then_install_gives_a_connected_server_and_four_hooks(
    clean_clone: Path, claude_env: dict[str, str], tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    added = claude(claude_env, "plugin", "marketplace", "add", str(clean_clone), cwd=project)
    assert added.returncode == 0, added.stdout + added.stderr
    name = json.loads((clean_clone / ".claude-plugin" / "marketplace.json").read_text())["name"]
    installed = claude(claude_env, "plugin", "install", f"pma@{name}", cwd=project)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    details = claude(claude_env, "plugin", "details", f"pma@{name}", cwd=project)
    assert "SessionStart, UserPromptSubmit, Stop, PreCompact" in details.stdout, details.stdout
    listed = claude(claude_env, "mcp", "list", cwd=project)
    line = next((x for x in listed.stdout.splitlines() if x.startswith(CONNECTED)), "")
    assert "✔ Connected" in line, listed.stdout + listed.stderr


def test_doctors_server_fix_works_when_copied(
    claude_env: dict[str, str], tmp_path: Path
) -> None:
    """`doctor` says how to add the server; run as printed, Claude Code connects to it."""
    import sys

    project = tmp_path / "acme"
    project.mkdir()
    (project / ".git").mkdir()
    env = {**claude_env, "PMA_PYTHON": sys.executable}
    report = subprocess.run([sys.executable, "-m", "pma_mcp", "doctor", "--json"], cwd=project,
                            env=env, capture_output=True, text=True, check=False)
    finding = next(f for f in json.loads(report.stdout)["findings"]
                   if f["check"] == "mcp server")
    assert finding["status"] == "warn" and finding["fix"].startswith("claude mcp add")
    added = subprocess.run(["sh", "-c", finding["fix"]], cwd=project, env=env,
                           capture_output=True, text=True, timeout=120, check=False)
    assert added.returncode == 0, added.stderr
    listed = claude(env, "mcp", "list", cwd=project)
    line = next((x for x in listed.stdout.splitlines() if x.startswith("pma: ")), "")
    assert "✔ Connected" in line, listed.stdout + listed.stderr
