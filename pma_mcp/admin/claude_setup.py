"""`pma-mcp doctor`'s checks of Claude Code's configuration: does something run pma-mcp's MCP
server and its four hooks (a settings file or an enabled plugin), does anything run twice,
and would the commands run.

Every fix is a command for the way this pma-mcp is installed (launch.py), so it works when
copied; what the plugin brings is reported as present, never to be added again.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from pathlib import Path

from pma_mcp import launch
from pma_mcp.admin.claude_config import HOOK_EVENTS, ClaudeConfig, Entry, Plugin, read, short
from pma_mcp.config import claude_home, claude_state_file
from pma_mcp.core.models import Finding


def project_root(cwd: Path, home: Path) -> Path:
    """The nearest directory up from `cwd` with Claude Code project files or a .git."""
    for folder in (cwd, *cwd.parents):
        if folder == home:
            break
        if (folder / ".mcp.json").is_file() or (folder / ".claude").is_dir():
            return folder
        if (folder / ".git").exists():
            return folder
    return cwd


def findings(root: Path, cwd: Path, home: Path) -> list[Finding]:
    config = read(root, home, claude_home(), claude_state_file())
    out = [Finding("claude code", "warn", problem, f"fix the JSON in {path}")
           for path, problem in config.problems]
    here = "" if root == cwd else f"cd {shlex.quote(str(root))} && "
    out.extend(_server_findings(config, here, home))
    out.extend(_hooks_findings(config, home))
    if config.hooks_disabled_in is not None:
        out.append(Finding("hooks", "warn",
                           f"disableAllHooks is true in {config.hooks_disabled_in}",
                           "remove disableAllHooks to let the memory hooks run"))
    out.extend(_path_finding(config.settings_servers + config.settings_hooks, home))
    return out


def _enable(plugins: Sequence[Plugin], what: str) -> Finding | None:
    """A disabled install of the plugin: enabling it is the fix, not adding entries."""
    plugin = next((p for p in plugins if not p.enabled), None)
    if plugin is None:
        return None
    return Finding(what, "warn", f"the plugin {plugin.id} runs pma-mcp but is disabled",
                   f"claude plugin enable {plugin.id} --scope {plugin.scope}")


def _server_findings(config: ClaudeConfig, here: str, home: Path) -> list[Finding]:
    servers = config.servers
    if not servers:
        disabled = _enable([p for p in config.plugins if p.servers], "mcp server")
        if disabled is not None:
            return [disabled]
        return [Finding(
            "mcp server", "warn",
            f"no MCP server entry runs pma-mcp (looked in {short(config.files['mcp'], home)}, "
            f"{short(config.files['claude.json'], home)} and the installed plugins)",
            f"{here}claude mcp add --scope project pma -- {launch.cli()}",
        )]
    first = servers[0]
    found = [Finding("mcp server", "ok", f"{first.name!r} in {first.where}: {first.command}")]
    plugin = next((s for s in servers if s.scope is None), None)
    extra = [s for s in servers if s.scope is not None]
    if plugin is not None and extra:
        found.append(Finding(
            "mcp server", "warn",
            f"pma-mcp runs twice: from {plugin.where} and as {_names(extra)}; Claude Code "
            "starts both servers and lists every memory tool twice",
            " && ".join(f"{here}claude mcp remove {shlex.quote(s.name)} --scope {s.scope}"
                        for s in extra),
        ))
    return found


def _names(entries: Sequence[Entry]) -> str:
    return ", ".join(f"{e.name!r} in {e.where}" for e in entries)


def _hooks_findings(config: ClaudeConfig, home: Path) -> list[Finding]:
    hooks = {event: config.hooks(event) for event in HOOK_EVENTS}
    missing = [event for event, found in hooks.items() if not found]
    settings_json = config.files["project"]
    if missing:
        disabled = _enable([p for p in config.plugins if p.hooks], "hooks")
        if disabled is not None:
            return [disabled]
        snippet = launch.settings_hooks(missing)
        return [Finding(
            "hooks", "warn",
            f"no pma-mcp hook for {', '.join(missing)} (looked in "
            f"{short(settings_json, home)}, settings.local.json, "
            f"{short(config.files['user'], home)} and the installed plugins)",
            f"merge into {short(settings_json, home)}: {json.dumps(snippet)}",
        )]
    sources = sorted({e.where for found in hooks.values() for e in found})
    out = [Finding("hooks", "ok", f"{', '.join(hooks)} run pma-mcp ({', '.join(sources)})")]
    doubled = [event for event, found in hooks.items()
               if len({e.where.startswith("plugin ") for e in found}) == 2]
    if doubled:
        plugin = next(e.where for e in hooks[doubled[0]] if e.where.startswith("plugin "))
        files = sorted({e.where for event in doubled for e in hooks[event]
                        if not e.where.startswith("plugin ")})
        out.append(Finding(
            "hooks", "warn",
            f"{', '.join(doubled)} run pma-mcp twice, from {plugin} and from "
            f"{', '.join(files)}: each prompt gets its memories twice",
            f"delete the pma-mcp hooks from {', '.join(files)}; {plugin} brings them",
        ))
    return out


def _path_finding(entries: Sequence[Entry], home: Path) -> list[Finding]:
    """Settings that run a bare `pma-mcp` need it on the PATH Claude Code gives them."""
    bare = any(e.command.split(maxsplit=1)[0] == launch.SCRIPT for e in entries if e.command)
    if bare and not launch.on_path(launch.SCRIPT):
        return [Finding("path", "warn", "your Claude Code settings run `pma-mcp`, which is not "
                        "on PATH", launch.path_fix(home))]
    return []
