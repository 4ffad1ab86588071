"""A real `pma-mcp ui` process for the UI tests, and a store worth looking at.

The server is started as users start it (`python -m pma_mcp ui --port 0`); its URL, with the
run's token, is read from the first stderr line.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from pma_mcp.config import Settings
from pma_mcp.core.budget import WordEstimate
from pma_mcp.service import MemoryService

PROJECT = "/home/dev/acme-api"
XSS = ('Pasted from the chat: <script>document.title="pwned"</script> and '
       '<a href="javascript:alert(1)">click</a> <img src=x onerror="alert(2)">')
DAY = 86_400.0


@dataclass(frozen=True)
class Running:
    url: str  # with ?token=
    token: str
    port: int
    process: subprocess.Popen[str]

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextmanager
def ui_server(db: Path, namespace: str = PROJECT) -> Iterator[Running]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMA_", "CLAUDE_"))}
    env.update({"PMA_DB_PATH": str(db), "PMA_NAMESPACE": namespace})
    proc = subprocess.Popen([sys.executable, "-m", "pma_mcp", "ui", "--port", "0"], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        found = re.search(r"(http://127\.0\.0\.1:(\d+)/\?token=([\w-]+))", line)
        assert found, line + (proc.stderr.read() if proc.poll() is not None else "")
        yield Running(found[1], found[3], int(found[2]), proc)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def seed_store(db: Path, namespace: str = PROJECT) -> dict[str, str]:
    """A small store over three weeks: decisions, rules, auto-saved exchanges, a hostile one.

    Returns ids by role ("decision", "xss", "old_note", ...). Runs in a thread of its own:
    Playwright's sync API keeps an event loop running in the test's thread."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, _seed(db, namespace)).result()


async def _seed(db: Path, namespace: str) -> dict[str, str]:
    now = time.time()
    clock = [now - 21 * DAY]
    settings = Settings(db_path=db, namespace=namespace)
    ids: dict[str, str] = {}
    async with await MemoryService.open(settings, clock=lambda: clock[0],
                                        counter=WordEstimate()) as svc:
        rows = [
            ("decision", "We chose SQLite with WAL for the store: one file, concurrent "
             "readers, no server to run.", 0.8, "semantic", ["db", "decision"], ["pma_mcp/db.py"]),
            ("rule", "Always run the migrations in a transaction; never edit a released "
             "migration.", 0.95, "semantic", ["rule"], ["pma_mcp/repository.py"]),
            ("bug", "Fixed: the stop hook saved the same exchange twice after a resume.", 0.6,
             "episodic", ["bug", "hooks"], ["pma_mcp/hooks.py"]),
            ("old_note", "Scratch: try the payments sandbox key rotation tomorrow.", 0.2,
             "working", ["todo"], []),
            ("xss", XSS, 0.5, "episodic", ["pasted"], []),
        ]
        for i, (role, text, importance, tier, tags, entities) in enumerate(rows):
            clock[0] = now - (20 - i * 4) * DAY
            added = await svc.add(text, importance=importance, memory_type=tier, tags=tags,
                                  linked_entities=entities)
            ids[role] = added.memory.id
        for i in range(12):
            clock[0] = now - (14 - i) * DAY
            added = await svc.add(
                f"User: how do we page the listing? Assistant: keyset pagination by seq, "
                f"step {i}.", importance=0.5, tags=["session", "auto-saved"],
                metadata={"source": "hook:stop"}, session_id="sess-1")
            ids[f"auto{i}"] = added.memory.id
        await svc.add("Prefer British spelling in docs.", importance=0.9,
                      memory_type="semantic", namespace="default")
    return ids


def split(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.path, parts.query


# Module-scoped fixtures for the UI test modules (import them there): one seeded store and
# one server per module, since the tests of a module build on each other's clicks.


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    db = tmp_path_factory.mktemp("ui") / "store.db"
    return db, seed_store(db)


@pytest.fixture(scope="module")
def server(store: tuple[Path, dict[str, str]]) -> Iterator[Running]:
    with ui_server(store[0]) as running:
        yield running


@pytest.fixture(scope="module")
def ids(store: tuple[Path, dict[str, str]]) -> dict[str, str]:
    return store[1]
