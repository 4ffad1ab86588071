"""Hooks never get in the user's way: every bad input or broken store → exit 0, nothing on
stdout, at most one line on stderr. Plus what the hook process may import, and the namespace
it writes to (the server's, for the same environment). Each backend in turn, but for the
tests of a broken SQLite file (sqlite_only)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pma_mcp.config import Settings
from pma_mcp.core.namespaces import GLOBAL_NAMESPACE
from tests.test_hooks import (
    PROJECT,
    REPLY,
    SESSION,
    Hook,
    Transcript,
    assert_quiet,
    make_hook,
    prompt_input,
    seed,
    stop_input,
)


@pytest.fixture
def hook(tmp_path: Path, store_settings: Settings) -> Hook:
    return make_hook(tmp_path, store_settings)

EVENTS = ["session-start", "user-prompt-submit", "stop", "pre-compact"]
FIVE_MB = "Why does the export job hang? " + "x" * 5_000_000

BAD_INPUTS: dict[str, bytes] = {
    "empty": b"",
    "whitespace": b"  \n\t ",
    "malformed": b'{"session_id": "abc", "prompt": "unterminated',
    "binary": bytes(range(256)) * 64,
    "utf16": json.dumps({"prompt": "why does export hang"}).encode("utf-16"),
    "list": b'["session_id", "prompt"]',
    "string": b'"just a string"',
    "null": b"null",
    "number": b"42",
    "deep": b"[" * 100_000 + b"]" * 100_000,
    "wrong-types": json.dumps({"session_id": 7, "prompt": ["a"], "cwd": {"x": 1},
                               "transcript_path": 3.5, "source": None, "trigger": [],
                               "last_assistant_message": {"text": REPLY}}).encode(),
    "nul-and-surrogates": json.dumps({"session_id": SESSION, "cwd": PROJECT,
                                      "prompt": "export \x00 job \ud800 hang?",
                                      "last_assistant_message": REPLY + "\x00\udfff"}).encode(),
    "five-mb": json.dumps({"session_id": SESSION, "cwd": PROJECT, "prompt": FIVE_MB,
                           "last_assistant_message": FIVE_MB,
                           "transcript_path": "/nonexistent"}).encode(),
}


@pytest.mark.parametrize("event", EVENTS)
@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_fails_open(hook: Hook, event: str, name: str) -> None:
    assert_quiet(hook.run(event, BAD_INPUTS[name]))


def test_unknown_event_and_no_event_fail_open(hook: Hook) -> None:
    assert_quiet(hook.run("post-tool-use", {"session_id": SESSION}))
    proc = subprocess.run([sys.executable, "-m", "pma_mcp", "hook"], input=b"{}",
                          capture_output=True, env=hook.env, timeout=60, check=False)
    assert_quiet(proc)


def _broken_db_paths(tmp_path: Path) -> dict[str, Path]:
    a_file = tmp_path / "plain-file"
    a_file.write_text("not a directory")
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database " * 500)
    return {
        "parent-is-a-file": a_file / "store.db",
        "not-a-database": garbage,
        "proc": Path("/proc/self/no-such-dir/store.db"),
        "a-directory": tmp_path,
    }


@pytest.mark.sqlite_only  # broken SQLite files and folders
@pytest.mark.parametrize("event", EVENTS)
@pytest.mark.parametrize("broken", ["parent-is-a-file", "not-a-database", "proc", "a-directory"])
def test_unusable_database_fails_open(
    hook: Hook, tmp_path: Path, event: str, broken: str
) -> None:
    db = _broken_db_paths(tmp_path)[broken]
    transcript = Transcript(tmp_path / "t.jsonl")
    transcript.exchange("Why does the nightly export job time out?", REPLY)
    path = transcript.write()
    payload: dict[str, Any] = {**stop_input(path), "prompt": "why does the export job hang",
                               "source": "compact", "trigger": "manual"}
    assert_quiet(hook.run(event, payload, env={"PMA_DB_PATH": str(db)}))


@pytest.mark.parametrize("event", EVENTS)
def test_bad_configuration_fails_open(hook: Hook, event: str) -> None:
    payload = {**prompt_input("why does the export job hang"), "last_assistant_message": REPLY}
    for env in ({"PMA_AUTOSAVE": "maybe"}, {"PMA_WEIGHTS": "1,2"}, {"PMA_STORAGE": "redis"}):
        assert_quiet(hook.run(event, payload, env=env))


@pytest.mark.sqlite_only  # the SQLite file's folder and mode
def test_missing_database_directory_is_created_by_the_first_save(
    hook: Hook, tmp_path: Path
) -> None:
    db = tmp_path / "does" / "not" / "exist" / "store.db"
    assert_quiet(hook.run("user-prompt-submit", prompt_input("why does the export job hang"),
                          env={"PMA_DB_PATH": str(db)}))
    assert not db.parent.exists()
    assert_quiet(hook.run("stop", stop_input(tmp_path / "none.jsonl"),
                          env={"PMA_DB_PATH": str(db)}))
    assert db.exists() and oct(db.stat().st_mode & 0o777) == "0o600"


def test_stop_hook_prints_nothing_even_when_asked_to_continue(hook: Hook, tmp_path: Path) -> None:
    for active in (False, True):
        assert_quiet(hook.run("stop", stop_input(tmp_path / "none.jsonl",
                                                 f"{REPLY} (stop_hook_active={active})",
                                                 stop_hook_active=active)))
    assert len(hook.rows()) == 2


def test_a_print_inside_the_handler_cannot_reach_stdout(hook: Hook, tmp_path: Path) -> None:
    code = (
        "import builtins, sys\n"
        "from pma_mcp.hooks import handlers as hooks\n"
        "real = hooks.stop\n"
        "async def noisy(payload, settings):\n"
        "    print('library chatter')\n"
        "    await real(payload, settings)\n"
        "hooks.HANDLERS['stop'] = hooks._Event(noisy, prints=False)\n"
        "sys.exit(hooks.main(['stop']))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code],
                          input=json.dumps(stop_input(tmp_path / "none.jsonl")).encode(),
                          capture_output=True, env=hook.env, timeout=60, check=False)
    assert proc.returncode == 0 and proc.stdout == b""
    assert b"library chatter" in proc.stderr


# ------------------------------------------------------------------- imports

HEAVY = ("mcp", "sklearn", "scipy", "numpy", "pydantic", "tiktoken")


@pytest.mark.parametrize("event", EVENTS)
async def test_hook_path_imports_neither_mcp_nor_scikit_learn(
    hook: Hook, tmp_path: Path, event: str
) -> None:
    await seed(hook.settings, [(f"Export job note {i}: retries capped at {i}.", {})
                         for i in range(90)], background=False)  # past the GC threshold
    transcript = Transcript(tmp_path / "t.jsonl")
    transcript.exchange("Why does the nightly export job time out?", REPLY)
    path = transcript.write()
    payload = {**stop_input(path), "prompt": "why does the export job time out",
               "source": "compact", "trigger": "manual"}
    code = (
        "import sys\n"
        "from pma_mcp.cli import main\n"
        f"status = main(['hook', {event!r}])\n"
        f"heavy = sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})\n"
        "sys.stderr.write('\\nMODULES=' + ','.join(heavy) + '\\n')\n"
        "loop = sorted(m for m in ('asyncio', 'aiosqlite') if m in sys.modules)\n"
        "sys.stderr.write('LOOP=' + ','.join(loop) + '\\n')\n"
        "sys.exit(status)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], input=json.dumps(payload).encode(),
                          capture_output=True, env=hook.env, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    *_, line, loop = proc.stderr.decode().strip().splitlines()
    assert line == "MODULES=", line
    if hook.settings.database_url is None:  # a SQLite store is opened blocking: no event loop
        assert loop == "LOOP=", loop
    if event == "stop":
        assert len(hook.rows()) == 91  # the handler really ran, GC share included


async def _probe_prompt_hook(hook: Hook, tmp_path: Path, probe: str) -> list[str]:
    """Run the prompt hook in a process that runs `probe` (code writing to stderr) after it;
    the hook must have answered from the store. Returns stderr's lines."""
    await seed(hook.settings, [(f"Export job note {i}: retries capped at {i}.", {})
                               for i in range(5)], background=False)
    payload = {**stop_input(tmp_path / "none.jsonl"), "prompt": "why does the export job time out"}
    code = ("import gc, sys\n"
            "from pma_mcp.cli import main\n"
            "status = main(['hook', 'user-prompt-submit'])\n"
            f"{probe}\n"
            "sys.exit(status)\n")
    proc = subprocess.run([sys.executable, "-c", code], input=json.dumps(payload).encode(),
                          capture_output=True, env=hook.env, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert b"retries capped" in proc.stdout  # the handler really answered from the store
    return proc.stderr.decode().strip().splitlines()


async def test_prompt_hook_leaves_the_collector_and_tls_unimported(
    hook: Hook, tmp_path: Path
) -> None:
    """The prompt hook runs on every prompt and never collects: the GC rules stay unloaded,
    and so do the records only writes, GC and the tools build (core/records.py); on a SQLite
    file nothing opens a TLS connection, so `ssl` stays unloaded too (the
    PostgreSQL driver loads it for itself), and the store is opened blocking, so neither
    asyncio nor aiosqlite is loaded at all (the PostgreSQL driver needs the event loop)."""
    *_, collector, records, tls, loop = await _probe_prompt_hook(hook, tmp_path, (
        "sys.stderr.write('\\nCOLLECTOR=' + str('pma_mcp.core.collector' in sys.modules))\n"
        "sys.stderr.write('\\nRECORDS=' + str('pma_mcp.core.records' in sys.modules))\n"
        "sys.stderr.write('\\nTLS=' + str('ssl' in sys.modules))\n"
        "loop = sorted(m for m in ('asyncio', 'aiosqlite') if m in sys.modules)\n"
        "sys.stderr.write('\\nLOOP=' + ','.join(loop))"))
    assert collector == "COLLECTOR=False"
    assert records == "RECORDS=False"
    if hook.settings.database_url is None:
        assert tls == "TLS=False"
        assert loop == "LOOP="


async def test_a_hook_runs_without_the_cyclic_collector(hook: Hook, tmp_path: Path) -> None:
    """A hook is a process for one event: the collector is off from the start (collections
    during its imports) and its objects are frozen before exit (the final collection)."""
    lines = await _probe_prompt_hook(hook, tmp_path, (
        "sys.stderr.write(f'\\nGC={gc.isenabled()} FROZEN={gc.get_freeze_count() > 0}')"))
    assert lines[-1] == "GC=False FROZEN=True"


# ----------------------------------------------------------------- namespaces


def _server_namespace(env: dict[str, str], cwd: Path) -> str:
    """Start the MCP server over stdio in `cwd` and ask it which namespace it serves."""
    proc = subprocess.Popen([sys.executable, "-m", "pma_mcp"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd)
    assert proc.stdin is not None and proc.stdout is not None

    def call(message: dict[str, Any], expect_reply: bool = True) -> dict[str, Any]:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write((json.dumps(message) + "\n").encode())
        proc.stdin.flush()
        return json.loads(proc.stdout.readline()) if expect_reply else {}

    try:
        call({"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "test", "version": "1"}}})
        call({"jsonrpc": "2.0", "method": "notifications/initialized"}, expect_reply=False)
        reply = call({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "memory_stats", "arguments": {}}})
        return str(reply["result"]["structuredContent"]["namespace"])
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
        proc.stdout.close()
        if proc.stderr is not None:
            proc.stderr.close()


@pytest.mark.parametrize("case", ["PMA_NAMESPACE", "CLAUDE_PROJECT_DIR", "cwd", "root"])
def test_hook_and_server_resolve_the_same_namespace(
    hook: Hook, tmp_path: Path, case: str
) -> None:
    project = tmp_path / "acme-api"
    project.mkdir()
    env = dict(hook.env)
    cwd = project
    if case == "PMA_NAMESPACE":
        env["PMA_NAMESPACE"] = "team/acme"
    elif case == "CLAUDE_PROJECT_DIR":
        env["CLAUDE_PROJECT_DIR"] = str(project)
        cwd = project / "src"  # the hook's cwd followed a `cd`; the project dir did not
        cwd.mkdir()
    elif case == "root":
        cwd = Path("/")  # Claude Desktop style: no project
    payload = {**stop_input(tmp_path / "none.jsonl"), "cwd": str(cwd)}
    # The hook runs wherever Claude Code starts it; only its input says where the user is.
    assert_quiet(hook.run("stop", payload, env=env, cwd=tmp_path))
    server = _server_namespace(env, cwd)
    if case == "root":
        # No project: the server uses the global namespace, but the hook does not save a
        # conversation there, where every project would see it.
        assert server == hook.settings.global_namespace
        assert hook.rows() == []
        return
    (row,) = hook.rows()
    expected = {"PMA_NAMESPACE": "team/acme", "CLAUDE_PROJECT_DIR": str(project),
                "cwd": str(project)}[case]
    assert row["namespace"] == server == expected


def test_saving_to_the_global_namespace_takes_an_explicit_choice(
    hook: Hook, tmp_path: Path
) -> None:
    payload = {**stop_input(tmp_path / "none.jsonl"), "cwd": "/"}
    assert_quiet(hook.run("stop", payload, env={"PMA_NAMESPACE": GLOBAL_NAMESPACE}))
    (row,) = hook.rows()
    assert row["namespace"] == hook.settings.global_namespace  # default/<author> on PostgreSQL


def test_namespace_from_input_cwd_beats_the_hook_process_cwd(hook: Hook, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    other.mkdir()
    assert_quiet(hook.run("stop", stop_input(tmp_path / "none.jsonl"), cwd=other))
    (row,) = hook.rows()
    assert row["namespace"] == PROJECT
    assert os.path.realpath(other) != PROJECT


def test_unknown_log_level_does_not_skip_the_hook(hook: Hook, tmp_path: Path) -> None:
    proc = hook.run("stop", stop_input(tmp_path / "none.jsonl"), env={"PMA_LOG_LEVEL": "LOUD"})
    assert_quiet(proc)
    assert len(hook.rows()) == 1
