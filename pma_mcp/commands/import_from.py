"""Import from another memory tool: read its store, redact, hand the records to the service.

The one path every importer's records take into the store, so every one of them passes
`redact.sanitize_for_storage` (private blocks removed, secrets replaced) exactly here — the
text, and every string in tags, entities and metadata — before validation and storage.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pma_mcp.core.errors import InvalidInputError
from pma_mcp.core.models import ImportItem
from pma_mcp.core.redact import sanitize_for_storage
from pma_mcp.importers import FORMATS, Source
from pma_mcp.service import MemoryService


@dataclass(slots=True, kw_only=True)
class ImportOutcome:
    format: str
    path: str
    dry_run: bool
    read: int
    imported: int
    skipped: int
    namespaces: list[str]


@dataclass(slots=True, kw_only=True)
class Batch:
    """What a reader produced, already sanitised: nothing of it is stored yet."""

    format: str
    path: str
    items: list[ImportItem]


def read(fmt: str, source: Source, *, redact_secrets: bool = True) -> Batch:
    """Read `source` as `fmt` and sanitise every record. Before any store is opened, so a
    wrong input changes nothing (not even creating the database file)."""
    reader = FORMATS.get(fmt)
    if reader is None:
        raise InvalidInputError("--from", f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    items = [clean for item in reader.read(source)
             if (clean := sanitized(item, redact_secrets=redact_secrets)).content.strip()]
    return Batch(format=fmt, path=str(source.path), items=items)


async def store(
    service: MemoryService,
    batch: Batch,
    *,
    dry_run: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> ImportOutcome:
    """Store a batch; `dry_run` reports the same counts and writes nothing."""
    report = await service.import_items(batch.items, dry_run=dry_run, progress=progress)
    return ImportOutcome(
        format=batch.format, path=batch.path, dry_run=dry_run, read=len(batch.items),
        imported=report.imported, skipped=report.skipped,
        namespaces=sorted({i.namespace for i in batch.items}),
    )


def sanitized(item: ImportItem, *, redact_secrets: bool) -> ImportItem:
    """The item with every piece of text passed through the storage sanitiser."""

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            return sanitize_for_storage(value, redact_secrets=redact_secrets)
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [clean(v) for v in value]
        return value

    return dataclasses.replace(
        item,
        content=clean(item.content).strip(),
        tags=tuple(t for t in clean(item.tags) if t.strip()),
        linked_entities=tuple(e for e in clean(item.linked_entities) if e.strip()),
        metadata=clean(item.metadata),
    )
