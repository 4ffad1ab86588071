"""Commands that hints, docs and doctor print must work when copied.

The settings snippet is generated from hooks/hooks.json; both forms of each hook command (the
plugin's `${CLAUDE_PLUGIN_ROOT}` one and the settings-file one) are run through `sh -c` with
realistic Claude Code input, as Claude Code runs them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pma_mcp import launch
from pma_mcp.hooks import handlers as hooks

ROOT = Path(__file__).resolve().parents[1]


def plugin_commands() -> dict[str, str]:
    data = json.loads((ROOT / "hooks" / "hooks.json").read_text())
    return {event: groups[0]["hooks"][0]["command"] for event, groups in data["hooks"].items()}


def test_plugin_hooks_cover_every_hook_event_through_the_plugin_root() -> None:
    commands = plugin_commands()
    assert set(commands) == {e.claude_event for e in hooks.HANDLERS.values()}
    for event, command in commands.items():
        match = launch.PLUGIN_HOOK.match(command)
        assert match, command
        assert hooks.HANDLERS[match["event"]].claude_event == event


def test_settings_snippet_keeps_matchers_and_timeouts_and_never_fails() -> None:
    plugin = json.loads((ROOT / "hooks" / "hooks.json").read_text())["hooks"]
    snippet = launch.settings_hooks()["hooks"]
    assert set(snippet) == set(plugin)
    for event, groups in snippet.items():
        for mine, theirs in zip(groups, plugin[event], strict=True):
            assert mine.get("matcher") == theirs.get("matcher")
            assert mine["hooks"][0]["timeout"] == theirs["hooks"][0]["timeout"]
            assert mine["hooks"][0]["command"].endswith(" || true")


def run_shell(command: str, env: dict[str, str], payload: dict[str, object]) -> str:
    done = subprocess.run(["sh", "-c", command], input=json.dumps(payload).encode(),
                          capture_output=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.decode()


@pytest.mark.parametrize("form", ["plugin", "settings"])
def test_hook_commands_run_as_claude_code_runs_them(tmp_path: Path, form: str) -> None:
    project = tmp_path / "acme"
    project.mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PMA_DB_PATH":
           str(tmp_path / "store.db"), "PMA_PYTHON": sys.executable,
           "CLAUDE_PROJECT_DIR": str(project)}
    if form == "plugin":
        command = plugin_commands()["SessionStart"].replace("${CLAUDE_PLUGIN_ROOT}", str(ROOT))
    else:
        command = launch.settings_hooks(["SessionStart"])["hooks"]["SessionStart"][0][
            "hooks"][0]["command"]
    subprocess.run([sys.executable, "-m", "pma_mcp", "seed", str(ROOT)], env=env,
                   cwd=project, capture_output=True, check=True)
    out = run_shell(command, env, {"session_id": "s1", "cwd": str(project),
                                   "hook_event_name": "SessionStart", "source": "startup"})
    reply = json.loads(out)
    assert reply["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert reply["hookSpecificOutput"]["additionalContext"]


def test_commands_from_a_checkout_run_the_checkout() -> None:
    assert launch.checkout_root() == ROOT
    assert launch.server_command() == ["uv", "run", "--no-dev", "--project", str(ROOT), "pma-mcp"]
    assert launch.cli("stats") == f"uv run --no-dev --project {ROOT} pma-mcp stats"


def test_hook_help_lists_every_event() -> None:
    done = subprocess.run([sys.executable, "-m", "pma_mcp", "hook", "--help"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0
    for name, event in hooks.HANDLERS.items():
        assert name in done.stdout and event.claude_event in done.stdout


def test_doctors_tiktoken_fix_names_an_interpreter_that_has_tiktoken(tmp_path: Path) -> None:
    """After `uv tool install` the system `python` has no tiktoken; the fix must not say it."""
    import shlex

    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "TIKTOKEN_CACHE_DIR":
           str(tmp_path / "empty"), "PMA_DB_PATH": str(tmp_path / "store.db")}
    done = subprocess.run([sys.executable, "-m", "pma_mcp", "doctor", "--json"], env=env,
                          cwd=tmp_path, capture_output=True, text=True, check=False)
    tokens = next(f for f in json.loads(done.stdout)["findings"] if f["check"] == "tokens")
    assert tokens["status"] == "warn"
    command = shlex.split(tokens["fix"].split(": ", 1)[1].split(" (caches it")[0])
    assert command[0] == sys.executable and command[1] == "-c"
    probe = subprocess.run([command[0], "-c", "import tiktoken"], capture_output=True,
                           check=False)
    assert probe.returncode == 0
