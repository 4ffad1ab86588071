"""The stdio server ends with its client (issue 11, item 2).

A client that dies with replies pending (SIGKILL), closes both pipes, or closes only the pipe
it reads replies from must not leave the server behind: it closes the store and exits, with no
traceback on stderr. The failure was intermittent (a broken-pipe exception group, then a wait
forever on aiosqlite's thread), so each way is repeated. The 30 s limit is only a hang
detector; nothing asserts on timing.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.reliability.procs import REPO, RawServer, child_env

HANG_LIMIT_S = 30.0
RUNS = [("kill", 5), ("close", 2), ("stdout", 2)]

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")


def _exited(pid: int) -> bool:
    """Gone, or a zombie nobody reaped yet (its parent, the dead client, is gone too)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def _wait_exit(pid: int) -> bool:
    deadline = time.monotonic() + HANG_LIMIT_S
    while time.monotonic() < deadline:
        if _exited(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize(("how", "times"), RUNS, ids=[how for how, _ in RUNS])
def test_server_exits_when_its_client_dies_mid_call(tmp_path: Path, how: str, times: int) -> None:
    db = tmp_path / "store.db"
    for run in range(times):
        work = tmp_path / f"{how}-{run}"
        work.mkdir()
        client = subprocess.Popen(
            [sys.executable, "-m", "tests.reliability.dying_client", str(db), str(work), "12",
             how],
            env=child_env(db, tmp_path), cwd=REPO, stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + HANG_LIMIT_S * 3
            while not (work / "server.pid").exists() and client.poll() is None:
                assert time.monotonic() < deadline, "the client never started its server"
                time.sleep(0.05)
            if how != "stdout":
                client.wait(HANG_LIMIT_S * 3)
            pid = int((work / "server.pid").read_text())
            exited = _wait_exit(pid)
            if not exited:
                os.kill(pid, signal.SIGKILL)
        finally:
            client.kill()
            client.wait()
        stderr = (work / "server.stderr").read_text()
        assert exited, f"run {run}: the server outlived its client ({how}); stderr:\n{stderr}"
        assert "Traceback" not in stderr and "Exception" not in stderr, stderr
        assert len(stderr.splitlines()) <= 2, stderr  # the banner, at most one more line


def test_server_exits_on_eof_while_a_call_waits_for_another_writer(tmp_path: Path) -> None:
    """A `remember` queued behind another process's write lock (a long GC elsewhere) when the
    client leaves: the store cannot close until that wait ends, so the server gives up on
    it instead of staying for the whole busy timeout (15 s) or for ever."""
    db = tmp_path / "store.db"
    server = RawServer(child_env(db, tmp_path), cwd=tmp_path)
    try:
        server.initialize()
        rid = server.call_tool("memory_stats", {})
        server.answers({rid})  # the schema exists; now another process takes the write lock
        other = sqlite3.connect(db, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        try:
            server.call_tool("remember", {"content": "waits behind the other writer"})
            time.sleep(0.5)  # the call is in BEGIN IMMEDIATE's busy wait
            assert server.proc.stdin is not None
            server.proc.stdin.close()
            exited = _wait_exit(server.proc.pid)
        finally:
            other.execute("ROLLBACK")
            other.close()
    finally:
        if server.proc.poll() is None:
            server.kill()
    assert exited, server.stderr
    assert "Traceback" not in server.stderr and len(server.stderr.splitlines()) <= 2, (
        server.stderr)
