"""`pma-mcp doctor`: the store (where it is, whether it opens, its schema, its integrity and
its index), token counting, the namespace, Claude Code's configuration (claude_setup.py) and
whether a running server answers the context hooks (runtime.py).

Read-only: doctor never creates or migrates the store it checks, nor edits a settings file.
"""

from __future__ import annotations

import os
import shlex
import socket
import sys
from pathlib import Path

from pma_mcp import launch, runtime
from pma_mcp.admin import claude_setup
from pma_mcp.config import Settings
from pma_mcp.core.errors import DatabaseDamagedError, StorageError
from pma_mcp.core.models import Finding
from pma_mcp.core.namespaces import GLOBAL_NAMESPACE
from pma_mcp.gitconfig import NAMESPACE_PREFIX
from pma_mcp.store import Store
from pma_mcp.store.sqlite import db
from pma_mcp.store.sqlite.schema import SCHEMA_VERSION
from pma_mcp.store.sqlite.store import SQLiteStore


async def check(settings: Settings, *, cwd: Path, home: Path) -> list[Finding]:
    """Every check, in the order people read them: the store, tokens, the namespace, and
    Claude Code's configuration of the project Claude Code would start in from `cwd`."""
    root = claude_setup.project_root(cwd, home)
    findings, count = await store_findings(settings)
    findings.append(_token_finding())
    findings.extend(_namespace_findings(settings.namespace, count, cwd, root))
    findings.extend(claude_setup.findings(root, cwd, home))
    findings.append(handoff_finding(settings))
    return findings


async def store_findings(settings: Settings) -> tuple[list[Finding], int | None]:
    """DB path, file mode, schema, integrity, index — read-only: doctor never creates or
    migrates the store it is checking. Also returns how many memories the namespace holds."""
    if settings.database_url:
        return await _postgres_findings(settings.database_url, settings.database,
                                        settings.namespace)
    if settings.storage == "memory":
        return [Finding("database", "warn", "PMA_STORAGE=memory: nothing is kept after "
                        "the process exits", "unset PMA_STORAGE to keep memories on disk")], None
    path = settings.db_path
    if not path.exists():
        return [_missing_db(path)], None
    if not path.is_file():
        return [Finding("database", "fail", f"{path} is not a file",
                        "set PMA_DB_PATH to a file path")], None
    findings = [Finding("database", "ok", f"{path} ({_size(path.stat().st_size)})")]
    findings.extend(_mode_findings(path))
    if not os.access(path, os.R_OK | os.W_OK):
        findings.append(Finding("access", "fail", f"you cannot read and write {path}",
                                f"chown $USER {path} && chmod 600 {path}"))
        return findings, None
    store, count = await _sqlite_findings(path, settings.namespace)
    return findings + store, count


async def _postgres_findings(
    url: str, shown: str, namespace: str
) -> tuple[list[Finding], int | None]:
    """Connection, schema, index of a PostgreSQL store; `shown` is the URL without password."""
    from pma_mcp.store.postgres import schema
    from pma_mcp.store.postgres.store import PostgresStore

    try:
        store = await PostgresStore.open_existing(url)
        version = await store.schema_version()
    except StorageError as exc:
        return [Finding("database", "fail", str(exc),
                        "check that the server runs and PMA_DATABASE_URL names it; give the "
                        "password with PGPASSWORD or ~/.pgpass, not in the URL")], None
    try:
        findings = [Finding("database", "ok", f"PostgreSQL at {shown}"),
                    _schema_finding(version, schema.SCHEMA_VERSION)]
        if version == 0 or version > schema.SCHEMA_VERSION:
            return findings, None
        findings.append(Finding("integrity", "ok", "the server checks its own pages "
                                "(checksums, WAL); nothing to check from here"))
        if version < schema.SCHEMA_VERSION:
            return findings, None
        findings.append(await _index_finding(store, shown))
        return findings, await store.count(namespace)
    except StorageError as exc:
        return [*findings, Finding("database", "fail", str(exc), "retry; if it persists, "
                                   "check the server's log")], None
    finally:
        await store.close()


def _missing_db(path: Path) -> Finding:
    parent = next((p for p in path.parents if p.exists()), Path("/"))
    if os.access(parent, os.W_OK | os.X_OK):
        return Finding("database", "ok",
                       f"{path} does not exist yet; it is created (mode 0600) on first use")
    return Finding("database", "fail", f"{path} cannot be created: {parent} is not writable",
                   "set PMA_DB_PATH to a writable location")


def _size(n: int) -> str:
    if n < 1024:
        return f"{n:,} bytes"
    value = n / 1024
    for unit in ("KB", "MB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


def _mode_findings(path: Path) -> list[Finding]:
    if os.name != "posix":
        return []
    loose = []
    for candidate in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        if candidate.exists() and candidate.stat().st_mode & 0o077:
            loose.append(f"{candidate.name} {candidate.stat().st_mode & 0o777:04o}")
    if not loose:
        return [Finding("file mode", "ok", "0600: only you can read your memories")]
    return [Finding("file mode", "warn",
                    f"other users may read your memories ({', '.join(loose)})",
                    f"chmod 600 {path}*")]


async def _sqlite_findings(path: Path, namespace: str) -> tuple[list[Finding], int | None]:
    try:
        store = await SQLiteStore.open_read_only(path)
    except StorageError as exc:
        return [Finding("open", "fail", str(exc), "check the path and its permissions")], None
    try:
        version = await store.schema_version()
        findings = [_schema_finding(version, SCHEMA_VERSION)]
        if version == 0 or version > SCHEMA_VERSION:
            return findings, None
        integrity = await _integrity_finding(store, path)
        findings.append(integrity)
        if version < SCHEMA_VERSION or integrity.status == "fail":
            return findings, None
        findings.append(await _index_finding(store, path))
        return findings, await store.count(namespace)
    except StorageError as exc:
        detail = exc.detail if isinstance(exc, DatabaseDamagedError) else str(exc)
        return [Finding("sqlite", "fail", f"{path} is not a usable SQLite database: {detail}",
                        "move it aside (or set PMA_DB_PATH elsewhere); a new store is created "
                        "on first use")], None
    finally:
        await store.close()


def _schema_finding(version: int, current: int) -> Finding:
    if version == current:
        return Finding("schema", "ok", f"version {version} (current)")
    if version > current:
        return Finding("schema", "fail",
                       f"version {version} is newer than this pma-mcp understands ({current})",
                       launch.upgrade_fix())
    if version == 0:
        return Finding("schema", "ok", "empty store; the schema is created on first use")
    return Finding("schema", "warn", f"version {version}, current is {current}",
                   "nothing to do: it is migrated automatically the next time it is opened "
                   "(e.g. by `pma-mcp stats`)")


async def _integrity_finding(store: Store, path: Path) -> Finding:
    """PRAGMA integrity_check; a failure is recorded so every process stops writing."""
    try:
        result = await store.integrity_check()
    except DatabaseDamagedError as exc:  # a page so damaged the check itself stops
        result = exc.detail
    if result.strip() == "ok":
        cleared = db.damage_recorded(str(path)) is not None
        db.clear_damage(str(path))
        return Finding("integrity", "ok", "PRAGMA integrity_check: ok" + (
            "; the damage recorded earlier is cleared, writes are allowed again"
            if cleared else ""))
    first = result.splitlines()[0] if result else "no answer"
    db.record_damage(str(path), first)
    return Finding("integrity", "fail", f"PRAGMA integrity_check: {first}; writes are refused",
                   "stop running pma-mcp servers, then `pma-mcp doctor --repair` (the "
                   "damaged file is kept beside the new one)")


async def _index_finding(store: Store, path: Path | str) -> Finding:
    c = await store.check_consistency()
    if c.ok:
        return Finding("index", "ok", f"{c.memories:,} memories, {c.fts_rows:,} full-text rows, "
                       "tags and entities in step")
    problems = [f"{len(c.missing_in_fts)} not in the full-text index",
                f"{len(c.orphaned_fts)} orphaned index rows",
                f"{len(c.mismatched)} with stale index or labels"]
    if isinstance(path, str):  # a PostgreSQL store: copy it into a fresh schema
        fix = (f"rebuild: `{launch.cli('migrate', '--to', 'postgresql://…/db?options=-csearch_path%3Dfresh')}`"
               ", then point PMA_DATABASE_URL at the copy")
    else:
        fix = (f"rebuild: `{launch.cli('export', '--all', '-o', 'backup.json')}`, move {path} "
               f"aside, `{launch.cli('import', 'backup.json')}`")
    return Finding("index", "fail", "out of step with the memories: " + ", ".join(problems),
                   fix)


def _token_finding() -> Finding:
    from pma_mcp.core.budget import cl100k_cache_file, load_offline_encoding

    encoding = load_offline_encoding()
    if encoding is not None:
        return Finding("tokens", "ok", f"tiktoken {encoding.name}: exact token counts")
    cache = cl100k_cache_file()
    if cache is None:
        return Finding("tokens", "warn", "tiktoken's cache is disabled (TIKTOKEN_CACHE_DIR is "
                       "empty): token counts are estimated as words × 1.3",
                       "set TIKTOKEN_CACHE_DIR to a directory holding cl100k_base")
    return Finding("tokens", "warn", "tiktoken's cl100k_base is not on disk: token counts are "
                   "estimated as words × 1.3",
                   f"once, with network: {shlex.quote(sys.executable)} -c \"import tiktoken; "
                   f"tiktoken.get_encoding('cl100k_base')\" (caches it as {cache})")


def handoff_finding(settings: Settings) -> Finding:
    """Whether a running pma-mcp server of this install answers the context hooks for their
    processes (hooks/handoff.py), and if not, why. Read-only: a stale socket is only named
    (the next hook that finds it removes it)."""
    alone = "every hook runs in its own process"
    if not runtime.supported():
        return Finding("hand-off", "info", f"no Unix sockets on this system: {alone}")
    if not settings.hook_handoff:
        return Finding("hand-off", "info", f"PMA_HOOK_HANDOFF=0: {alone}")
    if settings.store_file is None and settings.database_url is None:
        return Finding("hand-off", "info", f"an in-memory store (PMA_STORAGE=memory): {alone}")
    folder = runtime.socket_dir()
    if os.path.lexists(folder) and not runtime.private(folder):
        return Finding("hand-off", "warn",
                       f"{folder} is not a folder only this user may enter (owned by this "
                       f"user, mode 0700): no server answers hooks there, so {alone}",
                       f"remove {folder} or fix its owner and mode (the next server recreates "
                       "it), or set PMA_RUNTIME_DIR to a private folder")
    sockets = runtime.sockets_of(folder, runtime.install_key())
    live = [path for path in sockets if _answers(path)]
    if not live:
        stale = f" ({len(sockets)} stale socket(s) of servers that are gone)" if sockets else ""
        return Finding("hand-off", "info",
                       f"no pma-mcp server of this install is running{stale}: the context hooks "
                       "run in their own process until Claude Code starts one")
    pids = ", ".join(str(runtime.pid_of(path)) for path in live)
    same = "" if settings.store_file is not None else ", when their PG* variables are its own"
    return Finding("hand-off", "ok",
                   f"the context hooks are answered by the running server (pid {pids}; "
                   f"sockets in {folder}){same}")


def _answers(path: str) -> bool:
    """A server listens on `path` (connecting and closing without a request is answered with
    nothing: hooks/listener.py)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        try:
            probe.connect(path)
        except OSError:
            return False
    return True


def _namespace_findings(
    namespace: str, count: int | None, cwd: Path, root: Path
) -> list[Finding]:
    here = Settings.from_env({}, cwd=str(cwd)).namespace
    if namespace == here:
        source = ("the global default" if here == GLOBAL_NAMESPACE else
                  "the git remote" if here.startswith(NAMESPACE_PREFIX) else
                  "the working directory")
    else:
        source = "PMA_NAMESPACE or CLAUDE_PROJECT_DIR"
    held = "" if count is None else f"; {count:,} memories there"
    findings = [Finding("namespace", "info", f"{namespace} (from {source}){held}")]
    if namespace == here and root != cwd and Settings.from_env({}, cwd=str(root)).namespace != here:
        findings.append(Finding(
            "namespace", "warn",
            f"Claude Code started in the project root {root} uses namespace {root}, "
            f"not {namespace}",
            f"run pma-mcp from {root}, or pass --namespace {root}",
        ))
    return findings
