"""Lenient reading of Claude Code transcript JSONL (one JSON object per line:
user, assistant and system entries of a session).

The format is internal to Claude Code and changes between releases, the file is appended while
we read it (the last line is often partial) and it can grow to tens of megabytes. So this module
never raises on content: a line it cannot understand is skipped, a file it cannot open reads as
empty, and only the tail of a huge file is read. Standard library, pma_mcp.files and
core.digest only (hook fast path).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from pma_mcp import files
from pma_mcp.core.digest import MAX_CALLS, ToolCall

__all__ = ["Exchange", "last_exchange", "last_user_prompt", "read_exchanges"]

DEFAULT_MAX_BYTES = 20_000_000
# Tail windows tried by last_exchange before falling back to max_bytes: the latest prompt is
# nearly always near the end, and the Stop hook should not parse 20 MB to find it.
_PROMPT_WINDOWS = (256_000, 4_000_000)
# Prompts that are not human input: slash-command echoes and their local output.
_COMMAND_PREFIXES = ("<command-", "<local-command")
# Markers Claude Code writes as user text when a turn is interrupted.
_INTERRUPT_PREFIX = "[Request interrupted by user"
OUTPUT_HEAD = 8_000
OUTPUT_TAIL = 2_000
"""Of a tool's output only the head and the tail are kept (the digest reads no more)."""


@dataclass(frozen=True, slots=True)
class Exchange:
    """One real user prompt, the assistant text that followed it (may be empty) and the tool
    calls of the main thread in between (a subagent's own calls stay in its thread)."""

    user_uuid: str | None
    prompt: str
    reply: str
    timestamp: str | None
    tools: tuple[ToolCall, ...] = ()
    cwd: str | None = None


@dataclass(slots=True)
class _Pending:
    user_uuid: str | None
    prompt: str
    timestamp: str | None
    cwd: str | None = None
    parts: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    by_id: dict[str, int] = field(default_factory=dict)

    def close(self) -> Exchange:
        return Exchange(self.user_uuid, self.prompt, "\n".join(self.parts), self.timestamp,
                        tuple(self.calls), self.cwd)

    def tool_uses(self, content: Any) -> None:
        if not isinstance(content, list):
            return
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "tool_use":
                continue
            if len(self.calls) >= MAX_CALLS:
                return
            name, args = block.get("name"), block.get("input")
            call = ToolCall(name if isinstance(name, str) else "unknown",
                            args if isinstance(args, dict) else {})
            ident = block.get("id")
            if isinstance(ident, str):
                self.by_id[ident] = len(self.calls)
            self.calls.append(call)

    def tool_results(self, content: list[Any], extra: Any) -> None:
        result_type = extra.get("type") if isinstance(extra, dict) else None
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            index = self.by_id.get(str(block.get("tool_use_id")))
            if index is None:
                continue
            call = self.calls[index]
            self.calls[index] = ToolCall(
                call.name, call.input, _bounded(_result_text(block.get("content"))),
                block.get("is_error") is True,
                result_type if isinstance(result_type, str) else None)


def _read_tail(path: str | os.PathLike[str], max_bytes: int) -> bytes | None:
    """The last `max_bytes` of the file, starting at a line boundary; None if unreadable.

    Only a regular file is read (pma_mcp.files): a FIFO would block the open and a device such
    as /dev/zero never ends, and either would hang the hook.
    """
    try:
        with files.open_regular(path) as handle:
            size = os.fstat(handle.fileno()).st_size
            if size <= max_bytes:
                return files.head_of(handle, max_bytes).data  # the file may grow meanwhile
            # Read one byte more: if it is a newline the window already starts on a line.
            handle.seek(size - max_bytes - 1)
            data = files.head_of(handle, max_bytes + 1).data
    except (files.RefusedFileError, OSError, ValueError):
        return None
    cut = data.find(b"\n")
    return b"" if cut < 0 else data[cut + 1 :]


def _iter_objects(data: bytes) -> list[dict[str, Any]]:
    """Decoded JSON objects, one per line, skipping blank, broken and non-object lines.

    Split on b"\\n" only: str.splitlines() would also break on U+2028 and friends, which JSON
    allows unescaped inside strings.
    """
    objects: list[dict[str, Any]] = []
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw.decode("utf-8", errors="replace"))
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict):
            objects.append(obj)
    return objects


def _text_of(content: Any) -> str | None:
    """Prompt text of a user message; None when it is tool output or has no text at all."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "tool_result":
            return None
        text = block.get("text")
        if kind == "text" and isinstance(text, str):
            texts.append(text)
    return "\n".join(texts) if texts else None


def _assistant_texts(content: Any) -> list[str]:
    """Visible reply text of one assistant line; thinking and tool_use blocks are not the reply."""
    if isinstance(content, str):
        return [content.strip()] if content.strip() else []
    if not isinstance(content, list):
        return []
    texts: list[str] = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text":
            text = block.get("text")
            if isinstance(text, str) and text.strip():
                texts.append(text.strip())
    return texts


def _result_text(content: Any) -> str:
    """A tool_result's text: a string, or the text blocks of a list (images are skipped)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = [b["text"] for b in content
             if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)]
    return "\n".join(texts)


def _bounded(text: str) -> str:
    """The head and tail of a large output, cut at line boundaries."""
    if len(text) <= OUTPUT_HEAD + OUTPUT_TAIL:
        return text
    head = text[:OUTPUT_HEAD]
    tail = text[-OUTPUT_TAIL:]
    head = head[: head.rfind("\n")] if "\n" in head else head
    tail = tail[tail.find("\n") + 1 :] if "\n" in tail else tail
    return f"{head}\n…\n{tail}"


def _optional_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


class _Reader:
    """Folds transcript lines into exchanges; one instance per read."""

    def __init__(self) -> None:
        self.exchanges: list[Exchange] = []
        self.current: _Pending | None = None
        self.seen: set[str] = set()

    def feed(self, obj: dict[str, Any]) -> None:
        kind = obj.get("type")
        if kind not in ("user", "assistant") or obj.get("isSidechain") is True:
            return
        message = obj.get("message")
        if not isinstance(message, dict):
            return
        uuid = _optional_str(obj.get("uuid"))
        if uuid is not None:
            if uuid in self.seen:  # a resumed or forked session can repeat lines
                return
            self.seen.add(uuid)
        if kind == "user":
            self._user(obj, message, uuid)
        elif self.current is not None and obj.get("isApiErrorMessage") is not True:
            content = message.get("content")
            self.current.parts.extend(_assistant_texts(content))
            self.current.tool_uses(content)

    def _user(self, obj: dict[str, Any], message: dict[str, Any], uuid: str | None) -> None:
        if obj.get("isMeta") is True or obj.get("isCompactSummary") is True:
            return  # injected context (reminders, summaries), not typed by a human
        content = message.get("content")
        text = _text_of(content)
        if text is None:
            if self.current is not None and isinstance(content, list):
                # tool results belong to the current exchange
                self.current.tool_results(content, obj.get("toolUseResult"))
            return
        prompt = text.strip()
        if not prompt or prompt.startswith(_INTERRUPT_PREFIX):
            return
        self._close()
        if prompt.startswith(_COMMAND_PREFIXES):
            # A slash command ends the exchange; its output is not a reply to the previous prompt.
            return
        self.current = _Pending(uuid, prompt, _optional_str(obj.get("timestamp")),
                                _optional_str(obj.get("cwd")))

    def _close(self) -> None:
        if self.current is not None:
            self.exchanges.append(self.current.close())
            self.current = None

    def finish(self) -> list[Exchange]:
        self._close()
        return self.exchanges


def _parse(data: bytes) -> list[Exchange]:
    reader = _Reader()
    for obj in _iter_objects(data):
        try:
            reader.feed(obj)
        except Exception:  # one odd line must never cost the whole transcript
            continue
    return reader.finish()


def read_exchanges(
    path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_BYTES
) -> list[Exchange]:
    """Every exchange in the transcript, oldest first; [] if the file is missing or unreadable.

    Files over `max_bytes` are read from their tail, so the first exchange may lack its start.
    """
    data = _read_tail(path, max(max_bytes, 1))
    return [] if data is None else _parse(data)


def last_exchange(
    path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_BYTES
) -> Exchange | None:
    """The most recent exchange, reading small tail windows first (Stop hook path).

    Growing windows find a prompt that lies far from the end (long tool output after it)
    without parsing a whole large transcript in the common case.
    """
    limit = max(max_bytes, 1)
    for window in (*(w for w in _PROMPT_WINDOWS if w < limit), limit):
        data = _read_tail(path, window)
        if data is None:
            return None
        exchanges = _parse(data)
        if exchanges:
            return exchanges[-1]
        try:
            if os.path.getsize(path) <= window:
                return None  # the whole file was read; a larger window finds nothing new
        except OSError:
            return None
    return None


def last_user_prompt(
    path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_BYTES
) -> str | None:
    """The most recent real user prompt (see last_exchange)."""
    last = last_exchange(path, max_bytes=max_bytes)
    return last.prompt if last is not None else None
