"""Memories in and out in bulk: export files (`export`, `import_document`), other tools'
records (`import_items`) and a project's own docs (`seed_from_project`).

Each write passes the intake door: an export file and a project's docs hold text someone
chose to store, another tool's records are captured conversation (see service/intake.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pma_mcp.core import export_format, validation
from pma_mcp.core.errors import InvalidInputError
from pma_mcp.core.models import Memory, MemoryType, content_hash
from pma_mcp.core.namespaces import GLOBAL_NAMESPACE
from pma_mcp.service.context import Context
from pma_mcp.service.intake import Source
from pma_mcp.service.memories import Memories

if TYPE_CHECKING:
    from pma_mcp.core.records import AddResult, ImportItem, ImportReport, SeedResult

Progress = Callable[[int, int], None]


class Transfer:
    def __init__(self, ctx: Context, memories: Memories) -> None:
        self._ctx = ctx
        self._memories = memories

    async def export(self, *, namespace: str | None = None) -> dict[str, Any]:
        """Every memory of one namespace, or of all namespaces when `namespace` is "*"."""
        store = self._ctx.store
        names = await store.namespaces() if namespace == "*" else [self._ctx.own(namespace)]
        memories: list[Memory] = []
        for name in names:
            memories.extend(await store.namespace_memories(name))
        memories.sort(key=lambda m: m.seq)
        return export_format.document(memories, self._ctx.clock())

    async def import_document(
        self,
        doc: object,
        *,
        namespace: str | None = None,
        skip_existing: bool = False,
        progress: Progress | None = None,
    ) -> ImportReport:
        """All records or none: a bad record aborts with its number and field.

        `progress(done, total)` is called as records are written (the CLI's progress bar).
        """
        from pma_mcp.core.records import ImportReport  # records are built on first use

        ctx = self._ctx
        override = None if namespace is None else validation.namespace(namespace)
        records = export_format.records_of(doc)
        memories = [export_format.from_record(r, i, override, admit=ctx.intake.write,
                                              author=ctx.settings.author)
                    for i, r in enumerate(records, 1)]
        _refuse_repeated_ids(memories)
        stored = await ctx.store.insert_many(
            memories, skip_existing=skip_existing, progress=_of_total(progress, len(memories)))
        return ImportReport(imported=stored, skipped=len(memories) - stored)

    async def import_items(
        self,
        items: Sequence[ImportItem],
        *,
        dry_run: bool = False,
        progress: Progress | None = None,
    ) -> ImportReport:
        """Memories from another tool's records, each under an id derived from its `key`.

        Records already stored (same id, or the same text in the namespace) are skipped, so a
        second run adds nothing, as are records with no text left once cleaned; `dry_run`
        counts what would be added and writes nothing. The source's time becomes
        `created_at`. A record that fails validation aborts the whole import with its
        number, before anything is written.
        """
        from pma_mcp.core.records import ImportReport

        now = self._ctx.clock()
        memories: list[Memory] = []
        seen: set[str] = set()  # ids and (namespace, text) keys: one memory per record and text
        for number, item in enumerate(items, 1):
            try:
                memory = self._imported(item, now)
            except InvalidInputError as exc:
                raise InvalidInputError(f"record {number} ({item.key})", str(exc)) from None
            if memory is None:
                continue
            text_key = f"{memory.namespace}\0{memory.content_hash}"
            if memory.id in seen or text_key in seen:
                continue
            seen.update((memory.id, text_key))
            memories.append(memory)
        if dry_run:
            stored = await self._new(memories, progress)
            return ImportReport(imported=stored, skipped=len(items) - stored)
        stored = await self._ctx.store.insert_many(
            memories, skip_existing=True, progress=_of_total(progress, len(memories)))
        return ImportReport(imported=stored, skipped=len(items) - stored)

    async def _new(self, memories: Sequence[Memory], progress: Progress | None) -> int:
        """How many of `memories` an import would add (neither their id nor text is stored)."""
        store = self._ctx.store
        new = 0
        for done, memory in enumerate(memories, 1):
            if progress is not None:
                progress(done, len(memories))
            if await store.get(memory.id) is None and not await store.has_content(
                    memory.namespace, memory.content_hash):
                new += 1
        return new

    def _imported(self, item: ImportItem, now: float) -> Memory | None:
        """The memory an importer's record becomes, or None if no text is left of it."""
        ctx = self._ctx
        item = ctx.intake.item(item)
        if not item.content:
            return None
        personal = item.namespace == GLOBAL_NAMESPACE  # an importer's "global" is this person's
        new = validation.new_memory(
            content=item.content,
            namespace_=ctx.settings.global_namespace if personal else item.namespace,
            importance_=item.importance,
            memory_type_=item.memory_type, tags=list(item.tags),
            linked_entities=list(item.linked_entities), metadata_=item.metadata,
            session_id=item.session_id, author_=item.author or ctx.settings.author,
            kind_=item.kind,
        )
        created = now if item.created_at is None else min(item.created_at, now)
        key = content_hash(f"import\0{new.namespace}\0{item.key}")
        return ctx.memory(new, key[:32], created)

    async def seed_from_project(
        self, path: str | Path, *, namespace: str | None = None
    ) -> SeedResult:
        """Semantic memories from CLAUDE.md, README.md and docs/*.md; re-running adds nothing.

        Files outside the project's real path, non-regular files and the part of a file past
        the read cap are left out; `skipped` says which and why."""
        root = Path(path).expanduser().resolve()
        if not root.is_dir():
            raise InvalidInputError("path", f"{root} is not a directory")
        ctx = self._ctx
        own = ctx.own(namespace)
        added: list[AddResult] = []
        from pma_mcp.core.records import SeedResult
        from pma_mcp.importers import project_docs

        read = project_docs.read_sections(root)
        for section in read.sections:
            text = ctx.intake.text(section.text, Source.CHOSEN)
            if await ctx.store.has_content(own, content_hash(text)):
                continue
            added.append(await self._memories.add(
                section.text, importance=0.6, memory_type=MemoryType.SEMANTIC,
                tags=["seed", "docs"], metadata={"source": section.source,
                                                 "section": section.heading},
                namespace=own,
            ))
        return SeedResult(added=added, skipped=[(s.source, s.reason) for s in read.skipped],
                          cut=[(s.source, s.reason) for s in read.cut])


def _of_total(progress: Progress | None, total: int) -> Callable[[int], None] | None:
    """`progress(done, total)` as the store reports it, by records done."""
    return None if progress is None else lambda done: progress(done, total)


def _refuse_repeated_ids(memories: Sequence[Memory]) -> None:
    first: dict[str, int] = {}
    for number, memory in enumerate(memories, 1):
        if memory.id in first:
            raise InvalidInputError(
                f"record {number}, field 'id'",
                f"repeats the id {memory.id} of record {first[memory.id]}",
            )
        first[memory.id] = number
