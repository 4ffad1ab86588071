"""The repository as a Claude Code plugin, and `doctor`'s fixes, checked with the real `claude`
CLI (npm) in a throwaway HOME.

The plugin is installed the two ways Claude Code installs one: from a local folder
(`claude plugin marketplace add /path`), which Claude Code runs in place, and from a git
repository (what `marketplace add owner/repo` does with GitHub), served here over HTTP,
which Claude Code copies into its plugin cache and runs from there. Either way the copy
holds only the plugin's files, and the server's environment goes into the plugin's data
folder. uv runs offline; a SessionStart hook is triggered with `claude -p`, which runs the
hooks before it finds there is no login, and is seen in the store as a counted access.

Every fix `doctor` prints is run as printed, from a checkout, from a wheel installed into a
fresh virtual environment, and from the plugin's own environment.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.git_http import commit_all, served
from tests.installs import build_wheel, clean_clone, wheel_venv
from tests.node_tools import base_python, node_tool, uv_binary, uv_cache_dir

PLUGIN = "pma@pma-mcp"
CONNECTED = "plugin:pma:pma: "
PLUGIN_FILES = {".claude-plugin", "LICENSE", "README.md", "hooks", "pma_mcp", "pyproject.toml",
                "uv.lock"}
"""What the plugin's copy holds: its manifest, the hooks, and what uv needs to run the
package (its sources, pyproject.toml, uv.lock, and the README and LICENSE it names)."""
README = "# Acme API\n\n## Running\n\nStart the Acme API with `make run` on port 8080.\n"
CHECKOUT = (sys.executable, "-m", "pma_mcp")


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    return clean_clone(tmp_path / "pma-mcp")


@pytest.fixture
def claude_env(tmp_path: Path) -> dict[str, str]:
    claude = node_tool("claude")
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text('{"enableAllProjectMcpServers": true}')
    (home / ".local" / "bin").mkdir(parents=True)
    path = os.pathsep.join([str(home / ".local" / "bin"), str(Path(uv_binary()).parent),
                            str(Path(claude).parent), "/usr/local/bin", "/usr/bin", "/bin"])
    return {
        "HOME": str(home),
        "PATH": path,
        "UV_CACHE_DIR": uv_cache_dir(),
        "UV_OFFLINE": "1",
        "UV_PYTHON": base_python(),
        "PMA_DB_PATH": str(tmp_path / "store.db"),
        "TIKTOKEN_CACHE_DIR": "",
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with a README section, so SessionStart has a memory to load."""
    folder = tmp_path / "acme"
    (folder / ".git").mkdir(parents=True)
    (folder / "README.md").write_text(README, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wheel = build_wheel(tmp_path_factory.mktemp("dist"))
    return wheel_venv(wheel, tmp_path_factory.mktemp("wheel"))


def claude(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([node_tool("claude"), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=180, check=False)


def server_line(env: dict[str, str], cwd: Path, prefix: str = CONNECTED) -> str:
    listed = claude(env, "mcp", "list", cwd=cwd)
    line = next((x for x in listed.stdout.splitlines() if x.startswith(prefix)), "")
    assert line, listed.stdout + listed.stderr
    return line


def pma(env: dict[str, str], cwd: Path, *args: str,
        command: Sequence[str] = CHECKOUT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*command, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300, check=False)


def doctor(env: dict[str, str], cwd: Path,
           command: Sequence[str] = CHECKOUT) -> dict[str, list[dict[str, Any]]]:
    """check → its findings."""
    done = pma(env, cwd, "doctor", "--json", command=command)
    assert "Traceback" not in done.stderr, done.stderr
    out: dict[str, list[dict[str, Any]]] = {}
    for f in json.loads(done.stdout)["findings"]:
        out.setdefault(f["check"], []).append(f)
    return out


def warnings(report: dict[str, list[dict[str, Any]]], check: str) -> list[dict[str, Any]]:
    return [f for f in report.get(check, []) if f["status"] != "ok"]


def run_fix(fix: str, env: dict[str, str], cwd: Path) -> None:
    """A printed fix, run as a person pastes it into a shell."""
    done = subprocess.run(["sh", "-c", fix], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=180, check=False)
    assert done.returncode == 0, f"{fix}\n{done.stdout}{done.stderr}"


def merge_hooks(fix: str, project: Path) -> None:
    """`merge into .claude/settings.json: {...}`, done into a project without settings."""
    where, _, snippet = fix.partition(": ")
    assert where == f"merge into {project / '.claude' / 'settings.json'}", fix
    (project / ".claude").mkdir(exist_ok=True)
    (project / ".claude" / "settings.json").write_text(snippet, encoding="utf-8")


def seeded(env: dict[str, str], project: Path) -> str:
    """The id of the project's one memory, from its README."""
    done = pma(env, project, "seed", "--json")
    assert done.returncode == 0, done.stderr
    added = json.loads(done.stdout)["added"]
    assert len(added) == 1, added
    return str(added[0]["id"])


def accesses(env: dict[str, str], project: Path, memory_id: str) -> int:
    done = pma(env, project, "inspect", memory_id, "--json")
    assert done.returncode == 0, done.stderr
    return int(json.loads(done.stdout)["memory"]["access_count"])


def session_start_loads(env: dict[str, str], project: Path, memory_id: str) -> None:
    """Start a Claude Code session in `project`: its SessionStart hook loads the memory."""
    before = accesses(env, project, memory_id)
    claude(env, "-p", "hello", cwd=project)  # no login: it stops after the hooks ran
    assert accesses(env, project, memory_id) == before + 1


def installed_copy(env: dict[str, str]) -> Path:
    registry = json.loads((Path(env["HOME"]) / ".claude" / "plugins" /
                           "installed_plugins.json").read_text())
    return Path(registry["plugins"][PLUGIN][0]["installPath"])


def plugin_python(env: dict[str, str]) -> Path:
    """The server's environment, which the plugin keeps in its data folder."""
    return Path(env["HOME"]) / ".claude" / "plugins" / "data" / "pma-pma-mcp" / "venv" / \
        "bin" / "python"


def imported_from(python: Path) -> Path:
    done = subprocess.run([str(python), "-c", "import pma_mcp; print(pma_mcp.__file__)"],
                          cwd="/", capture_output=True, text=True, check=True)
    return Path(done.stdout.strip()).parent


def add_marketplace(env: dict[str, str], source: str, cwd: Path) -> None:
    added = claude(env, "plugin", "marketplace", "add", source, cwd=cwd)
    assert added.returncode == 0, added.stdout + added.stderr
    installed = claude(env, "plugin", "install", PLUGIN, cwd=cwd)
    assert installed.returncode == 0, installed.stdout + installed.stderr


def size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


# ------------------------------------------------------------------- the plugin


def test_plugin_dir_of_a_clean_clone_connects(
    clone: Path, claude_env: dict[str, str], project: Path
) -> None:
    assert not (clone / ".venv").exists()
    done = claude(claude_env, "--plugin-dir", str(clone / "plugin"), "mcp", "list", cwd=project)
    line = next((x for x in done.stdout.splitlines() if x.startswith(CONNECTED)), "")
    assert "✔ Connected" in line, done.stdout + done.stderr
    assert "${CLAUDE_PLUGIN_ROOT}" not in line and str(clone / "plugin") in line
    assert not (clone / "plugin" / ".venv").exists()  # the environment is the plugin's data


def test_plugin_and_marketplace_validate_strictly(
    clone: Path, claude_env: dict[str, str]
) -> None:
    for manifest in (clone / "plugin" / ".claude-plugin" / "plugin.json",
                     clone / ".claude-plugin" / "marketplace.json"):
        done = claude(claude_env, "plugin", "validate", "--strict", str(manifest), cwd=clone)
        assert done.returncode == 0, f"{manifest}: {done.stdout}{done.stderr}"
        assert "Validation passed" in done.stdout


def test_a_checkouts_plugin_copy_leaves_its_environment_caches_and_tests_behind(
    clone: Path, claude_env: dict[str, str], project: Path
) -> None:
    """A developer's checkout as a local marketplace: Claude Code copies the plugin folder
    at install (and runs a local marketplace in place), so nothing else may be in it. (It
    honours no ignore file: .gitignore lists .venv/, which it copied from the root.)"""
    for junk in (".venv/lib/site.py", ".hypothesis/examples/x", ".pytest_cache/v/x"):
        (clone / junk).parent.mkdir(parents=True, exist_ok=True)
        (clone / junk).write_bytes(b"\0" * 1_000_000)
    add_marketplace(claude_env, str(clone), project)
    copy = installed_copy(claude_env)
    assert {p.name for p in copy.iterdir()} <= PLUGIN_FILES | {".in_use"}
    assert not (copy / ".venv").exists() and not (copy / "tests").exists()
    assert size(copy) < 3_000_000, size(copy)
    details = claude(claude_env, "plugin", "details", PLUGIN, cwd=project)
    assert "SessionStart, UserPromptSubmit, Stop, PreCompact" in details.stdout, details.stdout
    line = server_line(claude_env, project)
    assert "✔ Connected" in line and str(clone / "plugin") in line
    assert imported_from(plugin_python(claude_env)).resolve() == (clone / "pma_mcp").resolve()


def test_installed_from_git_the_plugin_runs_from_its_light_copy(
    clone: Path, claude_env: dict[str, str], project: Path
) -> None:
    commit_all(clone)
    with served(clone) as url:
        add_marketplace(claude_env, url, project)
    copy = installed_copy(claude_env)
    assert {p.name for p in copy.iterdir()} <= PLUGIN_FILES | {".in_use"}
    assert size(copy) < 3_000_000, size(copy)
    line = server_line(claude_env, project)
    assert "✔ Connected" in line and f"--project {copy} " in line
    assert imported_from(plugin_python(claude_env)) == copy / "pma_mcp"
    assert not (copy / ".venv").exists()
    memory = seeded(claude_env, project)
    session_start_loads(claude_env, project, memory)  # the hooks run from the copy too

    # doctor, from the plugin's own environment, sees its server and hooks: nothing to add
    report = doctor(claude_env, project, command=[str(plugin_python(claude_env)), "-m",
                                                  "pma_mcp"])
    assert [f["status"] for f in report["mcp server"]] == ["ok"]
    assert PLUGIN in report["mcp server"][0]["detail"]
    assert [f["status"] for f in report["hooks"]] == ["ok"]
    assert "path" not in report


# ----------------------------------------------------------------------- doctor


def test_doctor_sees_an_installed_plugin_and_mends_what_runs_twice_or_not_at_all(
    clone: Path, claude_env: dict[str, str], project: Path, tmp_path: Path
) -> None:
    """Claude Code's state in CLAUDE_CONFIG_DIR: doctor reads the plugin registry there."""
    config = tmp_path / "claude-config"
    config.mkdir()
    (config / "settings.json").write_text('{"enableAllProjectMcpServers": true}')
    env = {**claude_env, "CLAUDE_CONFIG_DIR": str(config)}
    add_marketplace(env, str(clone), project)
    assert (config / "plugins" / "installed_plugins.json").is_file()
    report = doctor(env, project)
    assert not warnings(report, "mcp server") and not warnings(report, "hooks"), report

    # the server added again by hand: doctor says how to remove the second one
    run_fix(f"claude mcp add --scope project pma -- {shlex.join(CHECKOUT)}", env, project)
    twice = warnings(doctor(env, project), "mcp server")
    assert len(twice) == 1 and "runs twice" in twice[0]["detail"], twice
    run_fix(twice[0]["fix"], env, project)
    listed = claude(env, "mcp", "list", cwd=project).stdout
    assert "pma: " not in listed.replace(CONNECTED, "") and CONNECTED in listed
    assert not warnings(doctor(env, project), "mcp server")

    # a hook in a settings file beside the plugin's: doctor names the file to clear
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir(exist_ok=True)
    settings.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": "pma-mcp hook stop || true"}]}]}}))
    doubled = warnings(doctor(env, project), "hooks")
    assert len(doubled) == 1 and "Stop run pma-mcp twice" in doubled[0]["detail"], doubled
    assert doubled[0]["fix"].startswith(f"delete the pma-mcp hooks from {settings};")
    settings.write_text("{}")
    assert not warnings(doctor(env, project), "hooks")

    # disabled: the fix is enabling it, not adding its parts to the settings
    assert claude(env, "plugin", "disable", PLUGIN, cwd=project).returncode == 0
    report = doctor(env, project)
    fixes = {f["fix"] for check in ("mcp server", "hooks") for f in warnings(report, check)}
    assert fixes == {f"claude plugin enable {PLUGIN} --scope user"}, report
    run_fix(fixes.pop(), env, project)
    report = doctor(env, project)
    assert not warnings(report, "mcp server") and not warnings(report, "hooks"), report
    assert "✔ Connected" in server_line(env, project)


def test_doctors_fixes_from_a_checkout_work_when_copied(
    claude_env: dict[str, str], project: Path
) -> None:
    """Run as printed: Claude Code connects to the server, and the hooks run."""
    memory = seeded(claude_env, project)
    report = doctor(claude_env, project)
    server = warnings(report, "mcp server")[0]
    assert server["fix"].startswith("claude mcp add") and "uvx" not in server["fix"]
    assert "--no-dev" in server["fix"]  # the server does not need the test toolchain
    run_fix(server["fix"], claude_env, project)
    assert "✔ Connected" in server_line(claude_env, project, "pma: ")
    merge_hooks(warnings(report, "hooks")[0]["fix"], project)
    session_start_loads(claude_env, project, memory)
    report = doctor(claude_env, project)
    assert not warnings(report, "mcp server") and not warnings(report, "hooks"), report


def test_doctors_fixes_from_a_wheel_install_work_when_copied(
    venv: Path, claude_env: dict[str, str], project: Path
) -> None:
    """A wheel in a fresh virtual environment, not activated: no `uvx` (nothing is
    published), no bare `pma-mcp` (not on PATH); each printed fix runs as printed."""
    installed = [str(venv / "bin" / "pma-mcp")]
    memory = seeded(claude_env, project)
    report = doctor(claude_env, project, command=installed)
    fixes = [f["fix"] for check in report.values() for f in check if f["fix"]]
    assert not any("uvx" in fix for fix in fixes), fixes
    server = warnings(report, "mcp server")[0]["fix"]
    assert server.endswith(f"-- {installed[0]}"), server
    run_fix(server, claude_env, project)
    assert "✔ Connected" in server_line(claude_env, project, "pma: ")

    hooks = warnings(report, "hooks")[0]["fix"]
    commands = [h["command"] for groups in json.loads(hooks.partition(": ")[2])["hooks"].values()
                for g in groups for h in g["hooks"]]
    assert all(c.startswith(f"{installed[0]} hook ") for c in commands), commands
    merge_hooks(hooks, project)
    session_start_loads(claude_env, project, memory)

    # settings written for a `pma-mcp` on PATH: doctor says how to put this one there
    settings = project / ".claude" / "settings.json"
    settings.write_text(settings.read_text().replace(installed[0], "pma-mcp"))
    path = warnings(doctor(claude_env, project, command=installed), "path")
    assert len(path) == 1 and "not on PATH" in path[0]["detail"], path
    run_fix(path[0]["fix"], claude_env, project)
    assert "path" not in doctor(claude_env, project, command=installed)
    session_start_loads(claude_env, project, memory)
