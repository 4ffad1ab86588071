"""Privacy: the database (and its -wal/-shm) is mode 0600 whoever creates it, whatever the
umask; and nothing matching a secret pattern is stored by auto-save, in any column of any
table (FTS shadow tables and lineage included) or anywhere in the raw file bytes.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
from pathlib import Path

import pytest

from pma_mcp.config import Settings
from pma_mcp.core.budget import WordEstimate
from pma_mcp.core.redact import redact
from pma_mcp.service import MemoryService
from tests.reliability import checks
from tests.reliability.procs import (
    DEADLINE,
    RawServer,
    child_env,
    pma,
    stop_payload,
    tool_error,
)


def no_umask() -> None:
    os.umask(0)  # the most permissive umask: the 0600 must not depend on the user's


def private(path: Path) -> bool:
    return stat.S_IMODE(path.stat().st_mode) == 0o600


async def test_a_service_creates_a_private_file_even_with_umask_0(tmp_path: Path) -> None:
    db = tmp_path / "new" / "dir" / "store.db"
    old = os.umask(0)
    try:
        async with await MemoryService.open(Settings(db_path=db, namespace="ns"),
                                            counter=WordEstimate()) as service:
            await service.add("a private note")
            modes = checks.file_modes(db)
            assert {"store.db", "store.db-wal", "store.db-shm"} <= set(modes)
            assert set(modes.values()) == {0o600}, modes
    finally:
        os.umask(old)
    assert stat.S_IMODE(db.parent.stat().st_mode) == 0o700


def test_a_running_server_keeps_db_wal_and_shm_private(tmp_path: Path) -> None:
    db = tmp_path / "server.db"
    server = RawServer(child_env(db, tmp_path, PMA_NAMESPACE="ns"), tmp_path)
    try:
        server.initialize()
        rid = server.call_tool("remember", {"content": "the server wrote this"})
        assert tool_error(server.answers({rid})[rid]) is None
        modes = checks.file_modes(db)  # while it runs: -wal and -shm exist
        assert set(modes) == {"server.db", "server.db-wal", "server.db-shm"}
        assert set(modes.values()) == {0o600}, modes
    finally:
        assert server.close() == 0


@pytest.mark.parametrize("creator", ["stop hook", "cli import", "server"])
def test_every_process_kind_creates_the_file_0600_under_umask_0(
    tmp_path: Path, creator: str
) -> None:
    db = tmp_path / "fresh.db"
    env = child_env(db, tmp_path, PMA_NAMESPACE="ns")
    if creator == "stop hook":
        reply = "The export job now retries five times with jitter; " * 4
        args, data = pma("hook", "stop"), json.dumps(
            stop_payload("s", str(tmp_path), tmp_path / "none.jsonl", reply)).encode()
    elif creator == "cli import":
        doc = {"memories": [{"id": "ab" * 16, "namespace": "ns", "content": "imported",
                             "token_count": 1, "created_at": 1_800_000_000}]}
        (tmp_path / "doc.json").write_text(json.dumps(doc))
        args, data = pma("import", str(tmp_path / "doc.json")), b""
    else:
        args, data = pma(), b""  # opens the store at the first request: send one
        data = b"\n".join(json.dumps(m).encode() for m in [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
             "params": {"name": "memory_stats", "arguments": {}}}]) + b"\n"
    done = subprocess.run(args, input=data, env=env, cwd=tmp_path, capture_output=True,
                          timeout=DEADLINE, check=False, preexec_fn=no_umask)
    assert done.returncode == 0, done.stderr
    assert db.exists()
    modes = checks.file_modes(db)
    assert set(modes.values()) == {0o600}, modes


# ------------------------------------------------------------------- secrets

SECRETS = {
    "aws key id": "AKIAQ3EGRT5HNX2YLW7B",
    "aws secret": "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",
    "github token": "ghp_R8mK2xN7qT4vW9bL3pZ6cY1hJ5dF0gS2aE8uI",
    "openai key": "sk-proj-Rk4mT9vX2bN7qW3eY8uP1zL6cH5jD0fG",
    "anthropic key": "sk-ant-api03-Xy7Wq2Lm9Kp4Rt6Vn1Bz8Hc3Jd5Fg0Sa",
    "slack token": "xoxb-2741938475-5829104738291-Qx7Lm2Kp9Rt4Vn6Bz1Hc3J",
    "stripe key": "sk_live_51Hq2Lm9Kp4Rt6Vn1Bz8Hc3",
    "password": "Tr0ub4dor&3-horse-battery",
    "url password": "s3cr3t-Pa55w0rd",
    "jwt": ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI0MjQyIiwibmFtZSI6ImRldiJ9"
            ".Qm9zc2VzX3NpZ25hdHVyZV8xMjM0NTY"),
    "bearer": "7Hq2Lm9Kp4Rt6Vn1Bz8Hc3Jd5Fg0SaQe",
}
PROMPT = (f"Deploy is failing. My env has AWS_ACCESS_KEY_ID={SECRETS['aws key id']} and "
          f"AWS_SECRET_ACCESS_KEY={SECRETS['aws secret']}; the CI uses "
          f"GITHUB_TOKEN={SECRETS['github token']} and the db is "
          f"postgres://deploy:{SECRETS['url password']}@db.internal:5432/app")
REPLY = (f"I rotated nothing yet. Your client sets api_key=\"{SECRETS['openai key']}\" and the "
         f"agent uses {SECRETS['anthropic key']}; Slack posts with {SECRETS['slack token']}, "
         f"billing with {SECRETS['stripe key']}. The admin password: {SECRETS['password']} "
         f"and the session cookie is {SECRETS['jwt']}. curl sends "
         f"'Authorization: Bearer {SECRETS['bearer']}'. Rotate all of them, then redeploy "
         "and the failing export job will authenticate again.")


def transcript(path: Path, exchanges: list[tuple[str, str]]) -> None:
    lines = []
    for n, (prompt, reply) in enumerate(exchanges):
        lines.append({"type": "user", "uuid": f"u{n}", "sessionId": "s",
                      "message": {"role": "user", "content": prompt}})
        lines.append({"type": "assistant", "uuid": f"a{n}", "sessionId": "s",
                      "message": {"role": "assistant",
                                  "content": [{"type": "text", "text": reply}]}})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_auto_save_stores_no_secret_anywhere_in_the_file(tmp_path: Path) -> None:
    db = tmp_path / "secrets.db"
    env = child_env(db, tmp_path)
    log = tmp_path / "t.jsonl"
    transcript(log, [(PROMPT + f" (take {n})", REPLY + f" (take {n})") for n in range(3)])
    stop = stop_payload("s", str(tmp_path), log, REPLY + " (final)")
    compact = {**stop, "hook_event_name": "PreCompact", "trigger": "manual"}
    for event, payload in (("stop", stop), ("pre-compact", compact)):
        done = subprocess.run(pma("hook", event), input=json.dumps(payload).encode(), env=env,
                              cwd=tmp_path, capture_output=True, timeout=DEADLINE, check=False)
        assert done.returncode == 0 and done.stdout == b"", done.stderr

    contents = checks.contents(db)
    # Stop saved the last exchange; pre-compact the two before it (it skips the saved one).
    assert len(contents) == 3  # something was stored: the scan below is not vacuous
    assert all("[REDACTED:" in c for c in contents)
    for table, column, value in checks.text_values(db):
        assert redact(value).count == 0, (table, column, redact(value).kinds, value[:200])
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("secrets.db*"))
    raw += b"".join(v.encode() for *_, v in checks.text_values(db, blobs=True))
    raw = raw.lower()
    leaked = [kind for kind, secret in SECRETS.items()
              if any(piece.lower().encode() in raw for piece in pieces(secret))]
    assert leaked == []


def pieces(secret: str) -> list[str]:
    """The secret and its long alphanumeric runs (what the FTS tokenizer would keep)."""
    runs = [r for r in re.split(r"[^A-Za-z0-9]+", secret) if len(r) >= 12]
    return [secret, *runs]
