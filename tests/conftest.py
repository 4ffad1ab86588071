"""Shared fixtures: real SQLite files in tmp_path, a controllable clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pma_mcp.budget import WordEstimate
from pma_mcp.config import Settings
from pma_mcp.service import MemoryService

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


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One visible line when the browser tests were skipped for want of a Chromium."""
    from tests.browser import INSTALL_HINT

    for report in terminalreporter.stats.get("skipped", []):
        if INSTALL_HINT in str(getattr(report, "longrepr", "")):
            terminalreporter.write_line(INSTALL_HINT, yellow=True)
            return
