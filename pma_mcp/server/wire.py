"""stdin of the stdio server, read through a nesting guard before the SDK parses a line.

The SDK parses each stdin line with pydantic; a message nested deeper than pydantic's JSON
parser allows fails there, before any id is known, and the SDK drops it: the caller waits
for an answer that never comes. The intake door refuses metadata nested over 32 levels, but
such a message never reaches it. So each line is scanned first (strings skipped whole, so a
long content costs one regex step): a line nested over MAX_DEPTH levels is answered here
with a JSON-RPC "invalid request" error carrying the request's id, and never parsed.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import sys
from collections.abc import AsyncIterable, AsyncIterator
from contextlib import asynccontextmanager, suppress
from io import TextIOWrapper
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from mcp.types import INVALID_REQUEST, ErrorData, JSONRPCError

from pma_mcp.core.validation import MAX_METADATA_DEPTH

log = logging.getLogger(__name__)

MAX_DEPTH = 200
"""Objects and lists inside each other in one message. pydantic's JSON parser (under the SDK)
parses up to 201 and gives up, silently for the caller, past that; every message it can parse
is left to it, so metadata nested 33 to ~196 levels still reaches the intake door and gets its
message (at most MAX_METADATA_DEPTH)."""

_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}:,]|[^\s\[\]{}:,"]+', re.DOTALL)


def too_deep(line: str, limit: int = MAX_DEPTH) -> tuple[bool, str | int | None]:
    """(whether `line` nests over `limit` levels, the top-level "id" it carries if any)."""
    depth = deepest = 0
    request_id: str | int | None = None
    after_id_key = expect_value = False
    for token in _TOKENS.finditer(line):
        text = token.group()
        if text in "[{":
            depth += 1
            deepest = max(deepest, depth)
            after_id_key = expect_value = False
        elif text in "]}":
            depth -= 1
        elif depth == 1 and text == ":":
            expect_value = after_id_key
        elif depth == 1 and expect_value:
            request_id = _id_value(text)
            after_id_key = expect_value = False
        elif depth == 1:
            after_id_key = text == '"id"'
    return deepest > limit, request_id


def _id_value(text: str) -> str | int | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, str | int) and not isinstance(value, bool) else None


def refusal(request_id: str | int) -> SessionMessage:
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(
        code=INVALID_REQUEST,
        message=(f"the request is nested more than {MAX_DEPTH} levels deep (objects and "
                 f"lists inside each other); metadata may nest at most {MAX_METADATA_DEPTH} "
                 "levels. Flatten it and send it again; nothing was done."))))


class GuardedLines:
    """stdin's lines for the SDK's stdio transport, without the ones nested too deep (those
    are answered on `replies`, the transport's own outgoing stream, once it is set)."""

    def __init__(self, lines: AsyncIterable[str]) -> None:
        self._lines = lines
        self._replies: MemoryObjectSendStream[SessionMessage] | None = None
        self._ready = anyio.Event()

    def answer_on(self, replies: MemoryObjectSendStream[SessionMessage]) -> None:
        self._replies = replies
        self._ready.set()

    def __aiter__(self) -> AsyncIterator[str]:
        return self._guarded()

    async def _guarded(self) -> AsyncIterator[str]:
        async for line in self._lines:
            deep, request_id = too_deep(line)
            if not deep:
                yield line
            elif request_id is None:
                log.warning("dropped a message nested over %d levels deep (it has no id to "
                            "answer)", MAX_DEPTH)
            else:
                await self._ready.wait()
                assert self._replies is not None
                await self._replies.send(refusal(request_id))


@asynccontextmanager
async def claimed_stdin() -> AsyncIterator[GuardedLines | None]:
    """fd 0's lines, guarded; fd 0 itself points at the null device meanwhile (as the SDK does
    for its own reader), so nothing else in the process reads protocol bytes. None when there
    is no fd 0 to claim (the SDK's own reader is used then)."""
    try:
        wire = fcntl.fcntl(sys.stdin.fileno(), fcntl.F_DUPFD_CLOEXEC, 3)
    except (AttributeError, OSError, ValueError):
        yield None
        return
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    text = TextIOWrapper(os.fdopen(wire, "rb"), encoding="utf-8",
                         errors="replace")
    try:
        lines: Any = anyio.wrap_file(text)
        yield GuardedLines(lines)
    finally:
        with suppress(OSError):
            os.dup2(wire, 0)
