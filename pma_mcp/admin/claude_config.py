"""What Claude Code would run for a project: the MCP servers and hooks that run pma-mcp, from
its settings files and from the plugins it has installed and enabled.

Read the way Claude Code reads them: `.mcp.json` and `.claude/settings{,.local}.json` in the
project, the user's `settings.json` and `.claude.json` (in CLAUDE_CONFIG_DIR when that is
set), and for plugins `plugins/installed_plugins.json` (where each install's copy is) with
`enabledPlugins` from the settings files (local over project over user). A plugin's server
and hooks come from its own manifest, `.mcp.json` and `hooks/hooks.json`. Read-only, and
lenient: a missing or malformed file is a problem to report, never an exception.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pma_mcp import files

MAX_SETTINGS_BYTES = 64_000_000
"""A Claude Code settings file past this is reported, not read (~/.claude.json grows, but not
that far)."""
HOOK_EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "PreCompact")
RUNS_PMA = re.compile(r"pma[-_](mcp|hook)", re.IGNORECASE)


@dataclass(frozen=True)
class Entry:
    """One thing Claude Code runs that runs pma-mcp: an MCP server or a hook handler."""

    where: str
    """Where it is configured, for people: `.mcp.json`, `~/.claude/settings.json`,
    `plugin pma@pma-mcp`, ..."""
    name: str
    """The server's name, or the hook's event."""
    command: str
    scope: str | None = None
    """For a server in a settings file, its `claude mcp` scope; None for plugins and hooks."""


@dataclass(frozen=True)
class Plugin:
    """An installed plugin, for this project, that runs pma-mcp."""

    id: str
    scope: str
    path: Path
    enabled: bool
    servers: tuple[Entry, ...]
    hooks: tuple[Entry, ...]


@dataclass
class ClaudeConfig:
    files: dict[str, Path]
    problems: list[tuple[Path, str]] = field(default_factory=list)
    settings_servers: list[Entry] = field(default_factory=list)
    settings_hooks: list[Entry] = field(default_factory=list)
    plugins: list[Plugin] = field(default_factory=list)
    hooks_disabled_in: Path | None = None

    @property
    def enabled(self) -> list[Plugin]:
        return [p for p in self.plugins if p.enabled]

    @property
    def servers(self) -> list[Entry]:
        """Every server Claude Code would start that runs pma-mcp, plugins' first."""
        return [s for p in self.enabled for s in p.servers] + self.settings_servers

    def hooks(self, event: str) -> list[Entry]:
        return [h for p in self.enabled for h in p.hooks if h.name == event] + [
            h for h in self.settings_hooks if h.name == event]


def read(root: Path, home: Path, config_dir: Path, state_file: Path) -> ClaudeConfig:
    """Claude Code's configuration for the project at `root`."""
    files = {
        "mcp": root / ".mcp.json",
        "project": root / ".claude" / "settings.json",
        "local": root / ".claude" / "settings.local.json",
        "user": config_dir / "settings.json",
        "claude.json": state_file,
    }
    config = ClaudeConfig(files)
    loaded: dict[str, dict[str, Any]] = {}
    for key, path in files.items():
        data = _load(path, config)
        if data is not None:
            loaded[key] = data
    config.settings_servers = list(_settings_servers(loaded, root, short(state_file, home)))
    config.settings_hooks = [
        Entry(short(files[key], home), event, text)
        for key in ("project", "local", "user")
        for event, text in _hook_commands(loaded.get(key, {}).get("hooks"))
    ]
    config.hooks_disabled_in = next((files[k] for k in ("project", "local", "user")
                                     if loaded.get(k, {}).get("disableAllHooks") is True), None)
    enabled: dict[str, object] = {}
    for key in ("user", "project", "local"):  # later files win, as in Claude Code
        block = loaded.get(key, {}).get("enabledPlugins")
        if isinstance(block, dict):
            enabled.update(block)
    registry = _load(config_dir / "plugins" / "installed_plugins.json", config) or {}
    config.plugins = list(_plugins(registry, enabled, root, config))
    return config


def short(path: Path, home: Path) -> str:
    return f"~/{path.relative_to(home)}" if path.is_relative_to(home) else str(path)


def _load(path: Path, config: ClaudeConfig) -> dict[str, Any] | None:
    if not path.exists():
        return None
    try:
        head = files.read_head(path, MAX_SETTINGS_BYTES)  # a FIFO is refused, never waited on
        if head.cut:
            raise files.RefusedFileError(path, f"larger than {MAX_SETTINGS_BYTES:,} bytes")
        text = head.data.decode("utf-8")
    except files.RefusedFileError as exc:
        config.problems.append((path, f"cannot read {path}: {exc.reason}"))
        return None
    except UnicodeDecodeError as exc:
        config.problems.append((path, f"cannot read {path}: {exc}"))
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        config.problems.append((path, f"{path} is not valid JSON ({exc.msg}, line {exc.lineno})"))
        return None
    if not isinstance(data, dict):
        config.problems.append((path, f"{path} does not hold a JSON object"))
        return None
    return data


def command_text(entry: object) -> str:
    """A server entry's or hook handler's command line (`command` and its `args`)."""
    if not isinstance(entry, dict):
        return ""
    args = entry.get("args")
    parts = [str(entry.get("command", ""))]
    if isinstance(args, list):
        parts.extend(str(a) for a in args)
    return " ".join(p for p in parts if p)


def _server_commands(block: object) -> Iterator[tuple[str, str]]:
    """(name, command line) of each server in an `mcpServers` object that runs pma-mcp."""
    if isinstance(block, dict):
        for name, entry in block.items():
            text = command_text(entry)
            if RUNS_PMA.search(text):
                yield str(name), text


def _hook_commands(hooks: object) -> Iterator[tuple[str, str]]:
    """(event, command line) of each handler in a `hooks` object that runs pma-mcp."""
    if not isinstance(hooks, dict):
        return
    for event in HOOK_EVENTS:
        groups = hooks.get(event)
        for group in groups if isinstance(groups, list) else []:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for handler in handlers if isinstance(handlers, list) else []:
                text = command_text(handler)
                if RUNS_PMA.search(text):
                    yield event, text


def _settings_servers(
    loaded: dict[str, dict[str, Any]], root: Path, state: str
) -> Iterator[Entry]:
    blocks: list[tuple[str, str, object]] = [
        (".mcp.json", "project", loaded.get("mcp", {}).get("mcpServers")),
        (f"{state} (user scope)", "user", loaded.get("claude.json", {}).get("mcpServers")),
    ]
    projects = loaded.get("claude.json", {}).get("projects")
    if isinstance(projects, dict) and isinstance(projects.get(str(root)), dict):
        blocks.append((f"{state} (local scope)", "local",
                       projects[str(root)].get("mcpServers")))
    for where, scope, block in blocks:
        for name, text in _server_commands(block):
            yield Entry(where, name, text, scope)


def _plugins(
    registry: dict[str, Any], enabled: dict[str, object], root: Path, config: ClaudeConfig
) -> Iterator[Plugin]:
    """Installs that apply to this project (user scope, or this project's) of plugins that
    run pma-mcp."""
    installs = registry.get("plugins")
    for plugin_id, value in installs.items() if isinstance(installs, dict) else []:
        entries = value if isinstance(value, list) else [value]
        install = next((e for e in entries if isinstance(e, dict) and (
            e.get("scope", "user") == "user" or e.get("projectPath") == str(root))), None)
        if install is None or not isinstance(install.get("installPath"), str):
            continue
        path = Path(install["installPath"])
        label = f"plugin {plugin_id}"
        manifest = _load(path / ".claude-plugin" / "plugin.json", config) or {}
        servers = tuple(Entry(label, name, text) for block in _parts(
            manifest.get("mcpServers"), path / ".mcp.json", "mcpServers", path, config)
            for name, text in _server_commands(block))
        hooks = tuple(Entry(label, event, text) for block in _parts(
            manifest.get("hooks"), path / "hooks" / "hooks.json", "hooks", path, config)
            for event, text in _hook_commands(block))
        if servers or hooks:
            yield Plugin(str(plugin_id), str(install.get("scope", "user")), path,
                         enabled.get(str(plugin_id)) is True, servers, hooks)


def _parts(
    declared: object, default: Path, key: str, root: Path, config: ClaudeConfig
) -> Iterator[object]:
    """A manifest's `mcpServers` or `hooks`: inline objects or paths of files (relative to
    the plugin) holding them, else the plugin's default file; each as the bare object."""
    if declared is None:
        declared = str(default)
    for item in declared if isinstance(declared, list) else [declared]:
        data = _load(root / item, config) if isinstance(item, str) else item
        if isinstance(data, dict):
            yield data.get(key, data) if isinstance(data.get(key), dict) else data
