"""How this pma-mcp is started: the commands hints and fixes print, so they work when copied.

A checkout (editable install, `uv run`) is started through uv from its folder; an installed
command (`uv tool install`) by name; otherwise the released package through uvx. Every hint
the server, the CLI and `doctor` give comes from here, so they all tell one story.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

RELEASED = ("uvx", "pma-mcp")
"""The form for a published release."""
PLUGIN_HOOK = re.compile(r'^"\$\{CLAUDE_PLUGIN_ROOT\}/hooks/pma-hook" (?P<event>[a-z-]+)$')


def checkout_root() -> Path | None:
    """The source checkout this package runs from, if it runs from one."""
    root = Path(__file__).resolve().parents[1]
    if (root / "pyproject.toml").is_file() and (root / "hooks" / "pma-hook").is_file():
        return root
    return None


def server_command() -> list[str]:
    """argv that starts this pma-mcp's MCP server (what an MCP client config should run)."""
    root = checkout_root()
    if root is not None:
        return ["uv", "run", "--project", str(root), "pma-mcp"]
    if installed():
        return ["pma-mcp"]
    return list(RELEASED)


def installed() -> bool:
    """Whether `pma-mcp` is on PATH outside this checkout (`uv run` adds the checkout's venv
    to PATH, which Claude Code's hooks do not see)."""
    found = shutil.which("pma-mcp")
    if found is None:
        return False
    root = checkout_root()
    return root is None or not Path(found).resolve().is_relative_to(root)


def cli(*args: str) -> str:
    """A shell command line running `pma-mcp ARGS` the way this one was installed."""
    return shlex.join([*server_command(), *args])


def install_fix() -> str:
    """The command that puts `pma-mcp` on PATH for hooks."""
    root = checkout_root()
    return f"uv tool install {shlex.quote(str(root))}" if root else "uv tool install pma-mcp"


def upgrade_fix() -> str:
    """How to get a newer pma-mcp, the way this one was installed."""
    root = checkout_root()
    if root is None:
        return "uv tool upgrade pma-mcp"
    where = shlex.quote(str(root))
    return f"git -C {where} pull && uv sync --project {where}"


def hook_command(event: str) -> str:
    """A settings-file hook command for `event` that never fails the user's session."""
    root = checkout_root()
    if root is not None and not installed():
        return f"{shlex.quote(str(root / 'hooks' / 'pma-hook'))} {event} || true"
    return f"pma-mcp hook {event} || true"


def plugin_hooks() -> dict[str, Any]:
    """hooks/hooks.json, the plugin's hooks: the one definition of events, matchers, timeouts.

    In a checkout it is read from hooks/; a wheel carries a copy as pma_mcp/hooks.json.
    """
    packaged = Path(__file__).with_name("hooks.json")
    root = checkout_root()
    path = root / "hooks" / "hooks.json" if root is not None else packaged
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def settings_hooks(events: list[str] | None = None) -> dict[str, Any]:
    """The `hooks` object to merge into a settings file, generated from hooks/hooks.json.

    Same events, matchers and timeouts as the plugin; each command becomes `hook_command`.
    `events` (Claude Code names, e.g. "Stop") keeps only those.
    """
    out: dict[str, Any] = {}
    for event, groups in plugin_hooks()["hooks"].items():
        if events is not None and event not in events:
            continue
        out[event] = [
            {**group, "hooks": [_settings_handler(h) for h in group["hooks"]]}
            for group in groups
        ]
    return {"hooks": out}


def _settings_handler(handler: dict[str, Any]) -> dict[str, Any]:
    match = PLUGIN_HOOK.match(str(handler.get("command", "")))
    if match is None:
        return dict(handler)
    return {**handler, "command": hook_command(match["event"])}
