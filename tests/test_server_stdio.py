"""The real `python -m pma_mcp` process over stdio.

One test drives it with the SDK's stdio client; the others pipe raw JSON-RPC lines and check
that stdout carries nothing but protocol messages, whatever the input. The tests that take
`store_settings` run on each backend (the server gets store_env). Deadlines below only keep a
broken server from hanging the suite; nothing asserts on timing.
"""

from __future__ import annotations

import json
import os
import pty
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any, Literal

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.types import TextContent

from pma_mcp.config import Settings
from tests.backends import store_env

DEADLINE = 60.0


def server_env(db: Path, settings: Settings | None = None, **extra: str) -> dict[str, str]:
    """A minimal environment like a client gives (no CLAUDE_PROJECT_DIR leaking in), on the
    SQLite file `db` or on `settings`' store."""
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(db.parent),
           "PMA_DB_PATH": str(db), "PMA_LOG_LEVEL": "INFO"}
    if settings is not None:
        env.update(store_env(settings))
    env.update(extra)
    return env


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_sdk_stdio_client_remember_recall_inspect_forget(
    tmp_path: Path, mode: Literal["legacy", "auto"], store_settings: Settings
) -> None:
    project = tmp_path / "acme"
    project.mkdir()
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "pma_mcp"], cwd=str(project),
        env=store_env(store_settings),
    )
    async with Client(params, mode=mode) as client:
        assert len((await client.list_tools()).tools) == 10
        stored = await client.call_tool(
            "remember", {"content": "The billing service retries webhooks three times",
                         "importance": 0.8, "tags": ["billing"]})
        assert not stored.is_error and stored.structured_content is not None
        memory_id = stored.structured_content["id"]
        assert stored.structured_content["namespace"] == str(project)  # the working directory

        found = await client.call_tool("recall", {"query": "webhook retries"})
        assert found.structured_content is not None
        assert [r["id"] for r in found.structured_content["results"]] == [memory_id]

        inspected = await client.call_tool("inspect", {"memory_id": memory_id[:8]})
        assert inspected.structured_content is not None
        assert inspected.structured_content["memory"]["access_count"] == 1

        forgotten = await client.call_tool("forget", {"memory_id": memory_id})
        assert forgotten.structured_content == {
            "deleted_id": memory_id,
            "content_preview": "The billing service retries webhooks three times"}
        gone = await client.call_tool("forget", {"memory_id": memory_id})
        assert gone.is_error
        assert isinstance(gone.content[0], TextContent)
        assert "call recall" in gone.content[0].text


async def test_sdk_stdio_client_kinds_corrections_and_similar(
    tmp_path: Path, store_settings: Settings
) -> None:
    """A kind given or inferred, a correction that keeps its labels, what a new memory
    repeats, and recall by kind: through the real server process."""
    project = tmp_path / "acme"
    project.mkdir()
    params = StdioServerParameters(command=sys.executable, args=["-m", "pma_mcp"],
                                   cwd=str(project), env=store_env(store_settings))

    async def call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
        result = await client.call_tool(tool, args)
        data = result.structured_content
        assert not result.is_error and isinstance(data, dict), result
        return data

    with anyio.fail_after(DEADLINE):
        async with Client(params, mode="legacy") as client:
            old = await call(client, "remember", content="We decided Alice reviews every "
                             "payments change", importance=0.8, tags=["review"],
                             linked_entities=["alice", "payments"])
            assert (old["kind"], old["memory_type"]) == ("decision", "episodic")
            new = await call(client, "remember", content="We decided Bob reviews every "
                             "payments change from June", supersedes=old["id"])
            assert (new["kind"], new["importance"], new["tags"], new["linked_entities"]) == (
                "decision", 0.8, ["review"], ["alice", "payments"])
            assert [m["id"] for m in (await call(client, "related", entity="alice"))[
                "memories"]] == [new["id"]]
            again = await call(client, "remember", content="We decided that Bob reviews "
                               "each payments change", linked_entities=["payments"])
            assert [s["id"] for s in again["similar"]] == [new["id"]]
            await call(client, "remember", content="Payments run on Kubernetes", kind="fact")
            decisions = await call(client, "recall", query="payments", kind="decision")
            assert {r["id"] for r in decisions["results"]} == {new["id"], again["id"]}


class RawServer:
    """`python -m pma_mcp` with pipes; a thread collects stdout lines as they come."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pma_mcp"], cwd=cwd, env=env, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.stdout: list[bytes] = []
        assert self.proc.stdout is not None
        threading.Thread(target=self._pump, args=(self.proc.stdout,), daemon=True).start()

    def _pump(self, stream: IO[bytes]) -> None:
        for line in iter(stream.readline, b""):
            self.lines.put(line)

    def send(self, message: dict[str, Any] | str) -> None:
        text = message if isinstance(message, str) else json.dumps(message)
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode() + b"\n")
        self.proc.stdin.flush()

    def answers(self, ids: set[int]) -> dict[int, dict[str, Any]]:
        """Read stdout until every id in `ids` is answered; every line must be JSON-RPC."""
        got: dict[int, dict[str, Any]] = {}
        while not ids <= set(got):
            line = self.lines.get(timeout=DEADLINE)
            self.stdout.append(line)
            message = json.loads(line)  # a non-JSON stdout line fails here
            assert message["jsonrpc"] == "2.0", line
            assert ("result" in message) != ("error" in message) or "method" in message, line
            if "id" in message and "method" not in message:
                got[message["id"]] = message
        return got

    def close(self) -> tuple[int, str]:
        """EOF on stdin: the server must exit by itself, with 0."""
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        code = self.proc.wait(timeout=DEADLINE)
        while not self.lines.empty():  # anything printed after the last answer
            line = self.lines.get()
            self.stdout.append(line)
            assert json.loads(line)["jsonrpc"] == "2.0", line
        return code, self.proc.stderr.read().decode()


def call(i: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}


def initialize(server: RawServer) -> dict[str, Any]:
    server.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw-test", "version": "1"}}})
    reply = server.answers({0})[0]
    server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return reply


async def test_a_wrong_typed_argument_over_stdio_says_how_to_call(tmp_path: Path) -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "pma_mcp"],
                                   cwd=str(tmp_path), env=server_env(tmp_path / "s.db"))
    async with Client(params, mode="legacy") as client:
        bad = await client.call_tool("recall", {"query": "webhooks", "limit": "five"})
        assert bad.is_error and isinstance(bad.content[0], TextContent)
        text = bad.content[0].text
        assert text == ("recall: limit must be a whole number from 1 to 50, got 'five', a "
                        "string (not a valid integer); send it as a JSON number, e.g. "
                        '"limit": 5. Nothing was done.'), text
        good = await client.call_tool("recall", {"query": "webhooks", "limit": 5})
        assert not good.is_error


def test_raw_stdio_every_stdout_line_is_json_rpc(tmp_path: Path, store_settings: Settings) -> None:
    project = tmp_path / "from-claude"
    server = RawServer(server_env(tmp_path / "raw.db", store_settings,
                                  CLAUDE_PROJECT_DIR=str(project)), tmp_path)
    reply = initialize(server)
    assert reply["result"]["protocolVersion"] == "2025-06-18"
    assert reply["result"]["serverInfo"]["name"] == "pma"

    server.send("this is not JSON at all")
    server.send(call(1, "remember", {"content": "Deploy with make release", "tags": ["ops"]}))
    # Requests are served concurrently (in order on SQLite's one connection, not on a pool):
    # the reads below that count the memory wait for the write to be acknowledged.
    got = server.answers({1})
    server.send(call(2, "recall", {"query": 'NEAR( " * content:'}))
    server.send('{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": '
                '{"name": "remember", "arguments": {"content": "x", "importance": NaN}}}')
    server.send(call(4, "remember", {"content": "y" * 100_001}))
    server.send(call(5, "no_such_tool", {}))
    server.send({"jsonrpc": "2.0", "id": 6, "method": "no/such/method", "params": {}})
    server.send(call(7, "forget", {"memory_id": "'; DROP TABLE memories; --"}))
    server.send({"jsonrpc": "2.0", "id": 8, "method": "resources/read",
                 "params": {"uri": "memory://stats"}})
    server.send({"jsonrpc": "2.0", "id": 9, "method": "prompts/get",
                 "params": {"name": "recall_topic", "arguments": {"topic": "deploy"}}})
    server.send({"jsonrpc": "2.0", "id": 10, "method": "ping"})
    server.send(call(11, "memory_stats", {}))
    got.update(server.answers(set(range(2, 12))))

    assert got[1]["result"]["isError"] is False
    assert got[1]["result"]["structuredContent"]["namespace"] == str(project)
    assert got[2]["result"]["isError"] is False
    for i in (3, 4, 5, 7):
        assert got[i]["result"]["isError"] is True, got[i]
        assert "Traceback" not in got[i]["result"]["content"][0]["text"]
    assert "finite number" in got[3]["result"]["content"][0]["text"]
    assert "at most 100000 characters" in got[4]["result"]["content"][0]["text"]
    assert len(json.dumps(got[4])) < 2_000  # the huge argument is not echoed back
    assert got[6]["error"]["code"] == -32601
    assert "hex characters" in got[7]["result"]["content"][0]["text"]
    assert json.loads(got[8]["result"]["contents"][0]["text"])["total"] == 1
    assert "make release" in got[9]["result"]["messages"][0]["content"]["text"]
    assert got[10]["result"] == {}
    assert got[11]["result"]["structuredContent"]["total"] == 1

    code, stderr = server.close()
    assert code == 0
    assert f"namespace {str(project)!r}" in stderr
    if not store_settings.database_url:
        assert str(store_settings.db_path) in stderr
    assert "Traceback" not in stderr


def test_raw_stdio_exits_cleanly_on_immediate_eof(tmp_path: Path, store_settings: Settings) -> None:
    server = RawServer(server_env(tmp_path / "eof.db", store_settings, PMA_NAMESPACE="ns"),
                       tmp_path)
    code, stderr = server.close()
    assert code == 0 and server.stdout == []
    assert "namespace 'ns'" in stderr


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ({"PMA_WEIGHTS": "1,1,1,1"}, "configuration error: PMA_WEIGHTS"),
        ({"PMA_STORAGE": "postgres"}, "configuration error: PMA_STORAGE"),
        ({"PMA_DB_PATH": "<file>/store.db"}, "cannot start: cannot create database file"),
    ],
)
def test_startup_failure_is_one_clear_line_and_exit_1(
    tmp_path: Path, extra: dict[str, str], needle: str
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    env = server_env(tmp_path / "ok.db")
    env.update({k: v.replace("<file>", str(blocker)) for k, v in extra.items()})
    done = subprocess.run([sys.executable, "-m", "pma_mcp"], env=env, cwd=tmp_path,
                          input=b"", capture_output=True, timeout=DEADLINE, check=False)
    assert done.returncode == 1
    assert done.stdout == b""
    err = done.stderr.decode()
    assert needle in err.strip().splitlines()[-1]
    assert "Traceback" not in err


def test_on_a_terminal_it_prints_a_hint_with_the_checkout_command(tmp_path: Path) -> None:
    controller, terminal = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pma_mcp"], cwd=tmp_path, env=server_env(tmp_path / "t.db"),
            stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        os.write(controller, b"\x04")  # Ctrl-D: end of input on a terminal
        out, err = proc.communicate(timeout=DEADLINE)
    finally:
        os.close(controller)
        os.close(terminal)
    assert proc.returncode == 0
    assert out == b""
    assert b"Waiting for a client" in err
    # From a checkout the hint names a command that works today, not the unpublished package.
    root = str(Path(__file__).resolve().parents[1]).encode()
    assert (b"claude mcp add --scope user pma -- uv run --no-dev --project " + root
            + b" pma-mcp") in err
    assert b"--cli uv run --no-dev --project " + root + b" pma-mcp --method tools/list" in err


def test_on_a_terminal_ctrl_c_ends_it_too(tmp_path: Path) -> None:
    """The banner says "Ctrl-D or Ctrl-C to quit": Ctrl-C ends it too, without a traceback
    (exit 0 once it serves, 130 when it interrupts the start)."""
    controller, terminal = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pma_mcp"], cwd=tmp_path, env=server_env(tmp_path / "t.db"),
            stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        assert proc.stderr is not None
        seen = b""
        while b"Ctrl-D or Ctrl-C to quit" not in seen:  # serving: the banner is the last line
            chunk = os.read(proc.stderr.fileno(), 65536)
            assert chunk, seen
            seen += chunk
        proc.send_signal(signal.SIGINT)  # what Ctrl-C sends the foreground process
        _, err = proc.communicate(timeout=DEADLINE)
    finally:
        os.close(controller)
        os.close(terminal)
    assert proc.returncode in (0, 130), err
    assert b"Traceback" not in err


def test_heavy_libraries_stay_unloaded_until_needed() -> None:
    """scikit-learn and tiktoken cost ~1 s and ~0.15 s: importing and building the server
    must not load them (GC and the first write do, lazily)."""
    code = (
        "import sys\n"
        "from pma_mcp.config import Settings\n"
        "from pma_mcp.server import build_server\n"
        "build_server(Settings())\n"
        "print(sorted(m for m in ('sklearn', 'tiktoken', 'scipy') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=DEADLINE,
                          check=True, text=True)
    assert done.stdout.strip() == "[]"


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"k": value}
    return value


async def test_metadata_nested_200_deep_gets_an_error_answer_promptly(tmp_path: Path) -> None:
    """The SDK's parser gives up on such a line before it knows the id and drops it; the
    guard in front of it answers instead, and the server goes on serving."""
    import anyio
    from mcp import MCPError

    params = StdioServerParameters(command=sys.executable, args=["-m", "pma_mcp"],
                                   cwd=str(tmp_path), env=server_env(tmp_path / "s.db"))
    with anyio.fail_after(DEADLINE):
        async with Client(params, mode="legacy") as client:
            with pytest.raises(MCPError, match="nested more than 200 levels deep"):
                await client.call_tool("remember", {"content": "a deep one",
                                                    "metadata": _nested(200)})
            near = await client.call_tool("remember", {"content": "a deep one",
                                                       "metadata": _nested(190)})
            assert near.is_error and isinstance(near.content[0], TextContent)
            assert "nested more than 32 levels" in near.content[0].text
            shallow = await client.call_tool("remember", {"content": "a deep one",
                                                          "metadata": _nested(40)})
            assert shallow.is_error and isinstance(shallow.content[0], TextContent)
            assert "nested more than 32 levels" in shallow.content[0].text
            stored = await client.call_tool("remember", {"content": "a flat one",
                                                         "metadata": {"k": "v"}})
            assert not stored.is_error
            found = await client.call_tool("recall", {"query": "deep flat one"})
            assert found.structured_content is not None
            assert len(found.structured_content["results"]) == 1


def test_raw_lines_nested_thousands_deep_are_answered_by_id(tmp_path: Path) -> None:
    server = RawServer(server_env(tmp_path / "raw.db"), tmp_path)
    initialize(server)
    deep = "[" * 5000 + "]" * 5000
    server.send('{"jsonrpc": "2.0", "id": "str-\\u00e9", "method": "tools/call", "params": '
                '{"name": "remember", "arguments": {"content": "x", "metadata": {"a": '
                + deep + '}, "id": 99}}}')
    server.send('{"jsonrpc": "2.0", "method": "notifications/progress", "params": '
                + deep + "}")  # no id: nothing to answer, dropped
    server.send(call(7, "remember", {"content": "still serving after the deep lines"}))
    got = server.answers({"str-é", 7})  # type: ignore[arg-type]
    assert got["str-é"]["error"]["code"] == -32600  # type: ignore[index]
    assert "nested more than 200 levels" in got["str-é"]["error"]["message"]  # type: ignore[index]
    assert "result" in got[7] and not got[7]["result"].get("isError")
    code, stderr = server.close()
    assert code == 0 and "dropped a message nested over 200 levels" in stderr
