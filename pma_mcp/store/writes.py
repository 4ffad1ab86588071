"""The Store's writes, once for every backend: each one transaction of store.steps."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pma_mcp.core.models import Memory
from pma_mcp.store import steps, upkeep
from pma_mcp.store.rows import INSERT_LINEAGE
from pma_mcp.store.seam import Backend
from pma_mcp.store.upkeep import Work


class Writes:
    """Store, import, count accesses, edit, forget, move and restore memories."""

    _backend: Backend

    async def insert(
        self, memory: Memory, *, supersedes: Memory | None = None, reason: str = ""
    ) -> tuple[Memory, bool]:
        """Store `memory` unless its namespace already holds the same content.

        Returns (stored memory, deduplicated). An exact duplicate is not stored again: the
        existing memory is reinforced (one more access) and returned. With `supersedes`, the
        old memory is archived and points at the new one, in the same transaction.
        """
        async def body(w: Work) -> tuple[Memory, bool]:
            return await steps.insert(w, memory, supersedes, reason)

        spaces = [memory.namespace] + ([supersedes.namespace] if supersedes else [])
        return await upkeep.run(self._backend, spaces, body)

    async def insert_many(
        self,
        memories: Sequence[Memory],
        *,
        skip_existing: bool,
        progress: Callable[[int], None] | None = None,
        lineage: bool = True,
    ) -> int:
        """Import memories verbatim (ids, counts, timestamps) in ONE transaction.

        With `skip_existing`, a memory whose id or content already exists is skipped; without
        it, such a memory aborts the whole import (nothing is half-imported). `progress` is
        called with the number of records checked so far (a CLI progress bar).
        """
        async def body(w: Work) -> int:
            chosen = await steps.accepted(w, memories, skip_existing, progress)
            if chosen:
                await self._backend.insert_rows(w.tx, chosen, "imported" if lineage else None,
                                                w.count_terms)
            return len(chosen)

        return await upkeep.run(self._backend, {m.namespace for m in memories}, body)

    async def touch(self, memories: Sequence[Memory], now: float, reason: str = "") -> None:
        """Count one access for each memory (access_count, accessed_at, lineage): one write.

        Skipped where the backend refuses writes up front (a damaged file): reads still work.
        """
        if not memories or not self._backend.accepts_writes:
            return

        async def body(w: Work) -> None:
            await upkeep.touch(w.tx, memories, now, reason)

        await upkeep.run(self._backend, {m.namespace for m in memories}, body)

    async def delete(self, memory: Memory, now: float, reason: str) -> None:
        async def body(w: Work) -> None:
            await steps.delete(w, memory, now, reason)

        await upkeep.run(self._backend, [memory.namespace], body)

    async def edit(self, old: Memory, new: Memory, now: float, reason: str) -> Memory:
        """Rewrite `old`'s editable fields as `new`'s in one transaction, keeping its id.

        Labels, the full-text entry, term counts, the speaker and the context of its session
        neighbours follow, and an `edited` lineage event is written. ConflictError if the
        memory changed since `old` was read; NotFoundError if it went; InvalidInputError if
        the new content is another memory's in the namespace.
        """
        async def body(w: Work) -> Memory:
            return await steps.edit(w, old, new, now, reason)

        return await upkeep.run(self._backend, [old.namespace], body)

    async def move_namespace(self, old: str, new: str, now: float) -> int:
        """Fold namespace `old` into `new`; how many memories moved (store.steps)."""
        async def body(w: Work) -> int:
            return await steps.move_namespace(w, old, new, now)

        return await upkeep.run(self._backend, [old, new], body)

    async def restore_lineage(self, rows: Sequence[Sequence[Any]]) -> int:
        """Insert lineage rows as read from another store (`doctor --repair`, migrate); how
        many. Each holds memory_id, namespace, event, at, from_tier, to_tier, score, reason,
        count, last_at; one that does not fit the table is left out."""
        async def body(w: Work) -> int:
            return await w.tx.insert_fitting(INSERT_LINEAGE, rows)

        return await upkeep.run(self._backend, (), body)
