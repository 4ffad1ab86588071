"""Shared fixtures: real SQLite files in tmp_path, a real PostgreSQL server, a settable clock."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pma_mcp.config import Settings
from pma_mcp.core.budget import WordEstimate
from pma_mcp.service import MemoryService
from tests import postgres
from tests.backends import BACKENDS, Backend

T0 = 1_800_000_000.0
"""A fixed epoch (2027-01-15) for exact clock arithmetic."""
PROJECT = "/home/dev/acme-api"


@dataclass
class FakeClock:
    """An injectable clock: `now` only moves when a test moves it."""

    now: float = T0

    def __call__(self) -> float:
        return self.now

    def advance(self, hours: float) -> None:
        self.now += hours * 3600.0


@pytest.fixture(autouse=True)
def hook_sockets(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The folder where this test's servers and hooks meet (hooks/handoff.py), its own: a
    hook of one test is never answered by another test's server. Short, as a socket's path
    must fit in 108 bytes."""
    folder = Path(tempfile.mkdtemp(prefix="pma-run-", dir="/tmp"))
    monkeypatch.setenv("PMA_RUNTIME_DIR", str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


@pytest.fixture
def settings(db_path: Path) -> Settings:
    return Settings(db_path=db_path, namespace=PROJECT)


@pytest.fixture
async def service(settings: Settings, clock: FakeClock) -> AsyncIterator[MemoryService]:
    svc = await MemoryService.open(settings, clock=clock, counter=WordEstimate())
    try:
        yield svc
    finally:
        await svc.close()


# ------------------------------------------------------------------ PostgreSQL (tests/postgres.py)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "postgres: needs a PostgreSQL server (tests/postgres.py)")
    config.addinivalue_line(
        "markers", "sqlite_only: a backend-parametrised module's test of SQLite's own file "
        "(modes, damage, direct SQL): its postgres case is not collected")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Drop the postgres case of tests marked sqlite_only (a deselection, not a skip: there
    is nothing to enable)."""
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        on_postgres = callspec is not None and callspec.params.get("backend") == "postgres"
        (drop if on_postgres and item.get_closest_marker("sqlite_only") else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(scope="session")
def postgres_test_server() -> Iterator[postgres.PgServer]:
    """The session's real server (a throwaway cluster, or PMA_TEST_POSTGRES_URL's); skips
    when none can be had, with one line at the end of the run saying how to get one."""
    reason = postgres.skip_reason()
    if reason:
        pytest.skip(reason)
    with postgres.test_server() as server:
        yield server


@pytest.fixture(scope="session")
def postgres_server(postgres_test_server: postgres.PgServer) -> str:
    """The URL of the session's test database (every test's schema lives in it)."""
    return postgres_test_server.url


@pytest.fixture
def postgres_cluster(postgres_test_server: postgres.PgServer) -> postgres.Cluster:
    """The throwaway cluster itself, for fault tests that restart it; skips on an external
    server. A test that restarts it leaves it running for the tests after it."""
    if postgres_test_server.cluster is None:
        pytest.skip(f"needs the throwaway cluster, not {postgres.URL_ENV}'s server")
    return postgres_test_server.cluster


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A URL whose search_path is a new empty schema of its own, dropped after the test."""
    with postgres.fresh_schema(postgres_server) as url:
        yield url


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Backend:
    """Each storage backend in turn; the postgres case skips without a server."""
    name: Backend = request.param
    return name


@pytest.fixture
def store_settings(backend: Backend, db_path: Path, request: pytest.FixtureRequest) -> Settings:
    """`settings` on each backend: the SQLite file at db_path, or a fresh PostgreSQL schema."""
    if backend == "postgres":
        url: str = request.getfixturevalue("postgres_url")
        return Settings(db_path=db_path, namespace=PROJECT, database_url=url)
    return Settings(db_path=db_path, namespace=PROJECT)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One visible line per kind of test skipped for want of a tool (Chromium, PostgreSQL)."""
    from tests.browser import INSTALL_HINT

    reasons = [_skip_reason(report) for report in terminalreporter.stats.get("skipped", [])]
    if any(INSTALL_HINT in reason for reason in reasons):
        terminalreporter.write_line(INSTALL_HINT, yellow=True)
    for reason in reasons:
        if reason.startswith(postgres.SKIP_PREFIX):
            terminalreporter.write_line(reason, yellow=True)
            return


def _skip_reason(report: pytest.TestReport) -> str:
    """A skip's reason text: longrepr is (path, line, "Skipped: <reason>") for pytest.skip."""
    longrepr = getattr(report, "longrepr", "")
    text = str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return text.removeprefix("Skipped: ")
