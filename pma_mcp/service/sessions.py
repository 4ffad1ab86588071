"""What a conversation already holds: the memories the prompt hook injected into it and the
ones it saved itself, so neither is put in again while its transcript still shows them.

Session ids are stored as the intake door cleans them, so they are looked up the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pma_mcp.core.models import Memory
from pma_mcp.service.context import DAY, Context

INJECTION_RECORD_DAYS = 7
"""How long a session's injection record is kept (sessions are rarely resumed later)."""


class Sessions:
    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    async def injected_ids(self, session_id: str) -> set[str]:
        """Memories the prompt hook already put into this session's context."""
        session = self._ctx.intake.session(session_id)
        return set() if session is None else await self._ctx.store.injected_ids(session)

    async def record_injections(
        self, session_id: str | None, memories: Sequence[Memory], *, reason: str = "in context"
    ) -> None:
        """Count an access for each memory put into a session's context and note it there.

        Records older than INJECTION_RECORD_DAYS are dropped in the same write.
        """
        now = self._ctx.clock()
        session = self._ctx.intake.session(session_id)
        await self._ctx.store.record_injections(
            session, memories, now, forget_before=_forget_before(now), reason=reason)

    async def reset_injections(self, session_id: str) -> int:
        """After a compaction or /clear the context no longer holds what was injected, nor
        what the session saved until now."""
        session = self._ctx.intake.session(session_id)
        if session is None:
            return 0
        now = self._ctx.clock()
        return await self._ctx.store.clear_injections(
            session, now, forget_before=_forget_before(now))

    async def in_context(self, session_id: str | None) -> Callable[[Memory], bool]:
        """Whether a memory is already in `session_id`'s context: it was saved from that
        session's own exchanges after the session was last compacted or cleared (or ever, if
        it never was), so its transcript still holds it."""
        session = self._ctx.intake.session(session_id)
        if session is None:
            return lambda memory: False
        reset = await self._ctx.store.context_reset_at(session)
        since = float("-inf") if reset is None else reset
        return lambda memory: (memory.session_id == session
                               and memory.created_at.timestamp() > since)

    async def session_memories(
        self, session_id: str, *, namespace: str | None = None
    ) -> list[Memory]:
        """The namespace's memories saved from one conversation, oldest first."""
        session = self._ctx.intake.session(session_id)
        if session is None:
            return []
        return await self._ctx.store.session_memories(self._ctx.own(namespace), session)


def _forget_before(now: float) -> float:
    return now - INJECTION_RECORD_DAYS * DAY
