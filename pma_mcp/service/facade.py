"""MemoryService: the use cases, and the only place the pieces meet (the seed's MemoryManager).

Every caller — MCP tools, hooks, CLI — goes through here, so validation, namespace visibility
and lineage are the same for all. A memory is visible to a caller only in the caller's
namespace and, where asked, the global "default" namespace; ids and id prefixes are resolved
inside those namespaces only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import logging
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from pma_mcp.config import Settings
from pma_mcp.core import collector, editing, export_format, redact, validation
from pma_mcp.core.budget import TokenCounter, default_counter, pack
from pma_mcp.core.errors import AmbiguousError, InvalidInputError, NotFoundError
from pma_mcp.core.models import (
    AddResult,
    Browse,
    ContextPack,
    DeleteResult,
    GCDecision,
    GCPreview,
    GCResult,
    ImportItem,
    ImportReport,
    InspectResult,
    Memory,
    MemoryEdit,
    MemoryType,
    MergePair,
    NewMemory,
    Overview,
    Page,
    Planned,
    Related,
    Scope,
    ScoredMemory,
    SeedResult,
    Stats,
    TierStats,
    TierUse,
    UpdateResult,
    build_memory,
    content_hash,
    to_datetime,
)
from pma_mcp.core.namespaces import AUTO_SAVED_TAG, GLOBAL_NAMESPACE
from pma_mcp.core.scoring import breakdown
from pma_mcp.core.scoring import score as composite_score
from pma_mcp.core.text import lexicon, relevance
from pma_mcp.service import graph, retrieval
from pma_mcp.store import Store, fold_namespaces, open_store


@contextlib.contextmanager
def _cycle_collection_paused() -> Iterator[None]:
    """Pause CPython's cycle collector while a GC plan is made.

    A whole-namespace plan makes ~10 objects per memory, a million at 100k memories, and the
    collector's full passes over the growing heap then cost ~1.5 s of a 4 s plan. A plan's
    objects form no cycles (reference counting frees them), so nothing piles up meanwhile.
    Re-enabled only by whoever paused it (plans may overlap on one server)."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


Clock = Callable[[], float]
log = logging.getLogger(__name__)

MAX_LIMIT = 50
MAX_QUERY_CHARS = 10_000
MAX_TOKEN_BUDGET = 1_000_000
PREVIEW_CHARS = 120
_SCORE_SLACK = 1e-9
"""SQLite and Python may round a score differently in the last bits."""
_READ_CHUNK = 900
"""Memories read by seq per statement (SQLite bounds a statement's parameters)."""
MAX_PAGE = 200
OVERVIEW_GC_WINDOW = 200
"""The overview shows GC pressure over the next window of a bounded pass, not a full one."""
CHART_PERIODS = 60
"""The overview's chart has at most this many bars (periods of whole days)."""
DAY = 86_400.0
INJECTION_RECORD_DAYS = 7
"""How long a session's injection record is kept (sessions are rarely resumed later)."""


class MemoryService:
    """Open with `async with await MemoryService.open(settings) as service:`."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        *,
        clock: Clock = time.time,
        counter: TokenCounter | None = None,
        merge_near_duplicates: bool = True,
    ) -> None:
        self.store = store
        self.settings = settings
        self._clock = clock
        self._counter = counter
        self._merge = merge_near_duplicates

    @classmethod
    async def open(
        cls,
        settings: Settings,
        *,
        clock: Clock = time.time,
        counter: TokenCounter | None = None,
        merge_near_duplicates: bool = True,
        busy_timeout_ms: int | None = None,
    ) -> MemoryService:
        """`busy_timeout_ms`: how long a write waits for another process (default 15 s)."""
        store = await open_store(settings, busy_timeout_ms=busy_timeout_ms)
        service = cls(store, settings, clock=clock, counter=counter,
                      merge_near_duplicates=merge_near_duplicates)
        await service._fold_path_namespaces()
        return service

    async def _fold_path_namespaces(self) -> None:
        """Memories of this project's older path namespaces join its git namespace.

        Before a project was named by its git remote its memories sat under its path
        (Settings.path_namespaces); the first open from that checkout moves them, merging
        exact duplicates (Store.move_namespace). Later opens find nothing to move: one
        indexed count per path. A failure (locked, read-only) leaves it for the next open.
        """
        moves = {old: self.namespace for old in self.settings.path_namespaces
                 if await self.store.count(old)}
        await fold_namespaces(self.store, moves, self._clock())

    async def close(self) -> None:
        await self.store.close()

    async def __aenter__(self) -> MemoryService:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # ------------------------------------------------------------ namespaces

    @property
    def namespace(self) -> str:
        return self.settings.namespace

    def _own(self, namespace: str | None) -> str:
        return self.namespace if namespace is None else validation.namespace(namespace)

    def _visible(self, namespace: str | None, include_global: bool = True) -> tuple[str, ...]:
        own = self._own(namespace)
        personal = self.settings.global_namespace
        if include_global and own != personal:
            return (own, personal)
        return (own,)

    @property
    def counter(self) -> TokenCounter:
        if self._counter is None:
            self._counter = default_counter()
        return self._counter

    # ----------------------------------------------------------------- write

    async def add(
        self,
        content: object,
        *,
        importance: object = 0.5,
        memory_type: object = MemoryType.EPISODIC,
        tags: object = None,
        linked_entities: object = None,
        metadata: object = None,
        session_id: object = None,
        namespace: str | None = None,
        supersedes: object = None,
    ) -> AddResult:
        """Store a memory; an exact duplicate in the namespace is reinforced instead."""
        new = validation.new_memory(
            content=content,
            namespace_=self._own(namespace),
            importance_=importance,
            memory_type_=memory_type,
            tags=tags,
            linked_entities=linked_entities,
            metadata_=metadata,
            session_id=session_id,
            supersedes=supersedes,
            author_=self.settings.author,
        )
        new = self._scrubbed(new)
        old = None
        if new.supersedes is not None:
            old = await self._resolve(new.supersedes, self._visible(new.namespace), "supersedes")
        memory = self._memory(new, _new_id(), self._clock())
        reason = f"supersedes {old.id}" if old is not None else "stored"
        stored, dedup = await self.store.insert(memory, supersedes=old, reason=reason)
        return AddResult(memory=stored, deduplicated=dedup)

    async def delete(self, memory_id: object, *, namespace: str | None = None) -> DeleteResult:
        memory = await self._resolve(memory_id, self._visible(namespace))
        await self.store.delete(memory, self._clock(), reason="forgotten on request")
        return DeleteResult(deleted_id=memory.id,
                            content_preview=lexicon.preview(memory.content, PREVIEW_CHARS))

    async def update(
        self,
        memory_id: object,
        *,
        content: object = None,
        importance: object = None,
        memory_type: object = None,
        tags: object = None,
        linked_entities: object = None,
        metadata: object = None,
        namespace: str | None = None,
    ) -> UpdateResult:
        """Edit a memory in place (same id), validated as `add` validates; None = unchanged.

        Content, tags and entities are replaced whole. An edit that changes nothing writes
        nothing (so repeating one is harmless); otherwise lineage gets an `edited` event.
        """
        edit = self._edit_scrubbed(validation.memory_edit(
            content=content, importance_=importance, memory_type_=memory_type, tags=tags,
            linked_entities=linked_entities, metadata_=metadata,
        ))
        memory = await self._resolve(memory_id, self._visible(namespace))
        new = editing.applied(memory, edit, count_tokens=self.counter.count,
                              content_hash=content_hash)
        changed = editing.changed_fields(memory, new)
        if not changed:
            return UpdateResult(memory=memory, changed=[])
        stored = await self.store.edit(memory, new, self._clock(),
                                      editing.describe(memory, new, changed))
        return UpdateResult(memory=stored, changed=changed)

    def _edit_scrubbed(self, edit: MemoryEdit) -> MemoryEdit:
        """New text as the store takes text from anyone: `<private>` blocks removed, secrets
        redacted (PMA_REDACT). An edit is often made to take a secret out; it must not be
        the way one gets in."""
        if edit.content is None:
            return edit
        from pma_mcp.core.redact import sanitize_for_storage

        text = sanitize_for_storage(edit.content, redact_secrets=self.settings.redact).strip()
        if not text:
            raise InvalidInputError("content", "nothing is left once <private> blocks are removed")
        return dataclasses.replace(edit, content=text)

    # ------------------------------------------------------------------ read

    async def get(self, memory_id: object, *, namespace: str | None = None) -> Memory:
        return await self._resolve(memory_id, self._visible(namespace))

    async def search(
        self,
        query: object,
        *,
        namespace: str | None = None,
        memory_type: object = None,
        tags: object = None,
        limit: object = 5,
        min_score: object = 0.0,
        include_global: bool = True,
        touch: bool = True,
    ) -> list[ScoredMemory]:
        """Ranked memories for `query` (None or "" → by composite score alone)."""
        text = _query(query)
        scope = self._scope(namespace, include_global, memory_type, tags)
        return await retrieval.search(
            self.store, text, scope,
            limit=_bounded_int("limit", limit, 1, MAX_LIMIT),
            min_score=_unit("min_score", min_score),
            now=self._clock(), weights=self.settings.weights, touch=touch,
        )

    async def get_context(
        self,
        query: object = "",
        *,
        token_budget: object = 2048,
        namespace: str | None = None,
        include_global: bool = True,
        min_score: object = 0.0,
        touch: bool = True,
        min_similarity: float = 0.0,
        exclude_ids: Collection[str] = (),
    ) -> ContextPack:
        """The best memories that fit `token_budget`, packed greedily by score.

        `min_similarity` is a relevance floor on semantic_similarity alone (the prompt hook's:
        importance or recency must never carry an unrelated memory in); `exclude_ids` are
        left out before packing, so they cost no budget.
        """
        budget = _bounded_int("token_budget", token_budget, 1, MAX_TOKEN_BUDGET)
        text = _query(query)
        scope = self._scope(namespace, include_global, None, None)
        floor = _unit("min_similarity", min_similarity)
        now = self._clock()
        # Excluded memories can take at most len(exclude_ids) places of the pool.
        pool = min(relevance.CANDIDATES, _pack_pool(budget) + len(exclude_ids))
        ranked = await retrieval.search(
            self.store, text, scope, limit=pool,
            min_score=_unit("min_score", min_score), now=now,
            weights=self.settings.weights, touch=False, min_similarity=floor,
        )
        if exclude_ids:
            ranked = [r for r in ranked if r.memory.id not in exclude_ids]
        packed = pack(ranked, budget)
        if touch and packed.memories:
            await self.store.touch([r.memory for r in packed.memories], now, reason="in context")
        return packed

    async def get_contexts(
        self,
        query: object,
        budgets: Mapping[str, int],
        *,
        min_similarity: float = 0.0,
        exclude_ids: Collection[str] = (),
        exclude: Callable[[Memory], bool] | None = None,
    ) -> dict[str, ContextPack]:
        """One retrieval over several namespaces, each packed into its own token budget.

        The prompt hook's split (project 1,400 tokens + global 600) in one index pass rather
        than one per namespace: about 40% less time. Nothing is touched; the caller counts
        an access for what it really shows. Memories in `exclude_ids` or for which `exclude`
        holds are left out before packing (they cost no budget).
        """
        limits = {
            validation.namespace(name): _bounded_int("token_budget", budget, 1, MAX_TOKEN_BUDGET)
            for name, budget in budgets.items()
        }
        ranked = await retrieval.search(
            self.store, _query(query), Scope(namespaces=tuple(limits)),
            limit=relevance.CANDIDATES, now=self._clock(), weights=self.settings.weights,
            touch=False, min_similarity=_unit("min_similarity", min_similarity),
        )
        kept = [r for r in ranked if r.memory.id not in exclude_ids
                and (exclude is None or not exclude(r.memory))]
        return {
            name: pack([r for r in kept if r.memory.namespace == name], budget)
            for name, budget in limits.items()
        }

    async def inspect(
        self, memory_id: object, *, query: object = None, namespace: str | None = None
    ) -> InspectResult:
        memory = await self._resolve(memory_id, self._visible(namespace))
        now = self._clock()
        text = _query(query)
        semantic = (await retrieval.similarity_of(self.store, text, memory,
                                                  self._visible(namespace))
                    if text else 0.0)
        decision = await self._predict(memory, now)
        predicted_tier = memory.memory_type if decision.action == "keep" else decision.to_tier
        return InspectResult(
            memory=memory,
            breakdown=breakdown(memory, now, self.settings.weights, semantic),
            gc_action=decision.action,
            gc_reason=decision.reason,
            predicted_tier=predicted_tier,
            lineage=await self.store.lineage(memory.id),
        )

    async def lineage_of(self, memory_id: object, *, namespace: str | None = None) -> list[Any]:
        """Lineage of a memory, also after it was deleted (by full id)."""
        visible = self._visible(namespace)
        try:
            memory = await self._resolve(memory_id, visible)
        except NotFoundError:
            full = validation.id_prefix(memory_id)
            if await self.store.lineage_namespace(full) not in visible:
                raise
            return list(await self.store.lineage(full))
        return list(await self.store.lineage(memory.id))

    async def related(self, entity: object, *, namespace: str | None = None) -> Related:
        label = validation.text_field("entity", entity, max_chars=validation.MAX_LABEL_CHARS)
        return await graph.neighbours(self.store, label.strip(), self._visible(namespace))

    async def stats(self, *, namespace: str | None = None) -> Stats:
        own = self._own(namespace)
        now = self._clock()
        with _cycle_collection_paused():  # 100k rows and a plan: see there
            return await self._stats(own, now)

    async def _stats(self, own: str, now: float) -> Stats:
        memories = await self.store.gc_facts(own)
        weights = self.settings.weights
        by_tier = {tier: TierStats() for tier in MemoryType}
        total_score = 0.0
        for memory in memories:
            score = composite_score(memory.importance, memory.created_epoch,
                                    memory.access_count, now, weights).composite
            tier = by_tier[memory.memory_type]
            tier.count += 1
            tier.tokens += memory.token_count
            tier.avg_score += score
            total_score += score
        for tier in by_tier.values():
            tier.avg_score = tier.avg_score / tier.count if tier.count else 0.0
        plan = collector.plan(own, memories, now, collector.WEIGHTS)
        return Stats(
            namespace=own,
            total=len(memories),
            total_tokens=sum(t.tokens for t in by_tier.values()),
            by_tier=by_tier,
            gc_pressure=len(plan.changes()),
            avg_composite_score=total_score / len(memories) if memories else 0.0,
        )

    async def count(self, *, namespace: str | None = None) -> int:
        """How many memories the namespace holds (all tiers)."""
        return await self.store.count(self._own(namespace))

    async def has_content(self, content: str, *, namespace: str | None = None) -> bool:
        """Whether `add(content)` would be an exact duplicate (checked without reinforcing)."""
        return await self.store.has_content(self._own(namespace), content_hash(content))

    async def session_memories(
        self, session_id: str, *, namespace: str | None = None
    ) -> list[Memory]:
        """The namespace's memories saved from one conversation, oldest first."""
        return await self.store.session_memories(self._own(namespace), session_id)

    # ------------------------------------------------------- hook injections

    async def injected_ids(self, session_id: str) -> set[str]:
        """Memories the prompt hook already put into this session's context."""
        return await self.store.injected_ids(session_id)

    async def record_injections(
        self, session_id: str | None, memories: Sequence[Memory], *, reason: str = "in context"
    ) -> None:
        """Count an access for each memory put into a session's context and note it there.

        Records older than INJECTION_RECORD_DAYS are dropped in the same write.
        """
        now = self._clock()
        await self.store.record_injections(
            session_id, memories, now,
            forget_before=now - INJECTION_RECORD_DAYS * 86_400.0, reason=reason,
        )

    async def reset_injections(self, session_id: str) -> int:
        """After a compaction or /clear the context no longer holds what was injected, nor
        what the session saved until now."""
        now = self._clock()
        return await self.store.clear_injections(
            session_id, now, forget_before=now - INJECTION_RECORD_DAYS * 86_400.0)

    async def in_context(self, session_id: str | None) -> Callable[[Memory], bool]:
        """Whether a memory is already in `session_id`'s context: it was saved from that
        session's own exchanges after the session was last compacted or cleared (or ever, if
        it never was), so its transcript still holds it."""
        if session_id is None:
            return lambda memory: False
        reset = await self.store.context_reset_at(session_id)
        since = float("-inf") if reset is None else reset
        return lambda memory: (memory.session_id == session_id
                               and memory.created_at.timestamp() > since)

    # -------------------------------------------------------------------- gc

    async def gc_preview(
        self, *, namespace: str | None = None, max_memories: int | None = None
    ) -> GCPreview:
        return await self._plan(self._own(namespace), self._clock(), max_memories)

    async def gc_run(
        self, *, namespace: str | None = None, max_memories: int | None = None
    ) -> GCResult:
        """Compute the plan `gc_preview` shows for this instant and apply exactly it."""
        own = self._own(namespace)
        now = self._clock()
        window = await self._gc_window(own, max_memories)
        plan = await self._plan(own, now, max_memories, window)
        memories = window[0]
        changes, by_id = await self._changed_memories(plan.changes(), memories)
        cursor = (own, memories[-1].seq) if max_memories is not None and memories else None
        await self.store.apply_gc(changes, by_id, now, cursor=cursor)
        return GCResult(
            namespace=own,
            promoted=len(plan.to_promote),
            demoted=len(plan.to_demote),
            archived=len(plan.to_archive),
            deleted=len(plan.to_delete),
            merged=len(plan.to_merge),
            kept=len(plan.to_keep),
            token_delta=plan.token_delta,
            decisions=changes,
            summary=plan.summary,
        )

    async def _gc_window(
        self, namespace: str, max_memories: int | None
    ) -> tuple[list[Planned], Mapping[int, bytes] | None]:
        """All memories (as the lighter GCFacts, with their term sequences if near-duplicates
        are merged), or for a bounded run the next window of a rotation through them."""
        if max_memories is not None:
            return list(await self.store.gc_window(namespace, max_memories)), None
        if self._merge:
            facts, sequences = await self.store.gc_facts_and_sequences(namespace)
            return list(facts), sequences
        return list(await self.store.gc_facts(namespace)), None

    async def _changed_memories(
        self, changes: list[GCDecision], planned: Sequence[Planned]
    ) -> tuple[list[GCDecision], dict[str, Memory]]:
        """The full memories a plan's changes touch (it was made from lighter rows), and the
        changes whose memories still exist: one gone since the plan's read is skipped, as
        apply_gc skips a step on a memory changed since."""
        seq_of = {m.id: m.seq for m in planned}
        wanted = sorted({seq_of[i] for d in changes for i in (d.memory_id, d.merge_into)
                         if i is not None})
        by_id: dict[str, Memory] = {}
        for start in range(0, len(wanted), _READ_CHUNK):
            found = await self.store.memories_by_seq(wanted[start:start + _READ_CHUNK])
            by_id.update((m.id, m) for m in found.values())
        kept = [d for d in changes
                if d.memory_id in by_id and (d.merge_into is None or d.merge_into in by_id)]
        return kept, by_id

    async def _plan(
        self,
        namespace: str,
        now: float,
        max_memories: int | None = None,
        window: tuple[Sequence[Planned], Mapping[int, bytes] | None] | None = None,
    ) -> GCPreview:
        with _cycle_collection_paused():
            return await self._plan_paused(namespace, now, max_memories, window)

    async def _plan_paused(
        self,
        namespace: str,
        now: float,
        max_memories: int | None,
        window: tuple[Sequence[Planned], Mapping[int, bytes] | None] | None,
    ) -> GCPreview:
        memories, vectors = window or await self._gc_window(namespace, max_memories)
        weights = collector.WEIGHTS  # never PMA_WEIGHTS: see collector
        outside: dict[MemoryType, int] = {}
        if max_memories is not None:
            totals = await self.store.tier_tokens(namespace)
            for tier, (_, tokens) in totals.items():
                outside[tier] = tokens
            for memory in memories:  # totals were read after the window: a tier may be new
                outside[memory.memory_type] = (
                    outside.get(memory.memory_type, 0) - memory.token_count
                )
        merges: list[MergePair] = []
        if self._merge:
            from pma_mcp.service import consolidate

            merges = await consolidate.near_duplicates(
                self.store, memories, lambda m: collector.gc_score(m, now, weights).composite,
                vectors)
        return collector.plan(namespace, memories, now, weights, merges=merges,
                              outside_tokens=outside)

    async def _predict(self, memory: Memory, now: float) -> GCDecision:
        """The decision a full GC run at `now` makes for `memory`, from the memories that
        score higher and its own near-duplicates, never the whole namespace (see
        collector.Prediction and consolidate.merge_of)."""
        weights = collector.WEIGHTS  # never PMA_WEIGHTS: see collector
        prediction = collector.Prediction(memory, now, weights)
        if not prediction.settled:
            ranked = self.store.tier_facts_by_score(
                memory.namespace, now, weights,
                at_least=prediction.score.composite - _SCORE_SLACK,
                archived_at_least=collector.PROMOTION_THRESHOLD - _SCORE_SLACK,
            )
            async for other in ranked:
                if prediction.higher(other):
                    break
            await ranked.aclose()
        merge = None
        if self._merge:
            from pma_mcp.service import consolidate

            merge = await consolidate.merge_of(
                self.store, memory, lambda m: collector.gc_score(m, now, weights).composite)
        return prediction.decision(merge)

    # ------------------------------------------------------- export / import

    async def export(self, *, namespace: str | None = None) -> dict[str, Any]:
        """Every memory of one namespace, or of all namespaces when `namespace` is "*"."""
        names = await self.store.namespaces() if namespace == "*" else [self._own(namespace)]
        memories: list[Memory] = []
        for name in names:
            memories.extend(await self.store.namespace_memories(name))
        memories.sort(key=lambda m: m.seq)
        return export_format.document(memories, self._clock())

    async def import_document(
        self,
        doc: object,
        *,
        namespace: str | None = None,
        skip_existing: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> ImportReport:
        """All records or none: a bad record aborts with its number and field.

        `progress(done, total)` is called as records are written (the CLI's progress bar).
        """
        override = None if namespace is None else validation.namespace(namespace)
        records = export_format.records_of(doc)
        memories = [export_format.from_record(r, i, override, scrub=self._scrub,
                                         author=self.settings.author)
                    for i, r in enumerate(records, 1)]
        _refuse_repeated_ids(memories)
        total = len(memories)
        stored = await self.store.insert_many(
            memories, skip_existing=skip_existing,
            progress=None if progress is None else lambda done: progress(done, total),
        )
        return ImportReport(imported=stored, skipped=len(memories) - stored)

    async def import_items(
        self,
        items: Sequence[ImportItem],
        *,
        dry_run: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> ImportReport:
        """Memories from another tool's records, each under an id derived from its `key`.

        Records already stored (same id, or the same text in the namespace) are skipped, so a
        second run adds nothing; `dry_run` counts what would be added and writes nothing. The
        source's time becomes `created_at`. A record that fails validation aborts the whole
        import with its number, before anything is written.
        """
        now = self._clock()
        memories: list[Memory] = []
        seen: set[str] = set()  # ids and (namespace, text) keys: one memory per record and text
        for number, item in enumerate(items, 1):
            try:
                memory = self._imported(item, now)
            except InvalidInputError as exc:
                raise InvalidInputError(f"record {number} ({item.key})", str(exc)) from None
            text_key = f"{memory.namespace}\0{memory.content_hash}"
            if memory.id in seen or text_key in seen:
                continue
            seen.update((memory.id, text_key))
            memories.append(memory)
        total = len(memories)
        if dry_run:
            new = 0
            for done, memory in enumerate(memories, 1):
                if progress is not None:
                    progress(done, total)
                if await self.store.get(memory.id) is None and not await self.store.has_content(
                        memory.namespace, memory.content_hash):
                    new += 1
            return ImportReport(imported=new, skipped=len(items) - new)
        stored = await self.store.insert_many(
            memories, skip_existing=True,
            progress=None if progress is None else lambda done: progress(done, total),
        )
        return ImportReport(imported=stored, skipped=len(items) - stored)

    def _imported(self, item: ImportItem, now: float) -> Memory:
        personal = item.namespace == GLOBAL_NAMESPACE  # an importer's "global" is this person's
        new = validation.new_memory(
            content=item.content,
            namespace_=self.settings.global_namespace if personal else item.namespace,
            importance_=item.importance,
            memory_type_=item.memory_type, tags=list(item.tags),
            linked_entities=list(item.linked_entities), metadata_=item.metadata,
            session_id=item.session_id, author_=item.author or self.settings.author,
        )
        created = now if item.created_at is None else min(item.created_at, now)
        key = content_hash(f"import\0{new.namespace}\0{item.key}")
        return self._memory(new, key[:32], created)

    def _memory(self, new: NewMemory, memory_id: str, created: float) -> Memory:
        """A memory from a validated write; its token count and content hash are made here."""
        when = to_datetime(created)
        return build_memory(new, memory_id=memory_id,
                              token_count=self.counter.count(new.content),
                              created_at=when, accessed_at=when)

    async def seed_from_project(
        self, path: str | Path, *, namespace: str | None = None
    ) -> SeedResult:
        """Semantic memories from CLAUDE.md, README.md and docs/*.md; re-running adds nothing.

        Files outside the project's real path, non-regular files and the part of a file past
        the read cap are left out; `skipped` says which and why."""
        root = Path(path).expanduser().resolve()
        if not root.is_dir():
            raise InvalidInputError("path", f"{root} is not a directory")
        own = self._own(namespace)
        added: list[AddResult] = []
        from pma_mcp.importers import project_docs

        read = project_docs.read_sections(root)
        for section in read.sections:
            if await self.store.has_content(own, content_hash(self._scrub(section.text))):
                continue
            added.append(await self.add(
                section.text, importance=0.6, memory_type=MemoryType.SEMANTIC,
                tags=["seed", "docs"], metadata={"source": section.source,
                                                 "section": section.heading},
                namespace=own,
            ))
        return SeedResult(added=added, skipped=[(s.source, s.reason) for s in read.skipped],
                          cut=[(s.source, s.reason) for s in read.cut])

    # ------------------------------------------------------------- browsing

    async def namespaces(self) -> list[str]:
        """Every namespace holding memories (the local browser's picker)."""
        return await self.store.namespaces()

    async def browse(
        self, where: Browse, *, before: int | None = None, limit: object = 50
    ) -> Page:
        """One page of `where.namespace`'s memories, newest first; nothing is touched."""
        size = _bounded_int("limit", limit, 1, MAX_PAGE)
        found = await self.store.browse(where, before, size + 1)
        more = len(found) > size
        page = found[:size]
        return Page(memories=page, next_before=page[-1].seq if more and page else None)

    async def overview(self, *, namespace: str | None = None,
                       gc_window: int = OVERVIEW_GC_WINDOW) -> Overview:
        """Tier use against capacity, auto-saved count, memories per day and the changes the
        next bounded GC pass would make: all bounded, whatever the namespace's size."""
        own = self._own(namespace)
        totals = await self.store.tier_tokens(own)
        tiers = [TierUse(tier=t, count=totals.get(t, (0, 0))[0], tokens=totals.get(t, (0, 0))[1],
                         capacity=collector.TIER_CAPACITY.get(t)) for t in MemoryType]
        plan = await self.gc_preview(namespace=own, max_memories=gc_window)
        starts, days = await self._periods(own)
        counts = await self.store.created_counts(own, starts, days * DAY)
        return Overview(
            namespace=own,
            total=sum(t.count for t in tiers),
            tiers=tiers,
            auto_saved=await self.store.tagged_count(own, AUTO_SAVED_TAG),
            gc_window=gc_window,
            gc_changes=len(plan.changes()),
            created=list(zip(starts, counts, strict=True)),
            period_days=days,
        )

    async def _periods(self, namespace: str) -> tuple[list[float], int]:
        """Period starts covering the namespace's creation times in at most CHART_PERIODS
        periods of whole UTC days, and the days per period."""
        span = await self.store.created_range(namespace)
        if span is None:
            return [], 1
        first = span[0] // DAY * DAY
        days = int((span[1] - first) // DAY) + 1
        width = -(-days // CHART_PERIODS)
        return [first + i * width * DAY for i in range(-(-days // width))], width

    # ------------------------------------------------------------- internals

    def _scrub(self, text: str) -> str:
        """Text on its way into the store, from any source: `redact.scrub` (PMA_REDACT)."""
        return redact.scrub(text) if self.settings.redact else text

    def _scrubbed(self, new: NewMemory) -> NewMemory:
        return dataclasses.replace(new, content=self._scrub(new.content),
                                   metadata=redact.scrub_values(new.metadata, self._scrub))

    def _scope(
        self, namespace: str | None, include_global: bool, memory_type: object, tags: object
    ) -> Scope:
        return Scope(
            namespaces=self._visible(namespace, include_global),
            memory_type=None if memory_type is None else validation.memory_type(memory_type),
            tags=tuple(validation.labels("tags", tags)),
        )

    async def _resolve(
        self, memory_id: object, namespaces: Sequence[str], field: str = "memory_id"
    ) -> Memory:
        prefix = validation.id_prefix(memory_id, field)
        matches = await self.store.find_by_prefix(prefix, namespaces)
        exact = [m for m in matches if m.id == prefix]
        if exact:
            return exact[0]
        if not matches:
            raise NotFoundError(
                f"{field}: no memory {prefix!r} in namespace {namespaces[0]!r}"
                + (" or the global namespace" if len(namespaces) > 1 else "")
                + "; call recall to find ids"
            )
        if len(matches) > 1:
            raise AmbiguousError(prefix, [m.id for m in matches])
        return matches[0]


def _refuse_repeated_ids(memories: Sequence[Memory]) -> None:
    first: dict[str, int] = {}
    for number, memory in enumerate(memories, 1):
        if memory.id in first:
            raise InvalidInputError(
                f"record {number}, field 'id'",
                f"repeats the id {memory.id} of record {first[memory.id]}",
            )
        first[memory.id] = number


def _new_id() -> str:
    """A uuid4 hex id; `uuid` is imported here because it costs a hook that only reads ~5 ms."""
    import uuid

    return uuid.uuid4().hex


def _pack_pool(token_budget: int) -> int:
    """How many ranked memories to consider for a budget (assumes ≥ 20 tokens per memory)."""
    return max(10, min(relevance.CANDIDATES, token_budget // 20))


def _query(value: object) -> str:
    if value is None:
        return ""
    return validation.text_field("query", value, max_chars=MAX_QUERY_CHARS, allow_empty=True)


def _bounded_int(field: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(
            field, f"must be a whole number from {low} to {high}, got {value!r}")
    if not low <= value <= high:
        raise InvalidInputError(field, f"must be from {low} to {high}, got {value}")
    return value


def _unit(field: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
        0.0 <= float(value) <= 1.0
    ):
        raise InvalidInputError(field, f"must be a number in [0, 1], got {value!r}")
    return float(value)
