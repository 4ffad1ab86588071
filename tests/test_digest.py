"""The digest of an exchange's tool calls, from realistic transcripts (INTEGRATION.md §2 shapes:
one content block per assistant line, tool_result lines with toolUseResult, subagent sidechain
lines, a partial last line), through the hooks run as subprocesses and the MCP `related` tool.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from pma_mcp.config import Settings
from pma_mcp.core.budget import WordEstimate
from pma_mcp.core.digest import ToolCall, build
from pma_mcp.hooks import handlers as hooks
from pma_mcp.hooks.transcript import last_exchange, read_exchanges
from pma_mcp.server import build_server
from tests.backends import stored_bytes
from tests.test_hooks import (
    AUTHOR,
    PROJECT,
    SESSION,
    Hook,
    Transcript,
    assert_quiet,
    make_hook,
    prompt_input,
    stop_input,
)

FIX_PROMPT = "test_upgrade_from_v3 in tests/test_migrations.py fails after the rebase, fix it"
FIX_REPLY = "Fixed: the v3 → v4 step now adds the column before it backfills it."
RULE = "=" * 30
FAILED_PYTEST = (
    f"Exit code 1\n{RULE} test session starts {RULE}\n"
    "collected 14 items\n\ntests/test_migrations.py ......F.......                          "
    "[100%]\n\n=================================== FAILURES ===================================\n"
    "____________________________ test_upgrade_from_v3 ____________________________\n"
    "E       sqlite3.OperationalError: no such column: memories.author\n"
    "=========================== short test summary info ============================\n"
    "FAILED tests/test_migrations.py::test_upgrade_from_v3 - sqlite3.OperationalError: no such"
    " column: memories.author\n========================= 1 failed, 13 passed in 0.84s "
    "=========================")
PASSED_PYTEST = (f"{RULE} test session starts {RULE}\ncollected 14 items\n\n"
                 "tests/test_migrations.py ..............          [100%]\n\n"
                 f"{RULE} 14 passed in 0.79s {RULE}")
TOKEN = "ghp_" + "Zq9Xw2Lm4Np6Rt8Vb1Cd3Fg5Hj7Kl0Mn2Pq4"


@pytest.fixture
def hook(tmp_path: Path, store_settings: Settings) -> Hook:
    """Each hook test runs on each backend (tests/backends.py)."""
    return make_hook(tmp_path, store_settings)


class Session(Transcript):
    """A transcript with tool calls: each call is an assistant tool_use line and a user
    tool_result line, as Claude Code writes them."""

    def tool(self, name: str, args: Any, output: str = "", *, is_error: bool = False,
             result: Any = None, sidechain: bool = False) -> None:
        ident = f"toolu_{self.n:04d}{name[:4]}"
        msg = {"model": "claude-sonnet-4-5", "id": f"msg_t{self.n}", "type": "message",
               "role": "assistant", "stop_reason": None, "usage": {"output_tokens": 20}}
        self._line("assistant", isSidechain=sidechain, message={**msg, "content": [
            {"type": "tool_use", "id": ident, "name": name, "input": args,
             "caller": {"type": "direct"}}]})
        self._line("user", isSidechain=sidechain, message={"role": "user", "content": [
            {"tool_use_id": ident, "type": "tool_result", "content": output,
             "is_error": is_error}]},
            toolUseResult=result if result is not None else {"stdout": output, "stderr": ""})

    def text(self, text: str) -> None:
        self._line("assistant", message={"model": "claude-sonnet-4-5", "id": f"msg_x{self.n}",
                                         "type": "message", "role": "assistant",
                                         "content": [{"type": "text", "text": text}]})

    def fix_exchange(self) -> None:
        """Read, a failing test run, a subagent, an edit, a passing run, an unknown tool."""
        self.prompt(FIX_PROMPT)
        self.tool("Read", {"file_path": f"{PROJECT}/tests/test_migrations.py"},
                  "     1\timport sqlite3\n     2\t...", result={"type": "text"})
        self.tool("Bash", {"command": "uv run pytest -q tests/test_migrations.py",
                           "description": "Run the migration tests"},
                  FAILED_PYTEST, is_error=True, result="Error: Exit code 1")
        self.tool("Task", {"description": "Find where the v4 schema adds columns",
                           "prompt": "Search pma_mcp/store for the v4 migration",
                           "subagent_type": "Explore"}, "The v4 step is in migrate.py:88.")
        # the subagent's own thread: its calls are not this exchange's edits
        self.tool("Read", {"file_path": f"{PROJECT}/pma_mcp/store/sqlite/schema.sql"},
                  "CREATE TABLE ...", sidechain=True)
        self.tool("Grep", {"pattern": "ALTER TABLE", "path": f"{PROJECT}/pma_mcp/store"},
                  "pma_mcp/store/migrate.py:88")
        self.tool("Edit", {"file_path": f"{PROJECT}/pma_mcp/store/migrate.py",
                           "old_string": "UPDATE memories SET author", "new_string":
                           "ALTER TABLE memories ADD COLUMN author TEXT;\nUPDATE memories"},
                  "The file has been updated.", result={"type": "update"})
        self.tool("mcp__linear__update_issue", ["not", "a", "dict"], "ok")
        self.tool("SomeFutureTool", {"weird": {"nested": [1, 2, 3]}}, "")
        self.tool("Bash", {"command": "uv run pytest -q tests/test_migrations.py"},
                  PASSED_PYTEST)
        self.text(FIX_REPLY)


def fix_transcript(tmp_path: Path) -> Path:
    t = Session(tmp_path / f"{SESSION}.jsonl")
    t.noise()
    t.exchange("How do I run the tests?", "Run `uv run pytest` from the root. " * 5)
    t.fix_exchange()
    return t.write(partial_tail=True)


def test_reader_and_digest_on_a_realistic_exchange(tmp_path: Path) -> None:
    last = last_exchange(fix_transcript(tmp_path))
    assert last is not None and last.prompt == FIX_PROMPT and last.reply == FIX_REPLY
    assert [c.name for c in last.tools] == [
        "Read", "Bash", "Task", "Grep", "Edit", "mcp__linear__update_issue", "SomeFutureTool",
        "Bash"]  # the sidechain Read is the subagent's
    digest = build(last.tools, root=PROJECT)

    assert digest.edited == ("pma_mcp/store/migrate.py",)
    assert digest.read == ("tests/test_migrations.py",)
    assert digest.created == ()
    assert [(c.failed, c.exit_code) for c in digest.commands] == [(True, 1), (False, None)]
    assert "no such column: memories.author" in digest.commands[0].note
    assert digest.commands[1].note == "14 passed in 0.79s"
    assert digest.tests == ("tests/test_migrations.py",
                            "tests/test_migrations.py::test_upgrade_from_v3")
    assert digest.subagents == ("(Explore) Find where the v4 schema adds columns",)
    assert digest.searched == ('"ALTER TABLE" in pma_mcp/store',)
    assert digest.fixed
    assert dict(digest.tools) == {"Bash": 2, "Read": 1, "Task": 1, "Grep": 1, "Edit": 1,
                                  "mcp__linear__update_issue": 1, "SomeFutureTool": 1}
    assert "fix" in digest.tags() and "tool:somefuturetool" in digest.tags()
    assert digest.entities()[:2] == ["pma_mcp/store/migrate.py", "tests/test_migrations.py"]
    text = digest.render()
    lines = text.splitlines()
    assert lines[:2] == ["Fix: a failing command passed after an edit.",
                         "Edited: pma_mcp/store/migrate.py"]
    assert lines[2].startswith(
        "Ran: `uv run pytest -q tests/test_migrations.py` failed (exit 1): "
        "E sqlite3.OperationalError: no such column: memories.author · FAILED tests/")
    assert "`uv run pytest -q tests/test_migrations.py` passed: 14 passed in 0.79s" in text
    assert "UPDATE memories" not in text  # file contents are never kept


def test_no_fix_without_an_edit_between_and_reads_are_not_actions() -> None:
    fail = ToolCall("Bash", {"command": "pytest"}, "Exit code 1\nFAILED x", True)
    ok = ToolCall("Bash", {"command": "pytest"}, "1 passed", False)
    edit = ToolCall("Edit", {"file_path": "/p/a.py"}, "ok", False)
    assert not build([fail, ok]).fixed
    assert not build([edit, fail, ok]).fixed
    assert build([fail, edit, ok]).fixed
    other = ToolCall("Bash", {"command": "ruff check ."}, "All checks passed!", False)
    assert not build([fail, edit, other]).fixed  # a different program passing is no fix
    reads = build([ToolCall("Read", {"file_path": "/p/a.py"}, "x"),
                   ToolCall("Grep", {"pattern": "retry"}, "a.py:1")])
    assert not reads.acted and not reads.fixed and not reads.empty


def test_many_commands_keep_failures_and_stay_bounded() -> None:
    calls = [ToolCall("Bash", {"command": f"make step{i} " + "x" * 400}, "done", False)
             for i in range(50)]
    calls[20] = ToolCall("Bash", {"command": "make step20"}, "Exit code 2\nfatal: nope", True)
    calls += [ToolCall("Read", {"file_path": f"/p/src/m{i}.py"}, "x") for i in range(100)]
    digest = build(calls, root="/p")
    text = digest.render()
    assert len(text) <= 1_200
    assert "`make step20` failed (exit 2): fatal: nope" in text
    assert "src/m0.py" in text and "(+90 more)" in text
    assert len(digest.entities()) == 40


# --------------------------------------------------------------- through the hooks


def test_stop_saves_the_fix_and_a_later_session_gets_it_injected(
    hook: Hook, tmp_path: Path
) -> None:
    assert_quiet(hook.run("stop", stop_input(fix_transcript(tmp_path), FIX_REPLY)))

    (row,) = hook.rows()
    content = row["content"]
    assert content.startswith(f"User: {FIX_PROMPT}\nFix: a failing command passed")
    assert content.endswith(f"Assistant: {FIX_REPLY}")
    assert "pma_mcp/store/migrate.py" in row["linked_entities"]
    assert "tests/test_migrations.py::test_upgrade_from_v3" in row["linked_entities"]
    assert {"tool:bash", "tool:edit", "tool:task", "fix"} <= set(row["tags"])
    said = f"User: {FIX_PROMPT}\nAssistant: {FIX_REPLY}"
    assert row["importance"] == round(hooks.importance_of(said) + hooks.FIX_BONUS, 2)

    context = hook.context("user-prompt-submit", prompt_input(
        "how did we fix the failing test in test_migrations?", session="a-later-session"))
    assert context is not None
    assert "Edited: pma_mcp/store/migrate.py" in context
    assert "`uv run pytest -q tests/test_migrations.py` passed" in context


async def test_related_finds_the_exchange_that_touched_a_path(
    hook: Hook, tmp_path: Path
) -> None:
    assert_quiet(hook.run("stop", stop_input(fix_transcript(tmp_path), FIX_REPLY)))
    settings = replace(hook.settings, namespace=PROJECT, author=AUTHOR)
    app = build_server(settings, counter=WordEstimate())
    async with Client(app, raise_exceptions=True) as client:
        result = await client.call_tool("related", {"entity": "pma_mcp/store/migrate.py"})
    data = result.structured_content
    assert data is not None
    (memory,) = data["memories"]
    assert memory["content"].startswith(f"User: {FIX_PROMPT}")
    assert "tests/test_migrations.py" in data["related_nodes"]

    # the CLI shows the digest with the memory, as every face does (it is the memory's text)
    proc = subprocess.run(
        [sys.executable, "-m", "pma_mcp", "search", "which file did the migration fix edit"],
        capture_output=True, text=True, timeout=120, check=False,
        env={**hook.env, "PMA_NAMESPACE": PROJECT})
    assert proc.returncode == 0, proc.stderr
    assert "Edited: pma_mcp/store/migrate.py" in proc.stdout


def test_credentials_in_commands_are_stored_redacted(hook: Hook, tmp_path: Path) -> None:
    t = Session(tmp_path / f"{SESSION}.jsonl")
    t.prompt("Publish the release notes to the GitHub release")
    t.tool("Bash", {"command": f"GITHUB_TOKEN={TOKEN} gh release edit v2.1 --notes-file N.md"},
           f"Exit code 1\nHTTP 401: Bad credentials (token {TOKEN})", is_error=True)
    t.tool("Bash", {"command": f'curl -H "Authorization: token {TOKEN}" https://api.github.com/'
                               "repos/acme/api/releases"}, "[]")
    t.tool("Bash", {"command": "echo <private>my home address</private> > notes.txt"}, "")
    t.tool("Write", {"file_path": f"{PROJECT}/.env", "content": f"GITHUB_TOKEN={TOKEN}\n"},
           "File created", result={"type": "create"})
    t.text("Done.")
    path = t.write()

    assert_quiet(hook.run("stop", stop_input(path, "Done.")))

    (row,) = hook.rows()
    stored = stored_bytes(hook.settings)
    assert TOKEN.encode() not in stored and TOKEN[4:20].encode() not in stored
    assert b"home address" not in stored
    assert "Created: .env" in row["content"] and "gh release edit v2.1" in row["content"]


def test_digest_off_keeps_prompt_and_reply_only(hook: Hook, tmp_path: Path) -> None:
    path = fix_transcript(tmp_path)
    long_reply = FIX_REPLY + " The backfill runs after the column exists now." * 2
    assert_quiet(hook.run("stop", stop_input(path, long_reply), env={"PMA_DIGEST": "0"}))
    (row,) = hook.rows()
    assert row["content"] == f"User: {FIX_PROMPT}\nAssistant: {long_reply}"
    assert row["linked_entities"] == [] and row["tags"] == ["session", "auto-saved"]
    # and a short reply is skipped as before, the transcript unread
    assert_quiet(hook.run("stop", stop_input(path, "Fixed."), env={"PMA_DIGEST": "0"}))
    assert len(hook.rows()) == 1


def test_a_short_reply_is_saved_for_what_was_done_not_for_reading(
    hook: Hook, tmp_path: Path
) -> None:
    t = Session(tmp_path / f"{SESSION}.jsonl")
    t.prompt("Where is the retry policy defined?")
    t.tool("Grep", {"pattern": "retry", "path": PROJECT}, "src/billing/retry.py:3")
    t.tool("Read", {"file_path": f"{PROJECT}/src/billing/retry.py"}, "MAX = 5")
    t.text("In src/billing/retry.py.")
    assert_quiet(hook.run("stop", stop_input(t.write(), "In src/billing/retry.py.")))
    assert hook.rows() == []

    t.prompt("Raise the retry cap to 7")
    t.tool("Edit", {"file_path": f"{PROJECT}/src/billing/retry.py", "old_string": "MAX = 5",
                    "new_string": "MAX = 7"}, "ok")
    t.text("Done.")
    assert_quiet(hook.run("stop", stop_input(t.write(), "Done.")))
    (row,) = hook.rows()
    assert row["content"] == ("User: Raise the retry cap to 7\nEdited: src/billing/retry.py\n"
                              "Tools: Edit\nAssistant: Done.")
    assert row["importance"] == 0.5  # no fix, no signal words


def test_pre_compact_digests_every_exchange_of_a_20_mb_transcript(
    hook: Hook, tmp_path: Path
) -> None:
    t = Session(tmp_path / f"{SESSION}.jsonl")
    big = "\n".join(f"{i:6d}\tline of a large generated file {'x' * 60}" for i in range(40_000))
    while sum(map(len, t.lines)) < 20_000_000:
        i = t.n
        t.prompt(f"Step {i}: regenerate the fixtures and check them")
        t.tool("Read", {"file_path": f"{PROJECT}/fixtures/big_{i}.txt"}, big)
        t.tool("Bash", {"command": f"python gen.py --part {i}"},
               big.replace("large generated file", "generator log") + f"\nwrote part {i}")
        t.text(f"Regenerated part {i}; the fixtures match the schema again. " * 3)
    t.fix_exchange()
    path = t.write(partial_tail=True)
    assert path.stat().st_size > 20_000_000

    assert_quiet(hook.run("pre-compact", {"session_id": SESSION, "transcript_path": str(path),
                                          "cwd": PROJECT, "hook_event_name": "PreCompact",
                                          "trigger": "manual", "custom_instructions": ""}))
    rows = hook.rows()
    assert len(rows) >= 2
    assert all(len(r["content"]) < 6_500 for r in rows)
    assert "line of a large generated file" not in json.dumps(rows, default=str)
    assert "passed: wrote part" in rows[0]["content"]  # a command's last output line only
    assert any("Fix: a failing command passed" in r["content"] for r in rows)
    fix = read_exchanges(path)[-1]
    assert fix.prompt == FIX_PROMPT


def test_hostile_tool_blocks_still_save_the_exchange(hook: Hook, tmp_path: Path) -> None:
    """NULs, lone surrogates and odd shapes in tool blocks must not cost the exchange (the
    store refuses such strings, and a failed save would lose the prompt and reply too)."""
    t = Session(tmp_path / f"{SESSION}.jsonl")
    t.prompt("Tidy the generated files")
    t.tool("Bad\x00Tool\ud800", {"file_path": 3}, "x")
    t.tool("Edit", {"file_path": f"{PROJECT}/src/gen\ud800/a\x00b.py"}, "ok")
    t.tool("Bash", {"command": "rm -rf build\x00 \ud83d"}, {"not": "text"})  # type: ignore[arg-type]
    t.tool("Write", {"file_path": None, "content": "x"}, "")
    t.tool("Bash", None, "")
    t.text("Done.")
    assert_quiet(hook.run("stop", stop_input(t.write(), "Done.")))
    (row,) = hook.rows()
    assert "Edited: src/gen" in row["content"] and "`rm -rf build" in row["content"]
    assert any(tag.startswith("tool:badtool") for tag in row["tags"])


def test_settings_read_the_switch(tmp_path: Path) -> None:
    assert Settings.from_env({"PMA_DIGEST": "0"}, cwd=str(tmp_path)).digest is False
    assert Settings.from_env({}, cwd=str(tmp_path)).digest is True
