"""The Store's reads of memories and their text statistics, once for every backend."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pma_mcp.core.models import Memory, MemoryType, Scope
from pma_mcp.core.scoring import Weights
from pma_mcp.core.text import relevance
from pma_mcp.core.text.relevance import ScopeStats, TermStats
from pma_mcp.store import rows
from pma_mcp.store.base import Candidate
from pma_mcp.store.seam import Backend


class Queries:
    """Memories by id, prefix, seq and content; lexical and query-less candidates; the
    statistics lexical ranking reads."""

    _backend: Backend

    async def _memories(self, sql: str, *args: Any) -> list[Memory]:
        return [rows.memory(r) for r in await self._backend.reads.fetch(sql, *args)]

    async def get(self, memory_id: str) -> Memory | None:
        found = await self._memories(f"{rows.SELECT} WHERE id = ?", memory_id)
        return found[0] if found else None

    async def find_by_prefix(
        self, prefix: str, namespaces: Sequence[str], limit: int = 20
    ) -> list[Memory]:
        """Memories in `namespaces` whose id starts with `prefix` (hex only: a range on the id
        index, no LIKE escapes).

        `+namespace` keeps SQLite's planner on the id index: without statistics it preferred
        a namespace index and read the whole namespace (~0.1 s at 100k) to find one id."""
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        return await self._memories(
            f'{rows.SELECT} WHERE id >= ? AND id < ? AND +namespace IN ? ORDER BY id COLLATE "C" '
            "LIMIT ?", prefix, upper, list(namespaces), limit)

    async def memories_by_seq(self, seqs: Sequence[int]) -> dict[int, Memory]:
        """Memories by seq, any number of them."""
        found: dict[int, Memory] = {}
        for chunk in rows.chunks(seqs):
            found.update((m.seq, m) for m in await self._memories(
                f"{rows.SELECT} WHERE seq IN ?", chunk))
        return found

    async def has_content(self, namespace: str, content_hash: str) -> bool:
        return await self._backend.reads.fetchval(
            "SELECT 1 FROM memories WHERE namespace = ? AND content_hash = ?",
            namespace, content_hash) is not None

    async def statistics(
        self, terms: Sequence[str], namespaces: Sequence[str]
    ) -> tuple[TermStats, ScopeStats]:
        """In one read: store-wide memories and own-content document count per term (the row
        budget's input, see relevance.term_stats), and the same summed over `namespaces`
        only, with their total length (the scores' input). Kept at write time: counting a
        term's postings would walk all of them."""
        found = await self._backend.reads.fetch(
            "SELECT 'all', NULL, coalesce(sum(docs), 0), 0 FROM namespace_stats "
            "UNION ALL SELECT 'scope', NULL, coalesce(sum(docs), 0), coalesce(sum(length), 0) "
            "FROM namespace_stats WHERE namespace IN ? "
            "UNION ALL SELECT 'all', term, df, 0 FROM term_df WHERE term IN ? "
            "UNION ALL SELECT 'scope', term, sum(df), 0 FROM namespace_terms "
            "WHERE namespace IN ? AND term IN ? GROUP BY term",
            list(namespaces), list(terms), list(namespaces), list(terms))
        counts: dict[str, dict[str, int]] = {"all": dict.fromkeys(terms, 0),
                                             "scope": dict.fromkeys(terms, 0)}
        totals: dict[str, tuple[int, int]] = {}
        for kind, term, n, length in found:
            if term is None:
                totals[kind] = (int(n), int(length))
            else:
                counts[kind][term] = int(n)
        docs, length = totals["scope"]
        return (relevance.term_stats(totals["all"][0], counts["all"]),
                ScopeStats(docs, length, counts["scope"]))

    async def term_stats(self, terms: Sequence[str]) -> TermStats:
        """Memories in the store and per term how many hold it in their own content."""
        return (await self.statistics(terms, ()))[0]

    async def _analyse(
        self, query: str, namespaces: Sequence[str]
    ) -> relevance.AnalysedQuery | None:
        terms = relevance.query_terms(query)
        if not terms:
            return None
        return relevance.analysed(query, terms, *await self.statistics(list(terms), namespaces))

    async def lexical_candidates(self, query: str, scope: Scope, limit: int) -> list[Candidate]:
        """The backend's index picks the candidates (Backend.candidates); core.text.relevance scores
        them from their term vectors and the scope's statistics."""
        analysed = await self._analyse(query, scope.namespaces)
        if analysed is None or not analysed.searched:
            return []
        found = await self._backend.candidates(analysed, scope, limit)
        sims = relevance.similarities([(rows.document(r, 5), r[4]) for r in found], analysed)
        return [rows.ranked(r, sim) for r, sim in zip(found, sims, strict=True)]

    async def sharing_candidates(
        self, text: str, scope: Scope, limit: int,
        choose: Callable[[Mapping[str, int]], Sequence[str]],
    ) -> list[Candidate]:
        """Up to `limit` memories in `scope` whose own text holds one of the terms `choose`
        picks from `text`'s (given how many memories of the store hold each in their own
        text: what a search of them walks), best first by BM25 over those terms; semantic 0
        (the caller compares Candidate.terms)."""
        terms = relevance.query_terms(text, limit=None)
        if not terms:
            return []
        index, stats = await self.statistics(list(terms), scope.namespaces)
        chosen = {t: terms[t] for t in choose(index.content_freq) if t in terms}
        analysed = relevance.own_text_query(chosen, index, stats)
        if not analysed.searched:
            return []
        return [rows.ranked(r, 0.0) for r in await self._backend.candidates(analysed, scope, limit)]

    async def similarity_of(self, query: str, memory: Memory, namespaces: Sequence[str]) -> float:
        analysed = await self._analyse(query, namespaces)
        if analysed is None:
            return 0.0
        row = await self._backend.reads.fetchrow(
            f"SELECT {rows.DOCUMENT}, m.speaker FROM memories m WHERE seq = ?", memory.seq)
        if row is None:
            return 0.0
        return relevance.similarities([(rows.document(row, 0), row[4])], analysed)[0]

    async def static_candidates(
        self, scope: Scope, limit: int, now: float, weights: Weights
    ) -> list[Candidate]:
        """The `limit` best memories by the query-less composite (semantic = 0); callers
        rescore them with scoring.py, the source of truth."""
        where, params = rows.scope_where(scope)
        found = await self._backend.reads.fetch(
            "SELECT m.seq, m.importance, m.created_at, m.access_count FROM memories m "
            f"WHERE {where} ORDER BY {rows.STATIC_SCORE} DESC, m.seq DESC LIMIT ?",
            *params, *rows.static_score_args(weights, now), limit)
        return [rows.ranked(r, 0.0) for r in found]

    async def memories_matching_all(
        self, namespace: str, groups: Sequence[Sequence[str]], limit: int = 5_000
    ) -> list[Memory]:
        """Current memories of `namespace` whose own text holds every word of at least one
        group (consolidate's near-duplicate neighbours). Words are letters and digits."""
        if not any(groups):
            return []
        return [rows.memory(r) for r in
                await self._backend.matching_all(namespace, groups, limit)]

    async def content_vectors(self, seqs: Sequence[int]) -> dict[int, str]:
        """Stored content term vectors (" stem:tf", see bm25.encode) of memories by seq."""
        return {seq: str(v) for seq, v in (await self._column_by_seq("terms", seqs)).items()}

    async def term_sequences(self, seqs: Sequence[int]) -> dict[int, bytes]:
        """Stored content term sequences (analysis.packed_ids) of memories by seq."""
        return {seq: bytes(v) for seq, v in (await self._column_by_seq("term_seq", seqs)).items()}

    async def _column_by_seq(self, column: str, seqs: Sequence[int]) -> dict[int, Any]:
        out: dict[int, Any] = {}
        for chunk in rows.chunks(seqs):
            out.update((int(seq), value) for seq, value in await self._backend.reads.fetch(
                f"SELECT seq, {column} FROM memories WHERE seq IN ?", chunk))
        return out

    async def namespace_term_sequences(self, namespace: str) -> dict[int, bytes]:
        """`term_sequences` of every current memory of one namespace, in one read."""
        found = await self._backend.reads.fetch(
            "SELECT seq, term_seq FROM memories WHERE namespace = ? AND superseded_by IS NULL",
            namespace)
        return {int(seq): bytes(ids) for seq, ids in found}

    async def namespace_doc_freq(
        self, namespace: str, terms: Sequence[str] | None = None
    ) -> tuple[int, dict[str, int]]:
        """(memories, per-term document count) of one namespace: every term it holds, or
        only `terms`. Another namespace's words never count (see consolidate)."""
        _, stats = await self.statistics(terms or (), [namespace])
        if terms is not None:
            return stats.docs, dict(stats.doc_freq)
        found = await self._backend.reads.fetch(
            "SELECT term, df FROM namespace_terms WHERE namespace = ?", namespace)
        return stats.docs, {str(t): int(df) for t, df in found}

    async def namespace_memories(
        self,
        namespace: str,
        *,
        limit: int | None = None,
        tiers: Sequence[MemoryType] | None = None,
    ) -> list[Memory]:
        """Memories of one namespace, longest idle first."""
        sql = f"{rows.SELECT} WHERE namespace = ?"
        params: list[Any] = [namespace]
        if tiers:
            sql += " AND memory_type IN ?"
            params.append([t.value for t in tiers])
        sql += " ORDER BY accessed_at, seq"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return await self._memories(sql, *params)

    async def memories_after(self, after_seq: int, limit: int) -> list[Memory]:
        return await self._memories(f"{rows.SELECT} WHERE seq > ? ORDER BY seq LIMIT ?",
                                    after_seq, limit)
