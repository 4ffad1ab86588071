"""Settings from the environment — the only module that reads PMA_* / CLAUDE_* variables
(but PMA_RUNTIME_DIR, read by hooks/handoff.py before anything else is imported).

Everything else receives a `Settings` value, so tests build one directly and two processes
(server and hook) given the same environment resolve the same database and namespace.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

from pma_mcp.core.errors import ConfigError
from pma_mcp.core.namespaces import GLOBAL_NAMESPACE, canonical_namespace
from pma_mcp.core.scoring import Weights
from pma_mcp.core.validation import (
    MAX_AUTHOR_CHARS,
    MAX_NAMESPACE_CHARS,
    author_text,
    namespace_name,
)
from pma_mcp.identity import Identity, home_dir, identify, os_user, person_key

DEFAULT_DB_PATH = "~/.pma_store.db"

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
LOG_LEVELS: tuple[LogLevel, ...] = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def log_level(raw: str) -> LogLevel | None:
    """A PMA_LOG_LEVEL value as a logging level name (WARN is WARNING), or None if unknown.

    Unknown is not an error: a typo in a log setting must not stop a hook or the server.
    """
    name = raw.strip().upper()
    name = "WARNING" if name == "WARN" else name
    for level in LOG_LEVELS:
        if name == level:
            return level
    return None




@dataclass(frozen=True)
class Settings:
    """Resolved configuration for one process."""

    db_path: Path = field(default_factory=lambda: Path(DEFAULT_DB_PATH).expanduser())
    storage: Literal["sqlite", "memory"] = "sqlite"
    database_url: str | None = None
    """PMA_DATABASE_URL: a postgresql:// URL selects the PostgreSQL store (see docs/TEAM.md);
    unset, the SQLite file at db_path is the store."""
    namespace: str = GLOBAL_NAMESPACE
    namespace_is_fallback: bool = False
    """True when no project could be told (no PMA_NAMESPACE, no project dir, cwd "/")."""
    log_level: LogLevel = "WARNING"
    unknown_log_level: str | None = None
    """The PMA_LOG_LEVEL value that was not a level (WARNING is used); callers warn once."""
    weights: Weights = field(default_factory=Weights)
    autosave: bool = True
    digest: bool = True
    """PMA_DIGEST: the Stop and PreCompact hooks store a digest of each exchange's tool calls
    (files, commands, tests) with it; off, an exchange is its prompt and reply only."""
    redact: bool = True
    autosave_gc_threshold: int = 80
    hook_min_similarity: float = 0.55
    """The prompt hook's relevance floor on semantic_similarity (see hooks.py)."""
    hook_handoff: bool = True
    """PMA_HOOK_HANDOFF: a running MCP server answers the context hooks for their processes
    (hooks/handoff.py); off, the server opens no socket and every hook runs itself."""
    read_namespaces: tuple[str, ...] = ()
    """PMA_READ_NAMESPACES: other namespaces a tool call may name (`prefix/*` for a family)."""
    author: str | None = None
    """Who stores memories here: PMA_AUTHOR, else git's user.email, else the OS user."""
    shared_global_namespace: str | None = None
    """PMA_GLOBAL_NAMESPACE: a global namespace the team shares (see `global_namespace`)."""
    path_namespaces: tuple[str, ...] = ()
    """Path namespaces this project had before it was named by its git remote: the service
    moves their memories into `namespace` when it opens the store (MemoryService.open)."""

    @property
    def global_namespace(self) -> str:
        """This person's namespace of rules that apply everywhere, read beside the project's.

        One person on SQLite: "default". On a shared database "default" would be every
        member's rules at once, so each person has `default/<author>` unless the team set
        PMA_GLOBAL_NAMESPACE to share one.
        """
        if self.shared_global_namespace:
            return self.shared_global_namespace
        if self.database_url is None:
            return GLOBAL_NAMESPACE
        return f"{GLOBAL_NAMESPACE}/{person_key(self.author)}"

    def someone_elses(self, namespace: str) -> bool:
        """Whether `namespace` is another member's personal one on a shared database
        (`default/<someone else>`): listed to nobody else, opened by nobody else."""
        return (self.database_url is not None and namespace.startswith(f"{GLOBAL_NAMESPACE}/")
                and namespace != self.global_namespace)

    @property
    def store_file(self) -> Path | None:
        """The SQLite file that is the store; None for PostgreSQL or PMA_STORAGE=memory."""
        return self.db_path if self.storage == "sqlite" and not self.database_url else None

    @property
    def database(self) -> str:
        """The store for people and for SQLite's connect: the file path, ':memory:' for
        PMA_STORAGE=memory, or the PostgreSQL URL without its password."""
        if self.database_url:
            return url_without_password(self.database_url)
        return ":memory:" if self.storage == "memory" else str(self.db_path)

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, *, cwd: str | None = None
    ) -> Settings:
        """Build settings from `env` (default: os.environ); `cwd` is the hook input's cwd."""
        env = os.environ if env is None else env
        storage = env.get("PMA_STORAGE", "sqlite").strip().lower() or "sqlite"
        if storage not in ("sqlite", "memory"):
            raise ConfigError(f"PMA_STORAGE must be 'sqlite' or 'memory', got {storage!r}")
        raw_path = env.get("PMA_DB_PATH", "").strip() or DEFAULT_DB_PATH
        namespace = resolve_namespace(env, cwd=cwd)
        team = team_settings(env, cwd=cwd, path_namespace=namespace)
        raw_level = env.get("PMA_LOG_LEVEL", "").strip() or "WARNING"
        level = log_level(raw_level)
        return cls(
            db_path=Path(raw_path).expanduser(),
            database_url=database_url(env),
            storage="memory" if storage == "memory" else "sqlite",
            namespace_is_fallback=namespace == GLOBAL_NAMESPACE
            and env.get("PMA_NAMESPACE", "").strip() != GLOBAL_NAMESPACE,
            **team,
            log_level=level or "WARNING",
            unknown_log_level=None if level else raw_level,
            weights=_weights_from_env(env),
            autosave=_flag(env, "PMA_AUTOSAVE", default=True),
            digest=_flag(env, "PMA_DIGEST", default=True),
            redact=_flag(env, "PMA_REDACT", default=True),
            autosave_gc_threshold=_int(env, "PMA_GC_THRESHOLD", default=80),
            hook_min_similarity=_unit(env, "PMA_HOOK_MIN_SIMILARITY", default=0.55),
            hook_handoff=_flag(env, "PMA_HOOK_HANDOFF", default=True),
            read_namespaces=_namespace_list(env, "PMA_READ_NAMESPACES"),
        ).for_person()

    def for_person(self) -> Settings:
        """The global namespace as this person's: "default" (no project, or PMA_NAMESPACE=
        default) becomes `global_namespace`, which is "default" itself on SQLite."""
        if self.namespace != GLOBAL_NAMESPACE or self.global_namespace == GLOBAL_NAMESPACE:
            return self
        return dataclasses.replace(self, namespace=self.global_namespace)


def team_settings(
    env: Mapping[str, str], *, cwd: str | None, path_namespace: str
) -> dict[str, Any]:
    """The Settings fields for team use: the namespace (the git remote's over the path one),
    the author, the shared global namespace. Reads git's files once (identity.identify)."""
    start = project_dir(env, cwd=cwd)
    found = identify(start if start and os.path.isabs(start) else None, env, home_dir(env))
    fields: dict[str, Any] = {"namespace": path_namespace, "author": _author(env, found),
                              "shared_global_namespace": None}
    shared = env.get("PMA_GLOBAL_NAMESPACE", "").strip()
    if shared:
        fields["shared_global_namespace"] = _namespace_setting("PMA_GLOBAL_NAMESPACE", shared)
    if found.namespace and not env.get("PMA_NAMESPACE", "").strip():
        older = (path_namespace, canonical_namespace(str(found.root)) if found.root else "")
        fields["namespace"] = found.namespace
        fields["path_namespaces"] = tuple(
            dict.fromkeys(n for n in older if n and n not in (found.namespace, GLOBAL_NAMESPACE)))
    return fields


def _author(env: Mapping[str, str], found: Identity) -> str | None:
    raw = env.get("PMA_AUTHOR", "")
    if raw.strip():
        author = author_text(raw)
        if author is None:
            raise ConfigError(
                f"PMA_AUTHOR must be one line of at most {MAX_AUTHOR_CHARS} printable "
                "characters (a name or an email address)")
        return author
    return found.email or os_user()


def _namespace_setting(key: str, raw: str) -> str:
    name = canonical_namespace(raw)
    if not namespace_name(name):
        shown = raw if len(raw) <= 80 else raw[:80] + "…"
        raise ConfigError(f"{key} must be a namespace name on one line of at most "
                          f"{MAX_NAMESPACE_CHARS:,} printable characters, got {shown!r}")
    return name


def project_dir(env: Mapping[str, str], *, cwd: str | None = None) -> str | None:
    """The project's directory (canonical): CLAUDE_PROJECT_DIR as given, else the working
    directory unless that is "/" (Claude Desktop); None when there is none."""
    value = env.get("CLAUDE_PROJECT_DIR", "").strip()
    if value:
        return canonical_namespace(value)
    if cwd is None:
        try:
            cwd = os.getcwd()
        except OSError:
            return None
    folder = canonical_namespace(cwd)
    return folder if folder and folder != "/" else None


POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def url_without_password(url: str) -> str:
    """`url` as it may be shown: no password, no query string (it may hold `password=`):
    postgresql://user@host:port/db."""
    try:
        parts = urlsplit(url)
        userinfo, at, host = parts.netloc.rpartition("@")
        user = userinfo.partition(":")[0] if at else ""
        return urlunsplit((parts.scheme, f"{user}@{host}" if user else host, parts.path, "", ""))
    except ValueError:
        return "postgresql://(unparsable URL)"


def url_passwords(url: str) -> list[str]:
    """The password(s) `url` carries, raw and percent-decoded."""
    found: list[str] = []
    try:
        parts = urlsplit(url)
        userinfo, at, _ = parts.netloc.rpartition("@")
        if at and ":" in userinfo:
            found.append(userinfo.partition(":")[2])
        found += [v for k, v in parse_qsl(parts.query, keep_blank_values=True)
                  if k.lower() == "password"]
    except ValueError:
        pass
    return [s for raw in found for s in {raw, unquote(raw)} if s]


def database_url(env: Mapping[str, str]) -> str | None:
    """PMA_DATABASE_URL if set: a PostgreSQL URL (libpq conventions), or ConfigError."""
    url = env.get("PMA_DATABASE_URL", "").strip()
    if not url:
        return None
    if not url.startswith(POSTGRES_SCHEMES):
        raise ConfigError(
            "PMA_DATABASE_URL must be a PostgreSQL URL (postgresql://user@host:5432/dbname); "
            "unset it to use the SQLite file at PMA_DB_PATH"
        )
    return url


def claude_home(env: Mapping[str, str] | None = None) -> Path:
    """Claude Code's config folder: CLAUDE_CONFIG_DIR, else ~/.claude (importers read it)."""
    env = os.environ if env is None else env
    configured = env.get("CLAUDE_CONFIG_DIR", "").strip()
    return Path(configured).expanduser() if configured else Path.home() / ".claude"


def claude_state_file(env: Mapping[str, str] | None = None) -> Path:
    """Claude Code's `.claude.json` (user- and local-scope MCP servers): inside
    CLAUDE_CONFIG_DIR when that is set, else ~/.claude.json beside the ~/.claude folder."""
    env = os.environ if env is None else env
    configured = env.get("CLAUDE_CONFIG_DIR", "").strip()
    return (Path(configured).expanduser() if configured else Path.home()) / ".claude.json"


def resolve_namespace(env: Mapping[str, str], *, cwd: str | None = None) -> str:
    """PMA_NAMESPACE → CLAUDE_PROJECT_DIR → working directory → "default".

    The server passes no `cwd` (its own working directory is used); a hook passes the `cwd`
    of its input, which is the directory Claude Code runs in, so both land on the same value.
    A working directory of "/" (Claude Desktop) is not a project and maps to "default".
    This is the path namespace; Settings.from_env prefers the git remote's (team_settings).
    """
    value = env.get("PMA_NAMESPACE", "").strip()
    if value:
        return _namespace_setting("PMA_NAMESPACE", value)
    return project_dir(env, cwd=cwd) or GLOBAL_NAMESPACE




def namespace_allowed(settings: Settings, name: str) -> bool:
    """May a tool call name `name` (canonical)? Own, global, or listed in PMA_READ_NAMESPACES.

    An entry ending in "*" allows every namespace that starts with the text before it.
    """
    if name in (settings.namespace, settings.global_namespace):
        return True
    return any(
        name.startswith(entry[:-1]) if entry.endswith("*") else name == entry
        for entry in settings.read_namespaces
    )


def _namespace_list(env: Mapping[str, str], key: str) -> tuple[str, ...]:
    raw = env.get(key, "")
    return tuple(canonical_namespace(p) if not p.strip().endswith("*") else p.strip()
                 for p in raw.split(",") if p.strip())


def _flag(env: Mapping[str, str], key: str, *, default: bool) -> bool:
    raw = env.get(key)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(f"{key} must be one of 1/0/true/false/yes/no/on/off, got {raw!r}")


def _int(env: Mapping[str, str], key: str, *, default: int) -> int:
    raw = env.get(key, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{key} must be a whole number, got {raw!r}") from None
    if value < 0:
        raise ConfigError(f"{key} must not be negative, got {value}")
    return value


def _unit(env: Mapping[str, str], key: str, *, default: float) -> float:
    raw = env.get(key, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{key} must be a number from 0 to 1, got {raw!r}") from None
    if not 0.0 <= value <= 1.0:
        raise ConfigError(f"{key} must be a number from 0 to 1, got {raw!r}")
    return value


def _weights_from_env(env: Mapping[str, str]) -> Weights:
    raw = env.get("PMA_WEIGHTS", "").strip()
    return parse_weights(raw) if raw else Weights()


def parse_weights(raw: str) -> Weights:
    """PMA_WEIGHTS text ("0.4,0.3,0.2,0.1") → Weights, or a ConfigError saying what is wrong."""
    parts = [p.strip() for p in raw.split(",")]
    if len(parts) != 4:
        raise ConfigError(
            "PMA_WEIGHTS must be four comma-separated numbers "
            f"(semantic,importance,recency,access), got {raw!r}"
        )
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise ConfigError(f"PMA_WEIGHTS must hold numbers, got {raw!r}") from None
    try:
        return Weights(*values)
    except ConfigError as exc:
        raise ConfigError(f"PMA_WEIGHTS: {exc}") from None
