"""Reading Claude Code transcripts: line shapes follow INTEGRATION.md §2."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from pma_mcp.hooks.transcript import Exchange, last_exchange, last_user_prompt, read_exchanges

SESSION = "7d3f2b10-5c6e-4e2a-8f41-9b0c1d2e3f40"
_COMMON: dict[str, Any] = {
    "isSidechain": False,
    "userType": "external",
    "cwd": "/home/dev/acme-api",
    "sessionId": SESSION,
    "version": "2.1.250",
    "gitBranch": "main",
}


class Transcript:
    """Builds transcript lines with realistic shapes and chained parentUuid/uuid values."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.counter = 0
        self.parent: str | None = None

    def _uuid(self) -> str:
        self.counter += 1
        return f"11111111-2222-4333-8444-{self.counter:012d}"

    def _stamp(self) -> str:
        return f"2026-09-14T08:{30 + self.counter // 60:02d}:{self.counter % 60:02d}.000Z"

    def raw(self, line: str) -> Transcript:
        self.lines.append(line)
        return self

    def obj(self, value: Any) -> Transcript:
        return self.raw(json.dumps(value))

    def _entry(self, kind: str, **fields: Any) -> dict[str, Any]:
        uuid = self._uuid()
        entry = {"parentUuid": self.parent, **_COMMON, "type": kind, "uuid": uuid}
        entry["timestamp"] = self._stamp()
        entry.update(fields)
        self.parent = uuid
        return entry

    def snapshot(self) -> Transcript:
        message_id = self._uuid()
        return self.obj(
            {
                "type": "file-history-snapshot",
                "messageId": message_id,
                "snapshot": {
                    "messageId": message_id,
                    "trackedFileBackups": {},
                    "timestamp": "2026-09-14T08:30:00.120Z",
                },
                "isSnapshotUpdate": False,
            }
        )

    def progress(self) -> Transcript:
        return self.obj(
            self._entry(
                "progress",
                data={
                    "type": "hook_progress",
                    "hookEvent": "SessionStart",
                    "hookName": "SessionStart:startup",
                    "command": "pma-mcp hook session-start",
                },
                toolUseID="11111111-2222-4333-8444-0000000000a0",
                parentToolUseID="11111111-2222-4333-8444-0000000000a0",
            )
        )

    def prompt(self, content: Any, **extra: Any) -> str:
        entry = self._entry(
            "user", message={"role": "user", "content": content}, permissionMode="default"
        )
        entry.update(extra)
        self.obj(entry)
        return str(entry["uuid"])

    def assistant(self, block: dict[str, Any], message_id: str, **extra: Any) -> Transcript:
        entry = self._entry(
            "assistant",
            message={
                "model": "claude-sonnet-4-5",
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "content": [block],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 6, "output_tokens": 14},
            },
            requestId=f"req_{message_id}",
        )
        entry.update(extra)
        return self.obj(entry)

    def text(self, text: str, message_id: str = "msg_01Text", **extra: Any) -> Transcript:
        return self.assistant({"type": "text", "text": text}, message_id, **extra)

    def thinking(self, text: str, message_id: str) -> Transcript:
        return self.assistant(
            {"type": "thinking", "thinking": text, "signature": "c3ludGhldGlj"}, message_id
        )

    def tool_use(self, tool_id: str, message_id: str) -> Transcript:
        block = {
            "type": "tool_use",
            "id": tool_id,
            "name": "Bash",
            "input": {"command": "grep -n export config/jobs.toml"},
            "caller": {"type": "direct"},
        }
        return self.assistant(block, message_id)

    def tool_result(self, tool_id: str, output: str, **extra: Any) -> Transcript:
        entry = self._entry(
            "user",
            message={
                "role": "user",
                "content": [
                    {
                        "tool_use_id": tool_id,
                        "type": "tool_result",
                        "content": output,
                        "is_error": False,
                    }
                ],
            },
            toolUseResult={"stdout": output, "stderr": "", "interrupted": False},
            sourceToolAssistantUUID=self.parent,
        )
        entry.update(extra)
        return self.obj(entry)

    def write(self, path: Path, *, trailing: str = "\n") -> Path:
        path.write_text("\n".join(self.lines) + trailing, encoding="utf-8")
        return path


def test_realistic_session(tmp_path: Path) -> None:
    t = Transcript().snapshot().progress()
    first = t.prompt("Why does the nightly export job time out?")
    t.thinking("Look at the job settings first.", "msg_01SyntheticReplyAAAA")
    t.tool_use("toolu_01SyntheticCallCCCC", "msg_01SyntheticReplyAAAA")
    t.tool_result("toolu_01SyntheticCallCCCC", "12:export.timeout_s = 300\n13:export.retries = -1")
    t.text("Retries are unbounded (-1), so one failing upload never ends.", "msg_01ReplyDDDD")
    t.text("Cap them at 5.", "msg_01ReplyDDDD")
    second = t.prompt([{"type": "text", "text": "Please cap them and add a test."}])
    t.text("Done: retries = 5, test added.", "msg_01ReplyEEEE")
    t.raw('{"parentUuid":"11111111-2222-4333-8444-000000000099","isSidechain":false,"type":"assis')
    path = t.write(tmp_path / f"{SESSION}.jsonl", trailing="")

    exchanges = read_exchanges(path)

    assert [e.prompt for e in exchanges] == [
        "Why does the nightly export job time out?",
        "Please cap them and add a test.",
    ]
    assert exchanges[0].reply == (
        "Retries are unbounded (-1), so one failing upload never ends.\nCap them at 5."
    )
    assert exchanges[0].user_uuid == first
    assert exchanges[0].timestamp is not None
    assert exchanges[0].timestamp.endswith("Z")
    assert exchanges[1] == Exchange(
        user_uuid=second,
        prompt="Please cap them and add a test.",
        reply="Done: retries = 5, test added.",
        timestamp=exchanges[1].timestamp,
        cwd=exchanges[1].cwd,
    )
    assert "Look at the job settings" not in exchanges[0].reply  # thinking is not the reply
    assert last_user_prompt(path) == "Please cap them and add a test."


def test_reply_spans_several_message_ids_and_lines(tmp_path: Path) -> None:
    t = Transcript()
    t.prompt("Refactor the exporter.")
    t.text("First I will read the module.", "msg_A")
    t.tool_use("toolu_1", "msg_A")
    t.tool_result("toolu_1", "def export(): ...")
    t.text("The module is small.", "msg_B")
    t.text("Here is the refactor.", "msg_B")
    t.tool_use("toolu_2", "msg_C")
    t.tool_result("toolu_2", "ok")
    t.text("All tests pass.", "msg_D")

    [exchange] = read_exchanges(t.write(tmp_path / "t.jsonl"))

    assert exchange.reply == (
        "First I will read the module.\nThe module is small.\nHere is the refactor.\n"
        "All tests pass."
    )


def test_meta_compact_summary_and_sidechain_lines_are_not_prompts(tmp_path: Path) -> None:
    t = Transcript()
    t.prompt("Summarise the incident.")
    t.prompt("<system-reminder>Todo list is empty.</system-reminder>", isMeta=True)
    t.text("The incident was caused by a full disk.", "msg_1")
    t.prompt("Explore the logs for me.", isSidechain=True)
    t.text("Sidechain: I found 3 log files.", "msg_side", isSidechain=True)
    t.prompt(
        "This session is being continued from a previous conversation...",
        isCompactSummary=True,
        isVisibleInTranscriptOnly=True,
    )
    t.text("Disk usage is now at 40%.", "msg_2")

    exchanges = read_exchanges(t.write(tmp_path / "t.jsonl"))

    assert len(exchanges) == 1
    assert exchanges[0].prompt == "Summarise the incident."
    assert exchanges[0].reply == (
        "The incident was caused by a full disk.\nDisk usage is now at 40%."
    )


def test_slash_commands_and_interrupts_are_not_prompts(tmp_path: Path) -> None:
    t = Transcript()
    t.prompt("What does the retry policy do?")
    t.text("It retries failed uploads.", "msg_1")
    t.prompt("<command-name>/cost</command-name>\n<command-message>cost</command-message>")
    t.prompt("<local-command-stdout>Total cost: $0.12</local-command-stdout>")
    t.text("Output of the command, not a reply to the retry question.", "msg_2")
    t.prompt([{"type": "text", "text": "[Request interrupted by user for tool use]"}])
    t.prompt("   ")
    t.prompt("Then make it exponential.")
    t.text("Switched to exponential backoff.", "msg_3")

    exchanges = read_exchanges(t.write(tmp_path / "t.jsonl"))

    assert [(e.prompt, e.reply) for e in exchanges] == [
        ("What does the retry policy do?", "It retries failed uploads."),
        ("Then make it exponential.", "Switched to exponential backoff."),
    ]


def test_prompt_without_reply_yet(tmp_path: Path) -> None:
    t = Transcript()
    t.prompt("First question")
    t.text("First answer", "msg_1")
    t.prompt("Second question, the transcript lags behind")

    exchanges = read_exchanges(t.write(tmp_path / "t.jsonl"))

    assert exchanges[-1].prompt == "Second question, the transcript lags behind"
    assert exchanges[-1].reply == ""


def test_junk_lines_are_skipped(tmp_path: Path) -> None:
    t = Transcript()
    t.raw("")
    t.raw("   ")
    t.raw("not json at all")
    t.raw('["a", "list"]')
    t.raw("42")
    t.raw('"a string"')
    t.raw("null")
    t.obj({"type": "queue-operation", "operation": "enqueue"})
    t.obj({"type": "ai-title", "title": "Export timeouts"})
    t.obj({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted"})
    t.obj({"type": "brand-new-type-from-2027", "message": {"content": "ignore me"}})
    t.obj({"type": "user"})  # no message
    t.obj({"type": "user", "message": "a string message"})
    t.obj({"type": "user", "message": {"content": None}})
    t.obj({"type": "user", "message": {"content": [1, None, "x", {"type": "image"}]}})
    t.obj({"type": "user", "message": {"content": [{"type": "text", "text": 7}]}})
    t.obj({"type": "assistant", "message": {"content": "reply before any prompt"}})
    t.prompt("The real question")
    t.obj({"type": "assistant", "message": {"content": [None, 3, {"type": "text"}]}})
    t.obj({"type": "assistant", "message": {"content": [{"type": "text", "text": ["x"]}]}})
    t.text("The real answer", "msg_1")
    t.raw('{"type": "assistant", "message": {"content": [{"type": "text", "text": "cut')
    path = tmp_path / "t.jsonl"
    path.write_bytes(
        "\n".join(t.lines).encode()
        + b"\n\x00\xff\xfe\x89PNG\r\n\x1a\n\xde\xad\xbe\xef garbage\n"
        + b'{"type": "user", "message": {"content": "bad \xff byte prompt"}, "uuid": "u-bad"}\n'
    )

    exchanges = read_exchanges(path)

    assert [(e.prompt, e.reply) for e in exchanges] == [
        ("The real question", "The real answer"),
        ("bad \ufffd byte prompt", ""),
    ]


def test_api_error_messages_and_duplicate_lines_are_skipped(tmp_path: Path) -> None:
    t = Transcript()
    t.prompt("Deploy it")
    t.text("API Error: 529 overloaded", "msg_err", isApiErrorMessage=True)
    t.text("Deployed to staging.", "msg_ok")
    t.raw(t.lines[-1])  # a resumed session can repeat lines verbatim

    [exchange] = read_exchanges(t.write(tmp_path / "t.jsonl"))

    assert exchange.reply == "Deployed to staging."


def test_line_separator_inside_json_string_does_not_split_the_line(tmp_path: Path) -> None:
    t = Transcript()
    t.prompt("first\u2028second\u0085third")
    path = tmp_path / "t.jsonl"
    path.write_text(
        "\n".join(
            line.replace("\\u2028", "\u2028").replace("\\u0085", "\u0085") for line in t.lines
        ),
        encoding="utf-8",
    )

    [exchange] = read_exchanges(path)

    assert exchange.prompt == "first\u2028second\u0085third"


@pytest.mark.parametrize("kind", ["missing", "directory", "empty"])
def test_missing_or_unreadable_file(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "nope.jsonl"
    if kind == "directory":
        path.mkdir()
    elif kind == "empty":
        path.write_bytes(b"")
    assert read_exchanges(path) == []
    assert read_exchanges(str(path)) == []
    assert last_user_prompt(path) is None


def _numbered_session(count: int) -> Transcript:
    t = Transcript()
    for n in range(count):
        t.prompt(f"question number {n:05d}")
        t.tool_use(f"toolu_{n}", f"msg_{n}a")
        t.tool_result(f"toolu_{n}", "x" * 300)
        t.text(f"answer number {n:05d}", f"msg_{n}b")
    return t


def test_huge_file_reads_only_the_tail(tmp_path: Path) -> None:
    path = _numbered_session(2000).write(tmp_path / "big.jsonl")
    size = path.stat().st_size
    assert size > 2_000_000

    exchanges = read_exchanges(path, max_bytes=200_000)

    prompts = [e.prompt for e in exchanges]
    assert 10 < len(prompts) < 200
    assert prompts[-1] == "question number 01999"
    expected = [f"question number {n:05d}" for n in range(2000 - len(prompts), 2000)]
    assert prompts == expected
    assert all(e.reply == e.prompt.replace("question", "answer") for e in exchanges)
    assert len(read_exchanges(path)) == 2000


def test_tail_window_on_a_line_boundary_keeps_that_line(tmp_path: Path) -> None:
    t = Transcript()
    t.prompt("old question")
    t.text("old answer", "msg_1")
    tail_start = len(t.lines)
    t.prompt("new question")
    t.text("new answer", "msg_2")
    path = t.write(tmp_path / "t.jsonl")
    tail_bytes = len(("\n".join(t.lines[tail_start:]) + "\n").encode())

    exchanges = read_exchanges(path, max_bytes=tail_bytes)
    assert [(e.prompt, e.reply) for e in exchanges] == [("new question", "new answer")]

    cut_inside = read_exchanges(path, max_bytes=tail_bytes - 5)
    assert [(e.prompt, e.reply) for e in cut_inside] == []


def test_last_user_prompt_finds_a_prompt_far_from_the_end(tmp_path: Path) -> None:
    t = Transcript()
    t.prompt("older prompt")
    t.text("older reply", "msg_0")
    t.prompt([{"type": "text", "text": "run the whole migration"}])
    for n in range(1500):  # ~600 KB of tool traffic after the prompt
        t.tool_use(f"toolu_{n}", f"msg_{n}")
        t.tool_result(f"toolu_{n}", "migrated row batch " + "y" * 200)
    t.prompt("<system-reminder>context</system-reminder>", isMeta=True)
    path = t.write(tmp_path / "t.jsonl")
    assert path.stat().st_size > 300_000

    assert last_user_prompt(path) == "run the whole migration"
    assert last_user_prompt(path, max_bytes=100_000) is None


def test_no_real_prompt_at_all(tmp_path: Path) -> None:
    t = Transcript().snapshot().progress()
    t.prompt("<command-name>/clear</command-name>")
    t.prompt("reminder", isMeta=True)
    path = t.write(tmp_path / "t.jsonl")
    assert read_exchanges(path) == []
    assert last_user_prompt(path) is None


def test_exchange_is_frozen() -> None:
    exchange = Exchange(user_uuid=None, prompt="p", reply="r", timestamp=None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        exchange.prompt = "changed"  # type: ignore[misc]


def test_last_exchange_keeps_the_prompt_uuid_far_from_the_end(tmp_path: Path) -> None:
    """The Stop hook dedups against pre-compact by the prompt's uuid, even past 512 KB."""
    path = tmp_path / "far.jsonl"
    lines = [
        {"type": "user", "uuid": "u-far", "message": {"role": "user", "content": "migrate it"}},
        *({"type": "assistant", "uuid": f"a{i}", "message": {
            "id": f"m{i}", "role": "assistant",
            "content": [{"type": "text", "text": "x" * 1000}]}} for i in range(700)),
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    last = last_exchange(path)
    assert last is not None and last.user_uuid == "u-far" and last.prompt == "migrate it"
