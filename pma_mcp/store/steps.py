"""The write steps of the store's rules, each inside one transaction (store.upkeep.Work):
store a row, reinforce a duplicate, supersede, edit, delete, merge, apply a GC decision,
move a namespace. Every backend runs these same steps.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from pma_mcp.core import kinds
from pma_mcp.core.errors import ConflictError, InvalidInputError, NotFoundError, StorageError
from pma_mcp.core.models import Memory, MemoryKind, MemoryType
from pma_mcp.core.namespaces import uncanonical_namespaces
from pma_mcp.core.text import bm25
from pma_mcp.core.text.lexicon import speaker_of
from pma_mcp.store import rows, upkeep
from pma_mcp.store.seam import Tx
from pma_mcp.store.upkeep import Work

if TYPE_CHECKING:
    from pma_mcp.core.records import GCDecision


async def insert_row(
    tx: Tx, counts: Callable[[set[str], int], None], memory: Memory, reason: str | None
) -> int:
    """Memory row, labels, vectors, full-text entry, neighbours' context and (with a reason)
    the `created` lineage event; returns seq. Its content terms go to `counts`
    (Work.count_terms)."""
    seq = int(await tx.fetchval(rows.INSERT, *rows.row_of(memory)))
    await upkeep.write_labels(tx, seq, memory.tags, memory.linked_entities)
    labels = rows.labels_text(memory.tags, memory.linked_entities)
    await tx.execute("INSERT INTO namespace_stats (namespace, docs, length) VALUES (?, 1, 0) "
                     "ON CONFLICT (namespace) DO UPDATE SET docs = namespace_stats.docs + 1",
                     memory.namespace)
    content_terms = await upkeep.set_own_terms(tx, seq, memory.namespace, memory.content,
                                               labels, new=True)
    earlier = await upkeep.neighbours(tx, memory.namespace, memory.session_id, seq)
    await tx.index(seq, {"content": memory.content, "labels": labels,
                         "context": " ".join(text for _, text in earlier)}, new=True)
    around = [s for s, _ in earlier]
    await upkeep.set_context_terms(tx, seq, memory.namespace, around, new=True)
    await upkeep.refresh_context(tx, memory.namespace, memory.session_id, around)
    counts(content_terms, +1)
    if reason is not None:
        await upkeep.lineage(tx, memory.id, memory.namespace, "created",
                             memory.created_at.timestamp(), to_tier=memory.memory_type,
                             reason=reason)
    return seq


async def insert(
    w: Work, memory: Memory, supersedes: Memory | None, reason: str
) -> tuple[Memory, bool]:
    """Store `memory` unless its namespace holds the same content: then that memory is
    reinforced (one more access) and, if it had been superseded, current again."""
    tx = w.tx
    now = memory.created_at.timestamp()
    row = await tx.fetchrow(f"{rows.SELECT} WHERE namespace = ? AND content_hash = ?",
                            memory.namespace, memory.content_hash)
    if supersedes is not None:
        await _unforked(tx, supersedes, None if row is None else rows.memory(row))
    if row is None:
        seq = await insert_row(tx, w.count_terms, memory, reason or "stored")
        if supersedes is not None:
            await supersede(w, supersedes, memory.id, now)
        return dataclasses.replace(memory, seq=seq), False
    existing = rows.memory(row)
    if existing.superseded_by is not None:
        # Stored again after being corrected away: it is current once more.
        await tx.execute("UPDATE memories SET superseded_by = NULL, memory_type = ? "
                         "WHERE seq = ?", memory.memory_type.value, existing.seq)
        await tx.index(existing.seq)
        await upkeep.lineage(tx, existing.id, existing.namespace, "promote", now,
                             from_tier=existing.memory_type, to_tier=memory.memory_type,
                             reason="stored again after it was superseded: current again")
    if supersedes is not None and supersedes.seq != existing.seq:
        await supersede(w, supersedes, existing.id, now)
    await upkeep.touch(tx, [existing], now, reason="exact duplicate stored again")
    refreshed = await upkeep.by_seq(tx, existing.seq)
    assert refreshed is not None
    return refreshed, True


async def accepted(
    w: Work,
    memories: Sequence[Memory],
    skip_existing: bool,
    progress: Callable[[int], None] | None,
) -> list[Memory]:
    """The memories of an import to store: those whose id and content are new (earlier ones
    in the batch count too). A record already present as it is (same id, namespace and
    content) is left out, so importing the same file twice is a no-op; any other clash without
    `skip_existing` refuses the whole import."""
    taken_ids: set[str] = set()
    present: set[tuple[str, str, str]] = set()  # (id, namespace, content hash) stored now
    for chunk in rows.chunks([m.id for m in memories]):
        for r in await w.tx.fetch(
                "SELECT id, namespace, content_hash FROM memories WHERE id IN ?", chunk):
            taken_ids.add(str(r[0]))
            present.add((str(r[0]), str(r[1]), str(r[2])))
    by_namespace: dict[str, list[str]] = {}
    for m in memories:
        by_namespace.setdefault(m.namespace, []).append(m.content_hash)
    taken_content: dict[tuple[str, str], str] = {}
    for namespace, hashes in by_namespace.items():
        for chunk in rows.chunks(hashes):
            taken_content.update(((namespace, str(r[0])), str(r[1])) for r in await w.tx.fetch(
                "SELECT content_hash, id FROM memories WHERE namespace = ? "
                "AND content_hash IN ?", namespace, chunk))
    chosen: list[Memory] = []
    for done, memory in enumerate(memories, 1):
        if progress is not None:
            progress(done)
        key = (memory.namespace, memory.content_hash)
        clash = memory.id if memory.id in taken_ids else taken_content.get(key)
        if clash is not None:
            if skip_existing or (memory.id, *key) in present:
                continue
            raise StorageError(
                f"record {done}: memory {memory.id} already exists (or its content does, as "
                f"{clash}); use --skip-existing to leave existing memories alone")
        taken_ids.add(memory.id)
        taken_content[key] = memory.id
        chosen.append(memory)
    return chosen


async def edit(w: Work, old: Memory, new: Memory, now: float, reason: str) -> Memory:
    """Rewrite `old`'s editable fields as `new`'s, keeping its id; refused if it changed or
    went since `old` was read, or if the new content is another memory's in the namespace."""
    tx = w.tx
    current = await upkeep.by_seq(tx, old.seq)
    if current is None or current.id != old.id:
        raise NotFoundError(f"memory {old.id} was deleted meanwhile; nothing was edited")
    if rows.editable(current) != rows.editable(old):
        raise ConflictError(f"memory {old.id} was changed by another writer meanwhile; "
                            "nothing was edited: read it again and retry")
    if new.content_hash != old.content_hash:
        clash = await tx.fetchval("SELECT id FROM memories WHERE namespace = ? "
                                  "AND content_hash = ? AND seq != ?",
                                  old.namespace, new.content_hash, old.seq)
        if clash is not None:
            raise InvalidInputError("content", f"is already stored as memory {clash}; "
                                    "edit or forget that one instead")
    before = await tx.fetchval("SELECT terms FROM memories WHERE seq = ?", old.seq)
    await tx.execute(
        "UPDATE memories SET content = ?, content_hash = ?, token_count = ?, speaker = ?, "
        "importance = ?, memory_type = ?, tags = ?, linked_entities = ?, metadata = ?, kind = ? "
        "WHERE seq = ?", new.content, new.content_hash, new.token_count,
        speaker_of(new.content), new.importance, new.memory_type.value, json.dumps(new.tags),
        json.dumps(new.linked_entities), json.dumps(new.metadata), new.kind.value, old.seq)
    await tx.execute("DELETE FROM memory_labels WHERE seq = ?", old.seq)
    await upkeep.write_labels(tx, old.seq, new.tags, new.linked_entities)
    labels = rows.labels_text(new.tags, new.linked_entities)
    await tx.index(old.seq, {"content": new.content, "labels": labels})
    new_terms = await upkeep.set_own_terms(tx, old.seq, old.namespace, new.content, labels)
    if new.content != old.content:
        w.count_terms(set(bm25.decode(str(before or ""))), -1)
        w.count_terms(new_terms, +1)
        around = await upkeep.neighbours(tx, old.namespace, old.session_id, old.seq)
        await upkeep.refresh_context(tx, old.namespace, old.session_id, [s for s, _ in around])
    moved = new.memory_type != old.memory_type
    await upkeep.lineage(tx, old.id, old.namespace, "edited", now,
                         from_tier=old.memory_type if moved else None,
                         to_tier=new.memory_type if moved else None, reason=reason)
    edited = await upkeep.by_seq(tx, old.seq)
    assert edited is not None
    return edited


async def delete(
    w: Work, memory: Memory, now: float, reason: str, score: float | None = None
) -> bool:
    """Delete the memory with its index entry and labels; False if it was already gone."""
    tx = w.tx
    around = await upkeep.neighbours(tx, memory.namespace, memory.session_id, memory.seq)
    gone = await tx.fetchrow(
        "DELETE FROM memories WHERE seq = ? RETURNING terms, label_terms, doc_len", memory.seq)
    if gone is None:
        return False
    await tx.unindex(memory.seq)
    content_terms = set(bm25.decode(str(gone[0])))
    w.count_terms(content_terms, -1)
    await upkeep.count_namespace_terms(
        tx, memory.namespace, content_terms | set(bm25.decode(str(gone[1]))), -1)
    await tx.execute("UPDATE namespace_stats SET docs = docs - 1, length = length - ? "
                     "WHERE namespace = ?", int(gone[2]), memory.namespace)
    await upkeep.refresh_context(tx, memory.namespace, memory.session_id,
                                 [s for s, _ in around])
    await upkeep.lineage(tx, memory.id, memory.namespace, "deleted", now,
                         from_tier=memory.memory_type, score=score, reason=reason)
    return True


MAX_CHAIN = 1_000
"""Most corrections followed to name the newest one (a chain is a list; a loop would be a
damaged store, and this bound keeps it from hanging a write)."""


async def _unforked(tx: Tx, old: Memory, duplicate: Memory | None) -> None:
    """Refuse to supersede a memory that was already corrected: the second correction would
    fork the chain (two current memories both replacing it). The error names the current
    newest memory, the one to supersede instead. Repeating the same correction (its text is
    the `duplicate` that supersedes `old` and is still current) is no fork."""
    newer = await tx.fetchval("SELECT superseded_by FROM memories WHERE seq = ?", old.seq)
    if newer is None or (duplicate is not None and newer == duplicate.id
                         and duplicate.superseded_by is None):
        return
    newest, seen = str(newer), {old.id}
    while newest not in seen and len(seen) < MAX_CHAIN:
        seen.add(newest)
        after = await tx.fetchval("SELECT superseded_by FROM memories WHERE id = ?", newest)
        if after is None:
            break
        newest = str(after)
    raise ConflictError(
        f"memory {old.id} was already superseded by {newer}; the current memory of that "
        f"chain is {newest}: pass supersedes={newest} to correct it (nothing was stored)")


async def supersede(w: Work, old: Memory, new_id: str, now: float) -> None:
    """Archive `old` and point it at its correction."""
    await w.tx.execute("UPDATE memories SET memory_type = 'archived', superseded_by = ? "
                       "WHERE seq = ?", new_id, old.seq)
    await w.tx.index(old.seq)  # no longer current
    await upkeep.lineage(w.tx, old.id, old.namespace, "supersede", now,
                         from_tier=old.memory_type, to_tier=MemoryType.ARCHIVED,
                         reason=f"superseded by {new_id}")


async def merge(
    w: Work, gone: Memory, keep: Memory, now: float, reason: str, score: float
) -> None:
    """Fold `gone` into `keep`: union of labels, summed access counts; `gone` is deleted.

    Skipped when either memory is gone by now (the plan came from an earlier snapshot).
    """
    tx = w.tx
    current = await upkeep.by_seq(tx, keep.seq)
    gone_now = await upkeep.by_seq(tx, gone.seq)
    if current is None or gone_now is None:
        return
    gone = gone_now
    tags = list(dict.fromkeys([*current.tags, *gone.tags]))
    entities = list(dict.fromkeys([*current.linked_entities, *gone.linked_entities]))
    await tx.execute("UPDATE memories SET tags = ?, linked_entities = ?, "
                     "access_count = access_count + ? WHERE seq = ?",
                     json.dumps(tags), json.dumps(entities), gone.access_count, keep.seq)
    await upkeep.write_labels(tx, keep.seq, tags, entities)
    labels = rows.labels_text(tags, entities)
    await tx.index(keep.seq, {"labels": labels})
    await upkeep.set_own_terms(tx, keep.seq, keep.namespace, current.content, labels)
    await upkeep.lineage(tx, keep.id, keep.namespace, "merge", now, from_tier=keep.memory_type,
                         to_tier=keep.memory_type, score=score,
                         reason=f"absorbed {gone.id}: {reason}")
    await upkeep.lineage(tx, gone.id, gone.namespace, "merge", now, from_tier=gone.memory_type,
                         score=score, reason=f"merged into {keep.id}: {reason}")
    await delete(w, gone, now, reason=f"merged into {keep.id}")


async def apply_decision(
    w: Work, decision: GCDecision, memories: dict[str, Memory], now: float
) -> None:
    """One change of a GC plan with its lineage; skipped if the memory changed since."""
    memory = memories[decision.memory_id]
    if decision.action == "merge":
        assert decision.merge_into is not None
        await merge(w, memory, memories[decision.merge_into], now, decision.reason,
                    decision.breakdown.composite)
    elif decision.action == "delete":
        await delete(w, memory, now, decision.reason, score=decision.breakdown.composite)
    elif decision.action in ("promote", "demote", "archive"):
        assert decision.to_tier is not None
        moved = await w.tx.fetchval(
            "UPDATE memories SET memory_type = ? WHERE seq = ? AND memory_type = ? "
            "RETURNING seq", decision.to_tier.value, memory.seq, decision.from_tier.value)
        if moved is None:
            return  # changed since the plan was made (another process's GC)
        await upkeep.lineage(w.tx, memory.id, memory.namespace, decision.action, now,
                             from_tier=memory.memory_type, to_tier=decision.to_tier,
                             score=decision.breakdown.composite, reason=decision.reason)


async def move_namespace(w: Work, old: str, new: str, now: float) -> int:
    """Fold namespace `old` into `new` (one project spelled two ways); how many moved.

    Its memories and their lineage move; one whose exact text `new` already holds is
    merged into that memory (labels united, accesses summed), as GC merges duplicates.
    Per-namespace state that only indexes `old` (the GC cursor) is dropped.
    """
    tx = w.tx
    moving = [rows.memory(r) for r in await tx.fetch(
        f"{rows.SELECT} WHERE namespace = ? ORDER BY seq", old)]
    for memory in moving:
        keep = await tx.fetchrow(f"{rows.SELECT} WHERE namespace = ? AND content_hash = ?",
                                 new, memory.content_hash)
        if keep is not None:
            await merge(w, memory, rows.memory(keep), now, f"{old!r} is {new!r}",
                        score=math.nan)
    await tx.execute("UPDATE memories SET namespace = ? WHERE namespace = ?", new, old)
    for memory in moving:
        await tx.index(memory.seq)  # an index keyed by namespace follows
    await tx.execute("UPDATE lineage SET namespace = ? WHERE namespace = ?", new, old)
    await tx.execute("DELETE FROM gc_cursors WHERE namespace = ?", old)
    await upkeep.fold_statistics(tx, old, new)
    for session in sorted({m.session_id for m in moving if m.session_id is not None}):
        seqs = [int(r[0]) for r in await tx.fetch(
            "SELECT seq FROM memories WHERE namespace = ? AND session_id = ? ORDER BY seq",
            new, session)]
        await upkeep.refresh_context(tx, new, session, seqs)
    return len(moving)


async def fold_spellings(w: Work, now: float) -> None:
    """Fold every namespace stored under another spelling of a path (a symlink, a trailing
    separator: how hooks once took a working directory literally) into its canonical
    spelling (core.namespaces). A one-time migration step on every backend."""
    found = [str(r[0]) for r in await w.tx.fetch("SELECT DISTINCT namespace FROM memories")]
    for old, new in uncanonical_namespaces(sorted(found)).items():
        await move_namespace(w, old, new, now)


KIND_PAGE = 2_000


async def infer_kinds(tx: Tx) -> None:
    """Give every stored memory the kind core.kinds infers (a hook-saved exchange is an
    event): the one-time migration step that introduced kinds, on every backend. A page of
    rows at a time; memories the rules leave a note keep the column's default."""
    after = 0
    while page := await tx.fetch(
        "SELECT seq, content, tags, metadata, memory_type FROM memories WHERE seq > ? "
        "ORDER BY seq LIMIT ?", after, KIND_PAGE,
    ):
        found = []
        for seq, content, tags, metadata, tier in page:
            meta = {} if metadata == "{}" else json.loads(metadata)
            kind = kinds.infer(content, rows.json_list(tags),
                               meta if isinstance(meta, dict) else {}, MemoryType(tier))
            if kind is not MemoryKind.NOTE:
                found.append((kind.value, int(seq)))
        if found:
            await tx.executemany("UPDATE memories SET kind = ? WHERE seq = ?", found)
        after = int(page[-1][0])
