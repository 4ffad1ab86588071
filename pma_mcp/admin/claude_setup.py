"""`pma-mcp doctor`'s checks of Claude Code's configuration: is there an MCP server entry
and are there hooks that run pma-mcp, and would those commands run.

Read-only: it reads the project's and the user's settings files and never writes them.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pma_mcp import launch
from pma_mcp.core.models import Finding

HOOK_EVENTS = {
    "SessionStart": "session-start",
    "UserPromptSubmit": "user-prompt-submit",
    "Stop": "stop",
    "PreCompact": "pre-compact",
}
_PMA = re.compile(r"pma[-_]mcp", re.IGNORECASE)


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


def findings(root: Path, home: Path) -> list[Finding]:
    files = {
        "mcp": root / ".mcp.json",
        "project": root / ".claude" / "settings.json",
        "local": root / ".claude" / "settings.local.json",
        "user": home / ".claude" / "settings.json",
        "claude.json": home / ".claude.json",
    }
    loaded: dict[str, dict[str, Any]] = {}
    findings: list[Finding] = []
    for key, path in files.items():
        data, problem = _load_settings(path)
        if problem:
            findings.append(Finding("claude code", "warn", problem,
                                    f"fix the JSON in {path}"))
        if data is not None:
            loaded[key] = data
    servers = list(_servers(loaded, root))
    handlers = {event: list(_hook_handlers(loaded, event, files)) for event in HOOK_EVENTS}
    hooks = {event: sorted({where for where, _ in found}) for event, found in handlers.items()}
    findings.append(_server_finding(servers, files["mcp"]))
    findings.append(_hooks_finding(hooks, files["project"]))
    disabled = [str(files[k]) for k in ("project", "local", "user")
                if loaded.get(k, {}).get("disableAllHooks") is True]
    if disabled:
        findings.append(Finding("hooks", "warn", f"disableAllHooks is true in {disabled[0]}",
                                "remove disableAllHooks to let the memory hooks run"))
    commands = [text for _, _, text in servers]
    commands += [text for found in handlers.values() for _, text in found]
    findings.extend(_path_finding(commands))
    return findings


def _load_settings(path: Path) -> tuple[dict[str, Any] | None, str]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, ""
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"cannot read {path}: {exc}"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"{path} is not valid JSON ({exc.msg}, line {exc.lineno})"
    if not isinstance(data, dict):
        return None, f"{path} does not hold a JSON object"
    return data, ""


def _command_text(entry: object) -> str:
    if not isinstance(entry, dict):
        return ""
    args = entry.get("args")
    parts = [str(entry.get("command", ""))]
    if isinstance(args, list):
        parts.extend(str(a) for a in args)
    return " ".join(p for p in parts if p)


def _servers(loaded: dict[str, dict[str, Any]], root: Path) -> Iterator[tuple[str, str, str]]:
    """(where, server name, command line) of every MCP server entry that runs pma-mcp."""
    blocks: list[tuple[str, object]] = [
        (".mcp.json", loaded.get("mcp", {}).get("mcpServers")),
        ("~/.claude.json (user scope)", loaded.get("claude.json", {}).get("mcpServers")),
    ]
    projects = loaded.get("claude.json", {}).get("projects")
    if isinstance(projects, dict) and isinstance(projects.get(str(root)), dict):
        blocks.append(("~/.claude.json (local scope)", projects[str(root)].get("mcpServers")))
    for where, block in blocks:
        if not isinstance(block, dict):
            continue
        for name, entry in block.items():
            text = _command_text(entry)
            if _PMA.search(text):
                yield where, str(name), text


def _hook_handlers(
    loaded: dict[str, dict[str, Any]], event: str, files: dict[str, Path]
) -> Iterator[tuple[str, str]]:
    """(settings file, command line) of every `event` hook handler that runs pma-mcp."""
    for key in ("project", "local", "user"):
        hooks = loaded.get(key, {}).get("hooks")
        groups = hooks.get(event) if isinstance(hooks, dict) else None
        for group in groups if isinstance(groups, list) else []:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for handler in handlers if isinstance(handlers, list) else []:
                text = _command_text(handler)
                if _PMA.search(text):
                    yield _short(files[key]), text


def _short(path: Path) -> str:
    home = Path.home()
    return f"~/{path.relative_to(home)}" if path.is_relative_to(home) else str(path)


def _server_finding(servers: Sequence[tuple[str, str, str]], mcp_json: Path) -> Finding:
    if servers:
        where, name, text = servers[0]
        return Finding("mcp server", "ok", f"{name!r} in {where}: {text}")
    return Finding(
        "mcp server", "warn",
        f"no MCP server entry runs pma-mcp (looked in {_short(mcp_json)} and ~/.claude.json)",
        f"claude mcp add --scope project pma -- {launch.cli()}",
    )


def _hooks_finding(hooks: dict[str, list[str]], settings_json: Path) -> Finding:
    missing = [event for event, where in hooks.items() if not where]
    if not missing:
        sources = sorted({w for where in hooks.values() for w in where})
        return Finding("hooks", "ok", f"{', '.join(hooks)} run pma-mcp ({', '.join(sources)})")
    snippet = launch.settings_hooks(missing)
    return Finding(
        "hooks", "warn",
        f"no pma-mcp hook for {', '.join(missing)} (looked in {_short(settings_json)}, "
        "settings.local.json and ~/.claude/settings.json; plugin hooks are not checked)",
        f"merge into {_short(settings_json)}: {json.dumps(snippet)}",
    )


def _path_finding(commands: Sequence[str]) -> list[Finding]:
    """Settings that run a bare `pma-mcp` need it on PATH (hooks run through a shell)."""
    bare = any(text.split(maxsplit=1)[0] == "pma-mcp" for text in commands if text)
    if bare and shutil.which("pma-mcp") is None:
        return [Finding("path", "warn", "your Claude Code settings run `pma-mcp`, which is not "
                        "on PATH", launch.install_fix())]
    return []
