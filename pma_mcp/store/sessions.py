"""The Store's record of hook sessions, once for every backend: which memories were put into
a session's context, and when its context was last compacted or cleared."""

from __future__ import annotations

from collections.abc import Sequence

from pma_mcp.core.models import Memory
from pma_mcp.store import rows, upkeep
from pma_mcp.store.base import SessionState
from pma_mcp.store.seam import Backend
from pma_mcp.store.upkeep import Work

_LATER_INJECTION = (
    "INSERT INTO hook_injections (session_id, memory_id, at) VALUES (?, ?, ?) "
    "ON CONFLICT (session_id, memory_id) DO UPDATE SET at = {pick}"
)
_LATER_RESET = (
    "INSERT INTO context_resets (session_id, at) VALUES (?, ?) "
    "ON CONFLICT (session_id) DO UPDATE SET at = {pick}"
)


class Sessions:
    """Injections and context resets per hook session, and a session's memories."""

    _backend: Backend

    async def session_memories(self, namespace: str, session_id: str) -> list[Memory]:
        return [rows.memory(r) for r in await self._backend.reads.fetch(
            f"{rows.SELECT} WHERE namespace = ? AND session_id = ? ORDER BY seq",
            namespace, session_id)]

    async def injected_ids(self, session_id: str) -> set[str]:
        """Ids of the memories already injected into `session_id`'s context."""
        found = await self._backend.reads.fetch(
            "SELECT memory_id FROM hook_injections WHERE session_id = ?", session_id)
        return {str(r[0]) for r in found}

    async def context_reset_at(self, session_id: str) -> float | None:
        """When `session_id`'s context was last compacted or cleared, if it was."""
        value = await self._backend.reads.fetchval(
            "SELECT at FROM context_resets WHERE session_id = ?", session_id)
        return float(value) if value is not None else None

    async def record_injections(
        self,
        session_id: str | None,
        memories: Sequence[Memory],
        now: float,
        *,
        forget_before: float,
        reason: str = "",
    ) -> None:
        """Count an access for memories put into a session's context and remember them there.

        One write: the access bump, the session's record (skipped without a session id) and
        dropping records older than `forget_before`, so the table cannot grow without bound.
        """
        if not memories:
            return

        async def body(w: Work) -> None:
            await upkeep.touch(w.tx, memories, now, reason)
            if session_id is None:
                return
            await w.tx.execute("DELETE FROM hook_injections WHERE at < ?", forget_before)
            await w.tx.executemany(_LATER_INJECTION.format(pick="excluded.at"),
                                   [(session_id, i, now) for i in sorted({m.id for m in
                                                                           memories})])

        await upkeep.run(self._backend, {m.namespace for m in memories}, body)

    async def clear_injections(
        self, session_id: str, now: float, *, forget_before: float
    ) -> int:
        """Forget what was injected into `session_id` and note when: its context was compacted
        or cleared, so it no longer holds what it had (see `context_reset_at`)."""
        async def body(w: Work) -> int:
            gone = await w.tx.fetch(
                "DELETE FROM hook_injections WHERE session_id = ? RETURNING memory_id",
                session_id)
            await w.tx.execute("DELETE FROM context_resets WHERE at < ?", forget_before)
            await w.tx.execute(_LATER_RESET.format(pick="excluded.at"), session_id, now)
            return len(gone)

        return await upkeep.run(self._backend, (), body)

    async def session_state(self) -> SessionState:
        reads = self._backend.reads
        injections = await reads.fetch("SELECT session_id, memory_id, at FROM hook_injections")
        resets = await reads.fetch("SELECT session_id, at FROM context_resets")
        return SessionState([(str(a), str(b), float(c)) for a, b, c in injections],
                            [(str(a), float(b)) for a, b in resets])

    async def restore_session_state(self, state: SessionState) -> None:
        """Merge another store's session state in (the later time wins per key)."""
        async def body(w: Work) -> None:
            await w.tx.executemany(_LATER_INJECTION.format(
                pick="greatest(hook_injections.at, excluded.at)"), state.injections)
            await w.tx.executemany(_LATER_RESET.format(
                pick="greatest(context_resets.at, excluded.at)"), state.resets)

        await upkeep.run(self._backend, (), body)
