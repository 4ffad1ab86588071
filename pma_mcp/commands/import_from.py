"""Import from another memory tool: read its store and hand the records to the service.

The service's intake door cleans every record as captured conversation (private blocks
removed, secrets replaced in the text, tags, entities, session id and metadata) before it
is validated and stored: see service/intake.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pma_mcp.core.errors import InvalidInputError
from pma_mcp.core.models import ImportItem
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
    notes: list[str]
    """Records the reader skipped or changed, and why ("what: why")."""


@dataclass(slots=True, kw_only=True)
class Batch:
    """What a reader produced: nothing of it is stored yet."""

    format: str
    path: str
    items: list[ImportItem]
    notes: list[str]


def read(fmt: str, source: Source) -> Batch:
    """Read `source` as `fmt`. Before any store is opened, so a wrong input changes nothing
    (not even creating the database file)."""
    reader = FORMATS.get(fmt)
    if reader is None:
        raise InvalidInputError("--from", f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    items = list(reader.read(source))
    return Batch(format=fmt, path=str(source.path), items=items, notes=list(source.notes))


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
        notes=batch.notes,
    )
