"""Settings come only from the environment, resolved the same way in every process."""

from __future__ import annotations

from pathlib import Path

import pytest

from pma_mcp.config import Settings, resolve_namespace
from pma_mcp.core.errors import ConfigError
from pma_mcp.core.namespaces import GLOBAL_NAMESPACE


def test_namespace_precedence() -> None:
    env = {"PMA_NAMESPACE": "explicit", "CLAUDE_PROJECT_DIR": "/p"}
    assert resolve_namespace(env, cwd="/c") == "explicit"
    assert resolve_namespace({"CLAUDE_PROJECT_DIR": "/p"}, cwd="/c") == "/p"
    assert resolve_namespace({}, cwd="/c") == "/c"
    assert resolve_namespace({}, cwd="/") == GLOBAL_NAMESPACE
    assert resolve_namespace({"PMA_NAMESPACE": "  "}, cwd="") == GLOBAL_NAMESPACE


def test_namespace_defaults_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert resolve_namespace({}) == str(tmp_path)


def test_defaults_and_overrides(tmp_path: Path) -> None:
    default = Settings.from_env({}, cwd="/x")
    assert default.db_path == Path("~/.pma_store.db").expanduser()
    assert default.storage == "sqlite"
    custom = Settings.from_env(
        {"PMA_DB_PATH": str(tmp_path / "m.db"), "PMA_STORAGE": "memory",
         "PMA_AUTOSAVE": "0", "PMA_REDACT": "false", "PMA_LOG_LEVEL": "debug"}
    )
    assert custom.database == ":memory:"
    assert custom.autosave is False and custom.redact is False
    assert custom.log_level == "DEBUG"


@pytest.mark.parametrize(
    ("key", "value"),
    [("PMA_STORAGE", "postgres"), ("PMA_AUTOSAVE", "maybe"), ("PMA_GC_THRESHOLD", "-1"),
     ("PMA_GC_THRESHOLD", "many")],
)
def test_bad_values_are_refused_with_the_variable_named(key: str, value: str) -> None:
    with pytest.raises(ConfigError, match=key):
        Settings.from_env({key: value})


@pytest.mark.parametrize(
    ("raw", "level", "unknown"),
    [("debug", "DEBUG", None), (" warn ", "WARNING", None), ("", "WARNING", None),
     ("LOUD", "WARNING", "LOUD")],
)
def test_log_level_is_resolved_once_and_never_fatal(
    raw: str, level: str, unknown: str | None
) -> None:
    settings = Settings.from_env({"PMA_LOG_LEVEL": raw})
    assert (settings.log_level, settings.unknown_log_level) == (level, unknown)


def test_a_database_url_is_shown_without_its_password() -> None:
    url = "postgresql://alice:s3cr%40t@db.acme.example:6432/memory?sslmode=require&password=x"
    settings = Settings.from_env({"PMA_DATABASE_URL": url, "PMA_NAMESPACE": "p"})
    assert settings.database_url == url
    assert settings.database == "postgresql://alice@db.acme.example:6432/memory"
    assert settings.store_file is None


def test_a_database_url_that_is_not_postgresql_is_refused() -> None:
    with pytest.raises(ConfigError, match="PostgreSQL URL"):
        Settings.from_env({"PMA_DATABASE_URL": "mysql://db/memory"})
