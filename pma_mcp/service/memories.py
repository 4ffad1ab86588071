"""One memory at a time: store, edit, forget, read it, its lineage, and its tag/entity
neighbours.

Tags and entities form an implicit graph, memory ──tagged_with──> tag and memory
──links_to──> entity: `related(label)` is every memory touching that label plus the other
labels those memories carry, ranked by how often they co-occur, for context beyond keyword
matching.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pma_mcp.core import editing, kinds, similar, validation
from pma_mcp.core.errors import NotFoundError
from pma_mcp.core.models import Memory, MemoryType, Scope, content_hash
from pma_mcp.core.text import lexicon
from pma_mcp.service.context import Context

if TYPE_CHECKING:
    from pma_mcp.core.records import AddResult, DeleteResult, Related, Similar, UpdateResult

PREVIEW_CHARS = 120
MAX_NEIGHBOURS = 50
SIMILAR_POOL = 20
"""Candidates read per source when looking for what a new memory repeats or contradicts."""
SIMILAR_ENTITIES = 4
"""Linked entities of a new memory whose other memories are read as candidates."""


class Memories:
    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    async def add(
        self,
        content: object,
        *,
        importance: object = None,
        memory_type: object = None,
        tags: object = None,
        linked_entities: object = None,
        metadata: object = None,
        session_id: object = None,
        namespace: str | None = None,
        supersedes: object = None,
        kind: object = None,
    ) -> AddResult:
        """Store a memory; an exact duplicate in the namespace is reinforced instead.

        None means not given: a correction (`supersedes`) then keeps the kind, importance,
        tags and linked entities of the memory it corrects; otherwise importance is 0.5, the
        tier episodic and the kind inferred (core/kinds.py). The tier is only where the
        memory starts: the collector moves it. The answer lists the memories this one most
        likely repeats or contradicts (core/similar.py), except for an exchange a hook saved.
        """
        from pma_mcp.core.records import AddResult  # not built on a hook's path

        ctx = self._ctx
        given = ctx.intake.write(validation.new_memory(
            content=content,
            namespace_=ctx.own(namespace),
            importance_=0.5 if importance is None else importance,
            memory_type_=MemoryType.EPISODIC if memory_type is None else memory_type,
            tags=tags,
            linked_entities=linked_entities,
            metadata_=metadata,
            session_id=session_id,
            supersedes=supersedes,
            author_=ctx.settings.author,
            kind_=kind,
        ))
        old = None
        new = given
        if given.supersedes is not None:
            old = await ctx.resolve(given.supersedes, ctx.visible(given.namespace), "supersedes")
            new = dataclasses.replace(
                given,
                kind=old.kind if kind is None else given.kind,
                importance=old.importance if importance is None else given.importance,
                tags=list(old.tags) if tags is None else given.tags,
                linked_entities=(list(old.linked_entities) if linked_entities is None
                                 else given.linked_entities),
            )
        memory = ctx.memory(new, _new_id(), ctx.clock())
        reason = f"supersedes {old.id}" if old is not None else "stored"
        stored, dedup = await ctx.store.insert(memory, supersedes=old, reason=reason)
        found: list[Similar] = []
        if not dedup and not kinds.hook_saved(stored.tags, stored.metadata):
            found = await self._similar(stored, () if old is None else (old.id,))
        return AddResult(memory=stored, deduplicated=dedup, similar=found)

    async def _similar(self, memory: Memory, skip: Sequence[str]) -> list[Similar]:
        """core.similar over a bounded read: the best lexical matches of the same kind in the
        memory's namespace (by its rarest terms; only those overlapping enough are read in
        full), and the memories sharing its first linked entities."""
        store = self._ctx.store
        scope = Scope(namespaces=(memory.namespace,), kind=memory.kind)
        own = similar.content_terms(memory.content)
        pool = await store.sharing_candidates(memory.content, scope, SIMILAR_POOL, similar.probe)
        found = {c.seq: similar.vector_terms(c.terms) for c in pool if c.seq != memory.seq}
        close = similar.worth_reading(own, found, bool(memory.linked_entities))
        loaded = await store.memories_by_seq(close) if close else {}
        candidates = [(m, found[seq]) for seq, m in loaded.items()]
        for entity in memory.linked_entities[:SIMILAR_ENTITIES]:
            candidates += similar.with_terms(
                await store.labelled(entity, (memory.namespace,), SIMILAR_POOL))
        return similar.similar(memory, own, candidates, skip)

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
        kind: object = None,
    ) -> UpdateResult:
        """Edit a memory in place (same id), validated and cleaned as `add` is; None =
        unchanged. An edit is often made to take a secret out; it must not be the way one
        gets in.

        Content, tags and entities are replaced whole. An edit that changes nothing writes
        nothing (so repeating one is harmless); otherwise lineage gets an `edited` event.
        """
        from pma_mcp.core.records import UpdateResult  # not built on a hook's path

        ctx = self._ctx
        edit = ctx.intake.write(validation.memory_edit(
            content=content, importance_=importance, memory_type_=memory_type, tags=tags,
            linked_entities=linked_entities, metadata_=metadata, kind_=kind,
        ))
        memory = await ctx.resolve(memory_id, ctx.visible(namespace))
        new = editing.applied(memory, edit, count_tokens=ctx.counter.count,
                              content_hash=content_hash)
        changed = editing.changed_fields(memory, new)
        if not changed:
            return UpdateResult(memory=memory, changed=[])
        reason = ctx.intake.reason(editing.describe(memory, new, changed))
        stored = await ctx.store.edit(memory, new, ctx.clock(), reason)
        return UpdateResult(memory=stored, changed=changed)

    async def delete(self, memory_id: object, *, namespace: str | None = None) -> DeleteResult:
        from pma_mcp.core.records import DeleteResult  # not built on a hook's path

        ctx = self._ctx
        memory = await ctx.resolve(memory_id, ctx.visible(namespace))
        await ctx.store.delete(memory, ctx.clock(), reason="forgotten on request")
        return DeleteResult(deleted_id=memory.id,
                            content_preview=lexicon.preview(memory.content, PREVIEW_CHARS))

    async def get(self, memory_id: object, *, namespace: str | None = None) -> Memory:
        return await self._ctx.resolve(memory_id, self._ctx.visible(namespace))

    async def has_content(self, content: str, *, namespace: str | None = None) -> bool:
        """Whether `add(content)` would be an exact duplicate (checked without reinforcing)."""
        return await self._ctx.store.has_content(self._ctx.own(namespace), content_hash(content))

    async def lineage_of(self, memory_id: object, *, namespace: str | None = None) -> list[Any]:
        """Lineage of a memory, also after it was deleted (by full id)."""
        ctx = self._ctx
        visible = ctx.visible(namespace)
        try:
            memory = await ctx.resolve(memory_id, visible)
        except NotFoundError:
            full = validation.id_prefix(memory_id)
            if await ctx.store.lineage_namespace(full) not in visible:
                raise
            return list(await ctx.store.lineage(full))
        return list(await ctx.store.lineage(memory.id))

    async def related(self, entity: object, *, namespace: str | None = None) -> Related:
        """Memories carrying the tag or entity `entity`, and the labels next to it."""
        from pma_mcp.core.records import Related  # not built on a hook's path

        label = validation.text_field(
            "entity", entity, max_chars=validation.MAX_LABEL_CHARS).strip()
        memories = await self._ctx.store.labelled(
            label, self._ctx.visible(namespace), MAX_NEIGHBOURS)
        counts: Counter[str] = Counter()
        for memory in memories:
            for other in dict.fromkeys([*memory.tags, *memory.linked_entities]):
                if other != label:
                    counts[other] += 1
        nodes = [other for other, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
        return Related(entity=label, memories=memories, related_nodes=nodes)


def _new_id() -> str:
    """A uuid4 hex id; `uuid` is imported here because it costs a hook that only reads ~5 ms."""
    import uuid

    return uuid.uuid4().hex
