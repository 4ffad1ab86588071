"""Run one behavioural test on each storage backend: SQLite (a file in tmp_path) and PostgreSQL.

A test takes the `store_settings` fixture (conftest.py) to run once per backend; a test that
starts a subprocess (hook, stdio server, CLI) gives it `store_env(settings)`. The PostgreSQL
case skips, with one line at the end of the run saying how to enable it, where no server can
be had (tests/postgres.py).
"""

from __future__ import annotations

from typing import Literal

import pytest

from pma_mcp.config import Settings

Backend = Literal["sqlite", "postgres"]
BACKENDS = (pytest.param("sqlite", id="sqlite"),
            pytest.param("postgres", id="postgres", marks=pytest.mark.postgres))
"""`@pytest.fixture(params=BACKENDS)`; `-m postgres` selects the PostgreSQL cases only."""


def store_env(settings: Settings) -> dict[str, str]:
    """The variables a subprocess needs to open the same store as `settings`.

    PMA_DB_PATH is always set, to the test's own file, so a process that failed to select the
    PostgreSQL store would write into tmp_path, never the user's ~/.pma_store.db. Start from an
    environment without PMA_* (as the hook tests do), so a developer's PMA_DATABASE_URL cannot
    leak into a SQLite case.
    """
    env = {"PMA_DB_PATH": str(settings.db_path)}
    if settings.database_url:
        env["PMA_DATABASE_URL"] = settings.database_url
    return env
