"""Real processes against one database: stdio servers, hooks, CLI, writers.

Deadlines here only keep a broken process from hanging a run; nothing asserts on timing.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from pma_mcp.config import Settings

REPO = Path(__file__).resolve().parents[2]
DEADLINE = 300.0
PROTOCOL = "2025-06-18"


def child_env(db: Path, home: Path, **extra: str) -> dict[str, str]:
    """A clean environment: no PMA_/CLAUDE_ settings leak in from the developer's shell.

    PYTHONPATH lets `-m tests.reliability.writer` run; TIKTOKEN_CACHE_DIR="" keeps every
    process off the network and on the word-count estimate.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMA_", "CLAUDE_"))}
    env.update({"PMA_DB_PATH": str(db), "HOME": str(home), "TIKTOKEN_CACHE_DIR": "",
                "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"})
    env.update(extra)
    return env


def settings_from_env(db: Path, namespace: str) -> Settings:
    """A child process's store: the SQLite file `db`, or PMA_DATABASE_URL's PostgreSQL schema
    when the test gave one (child_env with tests.backends.store_env)."""
    return Settings(db_path=db, namespace=namespace,
                    database_url=os.environ.get("PMA_DATABASE_URL") or None)


def pma(*args: str) -> list[str]:
    return [sys.executable, "-m", "pma_mcp", *args]


class RawServer:
    """`python -m pma_mcp` over stdio, driven by newline-delimited JSON-RPC.

    A thread collects stdout lines; every line must be a JSON-RPC message (stdout purity).
    """

    def __init__(self, env: Mapping[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            pma(), cwd=cwd, env=dict(env), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.impure: list[bytes] = []
        self.next_id = 1
        self.answered: dict[Any, dict[str, Any]] = {}
        self.errors: list[bytes] = []
        assert self.proc.stdout is not None and self.proc.stderr is not None
        threading.Thread(target=self._pump, args=(self.proc.stdout,), daemon=True).start()
        threading.Thread(target=self._drain, args=(self.proc.stderr,), daemon=True).start()

    def _pump(self, stream: IO[bytes]) -> None:
        for line in iter(stream.readline, b""):
            self.lines.put(line)
        self.lines.put(None)

    def _drain(self, stream: IO[bytes]) -> None:
        for line in iter(stream.readline, b""):
            self.errors.append(line)

    @property
    def stderr(self) -> str:
        return b"".join(self.errors).decode("utf-8", "replace")

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data if data.endswith(b"\n") else data + b"\n")
        self.proc.stdin.flush()

    def send(self, message: Mapping[str, Any]) -> None:
        text = json.dumps(message, allow_nan=True)  # NaN/Infinity as a sloppy client sends
        self.send_raw(text.encode("utf-8", "surrogatepass"))

    def request(self, method: str, params: Mapping[str, Any] | None = None) -> int:
        rid = self.next_id
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return rid

    def request_with_id(self, rid: int, method: str,
                        params: Mapping[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def call_tool(self, tool: str, arguments: Mapping[str, Any]) -> int:
        return self.request("tools/call", {"name": tool, "arguments": arguments})

    def read(self, timeout: float = DEADLINE) -> dict[str, Any] | None:
        """The next stdout message (None at EOF); a non-JSON-RPC line is recorded as impure."""
        while True:
            line = self.lines.get(timeout=timeout)
            if line is None:
                return None
            try:
                message = json.loads(line)
            except ValueError:
                self.impure.append(line)
                continue
            if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
                self.impure.append(line)
                continue
            return message

    def answers(self, ids: set[Any], timeout: float = DEADLINE) -> dict[Any, dict[str, Any]]:
        """Read until every id in `ids` is answered; answers to other ids are kept in
        `self.answered` for a later call."""
        while not ids <= set(self.answered):
            message = self.read(timeout)
            if message is None:
                missing = sorted(ids - set(self.answered), key=repr)
                raise EOFError(f"server exited before answering {missing}: {self.stderr[-2000:]}")
            if "id" in message and "method" not in message:
                self.answered[message["id"]] = message
        return {i: self.answered[i] for i in ids}

    def initialize(self) -> dict[str, Any]:
        rid = self.request("initialize", {
            "protocolVersion": PROTOCOL, "capabilities": {},
            "clientInfo": {"name": "pma-reliability", "version": "1"}})
        reply = self.answers({rid})[rid]
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    def close(self, timeout: float = DEADLINE) -> int:
        """EOF on stdin; the server must exit by itself."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()
        code = self.proc.wait(timeout=timeout)
        while True:  # anything printed after the last answer must be protocol too
            try:
                if self.read(timeout=5) is None:
                    break
            except queue.Empty:
                break
        return code

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=DEADLINE)


def tool_error(answer: Mapping[str, Any]) -> str | None:
    """The error text of a tools/call answer, or None when it succeeded."""
    if "error" in answer:
        return f"JSON-RPC error {answer['error']}"
    result = answer["result"]
    if result.get("isError"):
        return " ".join(c.get("text", "") for c in result.get("content", []))
    return None


def stop_payload(session: str, cwd: str, transcript: Path, reply: str) -> dict[str, Any]:
    """A Stop hook input as Claude Code sends it (INTEGRATION.md §1.2)."""
    return {
        "session_id": session, "transcript_path": str(transcript), "cwd": cwd,
        "permission_mode": "default", "hook_event_name": "Stop", "stop_hook_active": False,
        "last_assistant_message": reply, "background_tasks": [], "session_crons": [],
    }


def write_transcript(path: Path, session: str, cwd: str, prompt: str) -> None:
    """A short transcript whose last user line is `prompt` (the Stop hook reads its tail)."""
    lines = [
        {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": cwd,
         "sessionId": session, "version": "2.1.250", "type": "user",
         "uuid": "aaaaaaaa-0000-4000-8000-000000000001",
         "timestamp": "2026-09-14T08:30:00.000Z",
         "message": {"role": "user", "content": prompt}},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def run_hook(event: str, payload: Mapping[str, Any] | bytes, env: Mapping[str, str],
             cwd: Path) -> subprocess.CompletedProcess[bytes]:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return subprocess.run(pma("hook", event), input=data, capture_output=True, env=dict(env),
                          cwd=cwd, timeout=DEADLINE, check=False)
