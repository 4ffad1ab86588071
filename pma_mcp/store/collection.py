"""The Store's side of garbage collection, once for every backend: the collector's reads and
applying its plan in short transactions."""

from __future__ import annotations

import contextlib
import operator
import time
from collections.abc import AsyncGenerator, Sequence
from typing import TYPE_CHECKING

from pma_mcp.core.models import GCFacts, Memory
from pma_mcp.core.scoring import Weights
from pma_mcp.store import ranked_read, rows, steps, upkeep
from pma_mcp.store.base import GCBatching
from pma_mcp.store.seam import Backend, Row
from pma_mcp.store.upkeep import Work

if TYPE_CHECKING:
    from pma_mcp.core.records import GCDecision, TierFacts

_TIER_ROWS = (
    f"SELECT * FROM (SELECT {rows.TIER_M_COLUMNS}, {rows.STATIC_SCORE} AS gc_score "
    "FROM memories m INDEXED BY {index} WHERE m.namespace = ? AND m.superseded_by IS NULL "
    "AND m.created_at {created} ?::float8 {page}) AS s "
    "WHERE gc_score >= ?::float8 AND (memory_type != 'archived' OR gc_score >= ?::float8)"
)
"""TierFacts columns and gc_score of a namespace's current memories created before or since
a time, that reach the thresholds. memories_created holds every column the recent ones need,
memories_gc those of the pages, in the pages' order."""
_RECENT = _TIER_ROWS.format(index="memories_created", created=">=", page="")
_PAGE = _TIER_ROWS.format(index="memories_gc", created="<",
                          page="AND m.importance >= ?::float8 {after}")
_AFTER = "AND (m.importance, m.seq) < (?::float8, ?)"

SCORE_SLACK = 1e-9
"""How far below a bound a score read in SQL may be and still be read (rounding)."""


class Collection:
    """What the collector reads (facts, windows, the bounded best-first read) and applying
    its plan."""

    _backend: Backend

    async def apply_gc(
        self,
        decisions: Sequence[GCDecision],
        memories: dict[str, Memory],
        now: float,
        cursor: tuple[str, int] | None = None,
        *,
        batch: GCBatching | None = None,
    ) -> int:
        """Apply a collector plan in short transactions, writing lineage with every change.

        Each transaction holds at most `batch.changes` changes and ends early once it has
        held the write lock for `batch.seconds`; between transactions GC pauses
        `batch.pause` seconds, longer than SQLite's busy handler sleeps between retries, so
        a writer waiting in another process gets the lock (a 2,500-merge plan in one
        transaction kept other writers waiting ~10 s). Every change is whole within its
        transaction, so a crash between batches leaves a consistent store; the rest of the
        plan is re-planned by the next run.

        The plan was made from a snapshot; a step whose memory has since been deleted or moved
        (a concurrent GC in another process, a forget) is skipped, so nothing is applied twice.
        `cursor` (namespace, seq) records where a bounded run's window ended; it is written
        with the last batch. Returns the number of transactions used.
        """
        limits = batch or GCBatching()
        pending = list(decisions)
        spaces = {m.namespace for m in memories.values()} | ({cursor[0]} if cursor else set())
        done = 0
        transactions = 0
        while True:
            start = done

            async def body(w: Work, start: int = start) -> int:
                began = time.monotonic()
                at = start
                while at < len(pending) and at - start < limits.changes and (
                    at == start or time.monotonic() - began < limits.seconds
                ):
                    await steps.apply_decision(w, pending[at], memories, now)
                    at += 1
                if at >= len(pending) and cursor is not None:
                    await w.tx.execute(
                        "INSERT INTO gc_cursors (namespace, seq) VALUES (?, ?) "
                        "ON CONFLICT (namespace) DO UPDATE SET seq = excluded.seq", *cursor)
                return at

            done = await upkeep.run(self._backend, spaces, body)
            transactions += 1
            if done >= len(pending):
                return transactions
            await self._backend.pause(limits.pause)

    async def tier_facts_by_score(
        self,
        namespace: str,
        now: float,
        weights: Weights,
        *,
        at_least: float,
        archived_at_least: float,
    ) -> AsyncGenerator[TierFacts, None]:
        """See store.ranked_read: the recent memories in one read, the older ones a page at a
        time, the most accesses from the access_count index. The bounds are widened by
        SCORE_SLACK, since the SQL may round a score differently from Python in its last bits
        (callers rescore what they read)."""
        at_least, archived_at_least = at_least - SCORE_SLACK, archived_at_least - SCORE_SLACK
        reads = self._backend.reads
        head = rows.static_score_args(weights, now)
        since = ranked_read.recent_since(now)
        thresholds = (at_least, archived_at_least)

        def scored(r: Row) -> ranked_read.Scored[TierFacts]:
            return ranked_read.Scored(float(r[-1]), int(r[0]), float(r[rows.TIER_IMPORTANCE]),
                                      rows.tier_facts(r))

        recent = [scored(r) for r in await reads.fetch(
            _RECENT, *head, namespace, since, *thresholds)]
        most = await reads.fetchval("SELECT max(access_count) FROM memories "
                                    "INDEXED BY memories_accessed WHERE namespace = ?", namespace)

        async def page(
            lowest: float, after: ranked_read.After
        ) -> list[ranked_read.Scored[TierFacts]]:
            sql = _PAGE.format(after="" if after is None else _AFTER)
            found = await reads.fetch(
                sql + " ORDER BY importance DESC, seq DESC LIMIT ?", *head, namespace, since,
                lowest, *(() if after is None else after), *thresholds, ranked_read.PAGE)
            return [scored(r) for r in found]

        async with contextlib.aclosing(ranked_read.best_first(
                recent, int(most or 0), weights, at_least, page)) as ranked:
            async for row in ranked:
                yield row

    async def gc_facts(self, namespace: str) -> list[GCFacts]:
        """`namespace_memories` (same order) as the collector's lighter rows (see GCFacts)."""
        return (await self._gc_rows(namespace, sequences=False))[0]

    async def gc_facts_and_sequences(
        self, namespace: str
    ) -> tuple[list[GCFacts], dict[int, bytes]]:
        """`gc_facts`, and `namespace_term_sequences` from the same read (a whole-namespace
        plan with merges needs both: one pass over 100k rows instead of two)."""
        return await self._gc_rows(namespace, sequences=True)

    async def _gc_rows(
        self, namespace: str, *, sequences: bool
    ) -> tuple[list[GCFacts], dict[int, bytes]]:
        """Sorted here: SQLite would sort the rows, text included, in a temporary b-tree."""
        columns = f"{rows.FACT_COLUMNS}, term_seq" if sequences else rows.FACT_COLUMNS
        found = list(await self._backend.reads.fetch(
            f"SELECT {columns} FROM memories WHERE namespace = ?", namespace))
        found.sort(key=operator.itemgetter(rows.TIER_ACCESSED, 0))  # accessed_at, seq
        current = (r for r in found if sequences and r[rows.TIER_SUPERSEDED] is None)
        return [rows.facts(r) for r in found], {int(r[0]): bytes(r[-1]) for r in current}

    async def gc_window(self, namespace: str, limit: int) -> list[Memory]:
        """The next `limit` memories of a bounded GC run: after the namespace's cursor in
        insertion order, wrapping around, so repeated runs cover the whole namespace."""
        reads = self._backend.reads
        found = await reads.fetchval("SELECT seq FROM gc_cursors WHERE namespace = ?", namespace)
        after = int(found) if found is not None else 0
        sql = f"{rows.SELECT} WHERE namespace = ? AND seq > ? ORDER BY seq LIMIT ?"
        window = [rows.memory(r) for r in await reads.fetch(sql, namespace, after, limit)]
        if len(window) < limit and after > 0:
            more = [rows.memory(r) for r in await reads.fetch(sql, namespace, 0,
                                                              limit - len(window))]
            seen = {m.seq for m in window}
            window.extend(m for m in more if m.seq not in seen)
        return window
