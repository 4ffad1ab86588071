"""The CLI and hooks on a PostgreSQL store: doctor is read-only and honest, a hook never
breaks the session when the server is down, and no password is ever shown."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pma_mcp.config import Settings
from pma_mcp.core.budget import WordEstimate
from pma_mcp.service import MemoryService

pytestmark = pytest.mark.postgres

PROJECT = "/home/dev/acme-api"


def doctor(url: str, home: Path) -> tuple[int, dict[str, Any], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMA_", "CLAUDE_"))}
    env.update({"PMA_DATABASE_URL": url, "PMA_NAMESPACE": PROJECT, "HOME": str(home),
                "PMA_DB_PATH": str(home / "unused.db")})
    home.mkdir(exist_ok=True)
    proc = subprocess.run([sys.executable, "-m", "pma_mcp", "doctor", "--json"], env=env,
                          cwd=home, capture_output=True, text=True, check=False)
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def finding(report: dict[str, Any], check: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [f for f in report["findings"] if f["check"] == check]
    assert len(found) == 1, report
    return found[0]


async def test_doctor_checks_a_store_without_creating_one(
    postgres_url: str, tmp_path: Path
) -> None:
    code, report, _ = doctor(postgres_url, tmp_path / "home")
    assert code == 0, report
    assert "schema is created on first use" in finding(report, "schema")["detail"]
    async with await MemoryService.open(Settings(db_path=tmp_path / "x.db", namespace=PROJECT,
                                                 database_url=postgres_url),
                                        counter=WordEstimate()) as service:
        await service.add("The staging database is on port 5433")
    code, report, _ = doctor(postgres_url, tmp_path / "home")
    assert code == 0, report
    assert finding(report, "schema")["status"] == "ok"
    assert finding(report, "index")["status"] == "ok"
    assert finding(report, "database")["detail"].startswith("PostgreSQL at postgresql://")


def test_an_unreachable_server_is_a_failure_with_a_fix_and_no_password(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"postgresql://alice:pw-hunter2@127.0.0.1:{port}/memory"
    code, report, stderr = doctor(url, tmp_path / "home")
    assert code == 1
    db = finding(report, "database")
    assert db["status"] == "fail" and "PGPASSWORD" in db["fix"]
    assert "pw-hunter2" not in json.dumps(report) + stderr


@pytest.mark.parametrize("event", ["user-prompt-submit", "stop", "session-start"])
def test_a_hook_with_the_server_down_leaves_the_session_alone(
    tmp_path: Path, event: str
) -> None:
    """Exit 0, nothing on stdout, at most one stderr line, no password: the prompt goes on
    without memories."""
    from tests.test_hooks import Transcript, assert_quiet, prompt_input, stop_input

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    transcript = Transcript(tmp_path / "t.jsonl")
    transcript.exchange("Why does the nightly export job time out?", "It waits on a lock.")
    transcript.write()
    payload = {"user-prompt-submit": prompt_input("Why does the export job time out?"),
               "stop": stop_input(transcript.path),
               "session-start": {"session_id": "s", "transcript_path": str(transcript.path),
                                 "cwd": PROJECT, "hook_event_name": "SessionStart",
                                 "source": "startup"}}[event]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMA_", "CLAUDE_"))}
    env.update({"PMA_DATABASE_URL": f"postgresql://alice:pw-hunter2@127.0.0.1:{port}/m",
                "HOME": str(tmp_path), "PMA_DB_PATH": str(tmp_path / "unused.db")})
    proc = subprocess.run([sys.executable, "-m", "pma_mcp", "hook", event],
                          input=json.dumps(payload).encode(), env=env, capture_output=True,
                          check=False)
    assert_quiet(proc)
    assert b"pw-hunter2" not in proc.stderr
    assert not (tmp_path / "unused.db").exists()


@pytest.mark.parametrize("event", ["user-prompt-submit", "session-start"])
def test_a_context_hook_gives_up_on_a_server_that_never_answers(
    tmp_path: Path, event: str
) -> None:
    """A team database that takes the connection and says nothing (a host off the VPN, a
    stuck proxy): the context hook reports it after its own short connect timeout
    (handlers.CONTEXT_CONNECT_S) instead of asyncpg's 60 s, so the prompt is not held for
    Claude Code's whole hook timeout."""
    from tests.test_hooks import assert_quiet, prompt_input

    payload = {"user-prompt-submit": prompt_input("Why does the export job time out?"),
               "session-start": {"session_id": "s", "transcript_path": "/tmp/none.jsonl",
                                 "cwd": PROJECT, "hook_event_name": "SessionStart",
                                 "source": "startup"}}[event]
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # the kernel completes the handshake; nothing ever replies
        port = silent.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PMA_", "CLAUDE_"))}
        env.update({"PMA_DATABASE_URL": f"postgresql://alice:pw-hunter2@127.0.0.1:{port}/m",
                    "HOME": str(tmp_path), "PMA_DB_PATH": str(tmp_path / "unused.db"),
                    "PMA_HOOK_HANDOFF": "0"})
        proc = subprocess.run([sys.executable, "-m", "pma_mcp", "hook", event],
                              input=json.dumps(payload).encode(), env=env,
                              capture_output=True, check=False, timeout=45)
    assert_quiet(proc)
    line = proc.stderr.decode()
    assert "could not be reached" in line and "TimeoutError" in line, line
    assert "pw-hunter2" not in line
