"""How this pma-mcp is started: the commands hints and fixes print, so they work when copied.

A checkout is started through uv from its folder (without the test toolchain); anything
installed (a wheel in a virtual environment, `uv tool install`, the Claude Code plugin's copy)
by its own environment's `pma-mcp`: by name when PATH finds that very script, by path when
not, so a printed command never names a `pma-mcp` that is not there. Every hint the server,
the CLI and `doctor` give comes from here, so they all tell one story.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
import sysconfig
from pathlib import Path
from typing import Any

RELEASED = ("uvx", "pma-mcp")
"""The form for a published release (the server's banner names it; nothing else prints it
while the package is not published)."""
PLUGIN_HOOK = re.compile(r'^"\$\{CLAUDE_PLUGIN_ROOT\}/hooks/pma-hook" (?P<event>[a-z-]+)$')
SCRIPT = "pma-mcp"


def checkout_root() -> Path | None:
    """The source folder this package runs from, if it runs from one: a checkout, or the
    copy of the plugin Claude Code keeps in its plugin cache."""
    root = Path(__file__).resolve().parents[1]
    if (root / "pyproject.toml").is_file() and (root / "hooks" / "pma-hook").is_file():
        return root
    return None


def plugin_copy() -> str | None:
    """The plugin id (`pma@pma-mcp`) when this package runs from the copy Claude Code keeps
    in its plugin cache (`…/plugins/cache/<marketplace>/<plugin>/<version>/`), else None."""
    root = checkout_root()
    if root is None or len(root.parts) < 5:
        return None
    version, plugin, marketplace, cache, plugins = root.parts[:-6:-1]
    if (cache, plugins) != ("cache", "plugins") or not version:
        return None
    return f"{plugin}@{marketplace}"


def server_command() -> list[str]:
    """argv that starts this pma-mcp's MCP server (what an MCP client config should run).

    A checkout runs through uv without the test toolchain (`--no-dev`); anything else
    (a wheel, `uv tool install`, the plugin's copy) runs its own environment's script.
    """
    root = checkout_root()
    if root is not None and plugin_copy() is None:
        return ["uv", "run", "--no-dev", "--project", str(root), SCRIPT]
    return own_script()


def scripts_dir() -> Path:
    """Where this interpreter's environment keeps its console scripts."""
    return Path(sysconfig.get_path("scripts"))


def own_script() -> list[str]:
    """This environment's `pma-mcp`: its name if PATH finds it, its path if not, and
    `python -m pma_mcp` where the environment has no such script."""
    script = scripts_dir() / SCRIPT
    found = shutil.which(SCRIPT)
    if found is not None and Path(found).resolve() == script.resolve():
        return [SCRIPT]
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "pma_mcp"]


def installed() -> bool:
    """Whether `pma-mcp` is on PATH outside this checkout (`uv run` adds the checkout's venv
    to PATH, which Claude Code's hooks do not see)."""
    return on_path(SCRIPT)


def on_path(command: str) -> bool:
    """Whether a shell started the way Claude Code starts one finds `command`: PATH without
    the folders inside this checkout that `uv run` put in front of it."""
    root = checkout_root()
    folders = os.environ.get("PATH", "").split(os.pathsep)
    if root is not None:
        folders = [f for f in folders if f and not Path(f).resolve().is_relative_to(root)]
    return shutil.which(command, path=os.pathsep.join(folders)) is not None


def cli(*args: str) -> str:
    """A shell command line running `pma-mcp ARGS` the way this one was installed."""
    return shlex.join([*server_command(), *args])


def path_fix(home: Path) -> str:
    """A command that puts this pma-mcp on PATH as `pma-mcp`, for settings that run it bare.

    A link in a writable folder on PATH (one in the home folder first); a checkout without
    its environment gets `uv tool install`, which builds one.
    """
    target = scripts_dir() / SCRIPT
    root = checkout_root()
    if not target.is_file():
        if root is not None:
            return f"uv tool install {shlex.quote(str(root))}"
        return f"put {shlex.quote(str(scripts_dir()))} on PATH"
    folders = [Path(p) for p in os.environ.get("PATH", "").split(os.pathsep) if p]
    writable = [f for f in folders if f.is_dir() and os.access(f, os.W_OK | os.X_OK)
                and not f.resolve().is_relative_to(scripts_dir().resolve())]
    writable.sort(key=lambda f: not f.resolve().is_relative_to(home.resolve()))
    if not writable:
        return f"put {shlex.quote(str(scripts_dir()))} on PATH"
    return shlex.join(["ln", "-sf", str(target), str(writable[0] / SCRIPT)])


def upgrade_fix() -> str:
    """How to get a newer pma-mcp, the way this one was installed."""
    root = checkout_root()
    plugin = plugin_copy()
    if plugin is not None:
        return f"claude plugin update {plugin}"
    if root is not None:
        where = shlex.quote(str(root))
        return f"git -C {where} pull && uv sync --project {where}"
    if (Path(sys.prefix) / "uv-receipt.toml").is_file():  # an environment `uv tool` made
        return "uv tool upgrade pma-mcp"
    return f"install a newer pma-mcp into {sys.prefix} the way this one was installed"


def hook_command(event: str) -> str:
    """A settings-file hook command for `event` that never fails the user's session."""
    root = checkout_root()
    if root is not None and plugin_copy() is None:
        if installed():
            return f"pma-mcp hook {event} || true"
        return f"{shlex.quote(str(root / 'hooks' / 'pma-hook'))} {event} || true"
    return f"{shlex.join([*own_script(), 'hook', event])} || true"


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
