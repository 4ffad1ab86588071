"""MemoryStore: the one `Store` (store/base.py), written once above the backend seam.

Its methods are grouped by concern in mixins: writes.py (store, import, edit, forget, move),
queries.py (memories and lexical candidates), browsing.py (pages, counts, lineage),
collection.py (GC reads and applying a plan), sessions.py (hook sessions). They conduct the
rules in store.steps and store.upkeep over a `Backend` (store/seam.py), which only runs
statements and keeps its full-text index. `SQLiteStore` and `PostgresStore` are this class
opened on their backend.
"""

from __future__ import annotations

import json
from collections import Counter

from pma_mcp.core.text import bm25
from pma_mcp.store.base import Consistency
from pma_mcp.store.browsing import Browsing
from pma_mcp.store.collection import Collection
from pma_mcp.store.queries import Queries
from pma_mcp.store.seam import Backend, Row
from pma_mcp.store.sessions import Sessions
from pma_mcp.store.writes import Writes

_LIMIT = 100
"""Problems listed per kind by check_consistency."""


class MemoryStore(Writes, Queries, Browsing, Collection, Sessions):
    """The one door to stored memories, over one backend."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    @property
    def backend(self) -> str:
        """"sqlite" or "postgresql"."""
        return self._backend.name

    @property
    def location(self) -> str:
        """Where the store is, for people: a path, or a URL without its password."""
        return self._backend.location

    async def identity(self) -> tuple[object, ...]:
        return (self._backend.name, *await self._backend.identity())

    async def close(self) -> None:
        await self._backend.close()

    async def schema_version(self) -> int:
        return await self._backend.schema_version()

    async def integrity_check(self) -> str:
        """"ok", or the first problem the backend's own check reports."""
        return await self._backend.integrity_check()

    async def refresh_statistics(self) -> None:
        """After a bulk load (`migrate --to`): bring the query planner's statistics up to
        date, where the backend keeps any."""
        await self._backend.refresh_statistics()

    async def check_consistency(self) -> Consistency:
        """Compare memories with their index entries, labels and statistics (tests, doctor):
        the backend checks its index, the rest is recounted from the rows here."""
        reads = self._backend.reads
        found = await reads.fetch("SELECT seq, namespace, tags, linked_entities, terms, "
                                  "label_terms, doc_len FROM memories ORDER BY seq")
        labels: dict[int, set[tuple[str, str]]] = {}
        for seq, kind, value in await reads.fetch("SELECT seq, kind, value FROM memory_labels"):
            labels.setdefault(int(seq), set()).add((str(kind), str(value)))
        index_rows, missing, orphaned, mismatched, vectors_off = await self._backend.check_index()
        for r in found:
            expected = ({("tag", t) for t in json.loads(r[2])}
                        | {("entity", e) for e in json.loads(r[3])})
            if labels.get(int(r[0]), set()) != expected:
                mismatched.append(int(r[0]))
        return Consistency(
            memories=len(found), fts_rows=index_rows, missing_in_fts=missing[:_LIMIT],
            orphaned_fts=orphaned[:_LIMIT], mismatched=mismatched[:_LIMIT],
            term_counts_off=await self._term_counts_off(found), vectors_off=vectors_off[:_LIMIT],
            namespace_stats_off=await self._namespace_stats_off(found))

    async def _term_counts_off(self, found: list[Row]) -> list[str]:
        """Terms whose store-wide document count is not the memories' content vectors'."""
        expected: Counter[str] = Counter()
        for r in found:
            expected.update(bm25.decode(str(r[4])).keys())
        kept = {str(t): int(df) for t, df in
                await self._backend.reads.fetch("SELECT term, df FROM term_df")}
        return sorted(t for t in expected.keys() | kept.keys()
                      if expected.get(t, 0) != kept.get(t, 0))[:_LIMIT]

    async def _namespace_stats_off(self, found: list[Row]) -> list[str]:
        """Namespaces whose kept document count, length or term counts are not their rows'."""
        docs: Counter[str] = Counter()
        length: Counter[str] = Counter()
        terms: Counter[tuple[str, str]] = Counter()
        for r in found:
            namespace = str(r[1])
            docs[namespace] += 1
            length[namespace] += int(r[6])
            for term in set(bm25.decode(str(r[4]))) | set(bm25.decode(str(r[5]))):
                terms[namespace, term] += 1
        reads = self._backend.reads
        stats = {str(ns): (int(d), int(n)) for ns, d, n in
                 await reads.fetch("SELECT namespace, docs, length FROM namespace_stats")}
        kept = {(str(ns), str(t)): int(df) for ns, t, df in
                await reads.fetch("SELECT namespace, term, df FROM namespace_terms")}
        off = {ns for ns in docs.keys() | stats.keys()
               if stats.get(ns, (0, 0)) != (docs.get(ns, 0), length.get(ns, 0))}
        off |= {ns for (ns, _), _ in set(terms.items()) ^ set(kept.items())}
        return sorted(off)[:_LIMIT]
