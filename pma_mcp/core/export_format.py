"""The export file format (pure): memories to JSON records and back, losslessly.

    {"format": "pma-mcp-export", "version": 1, "exported_at": "...", "memories": [record...]}

A record carries every field a memory has except `seq` (import order keeps the relative order)
and `content_hash` (recomputed). A record without `kind` (written before kinds) gets the one
core/kinds.py infers. Times are ISO-8601 UTC. Records are checked field by field so a
bad file is refused with the record number and field at fault.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
from collections.abc import Callable
from datetime import UTC, datetime
from enum import Enum
from typing import TYPE_CHECKING, Any

from pma_mcp.core import validation
from pma_mcp.core.errors import InvalidInputError
from pma_mcp.core.models import Memory, build_memory

if TYPE_CHECKING:
    from pma_mcp.core.records import NewMemory

FORMAT = "pma-mcp-export"
VERSION = 1




def to_record(memory: Memory) -> dict[str, Any]:
    return {
        "id": memory.id,
        "namespace": memory.namespace,
        "content": memory.content,
        "kind": memory.kind.value,
        "memory_type": memory.memory_type.value,
        "importance": memory.importance,
        "tags": list(memory.tags),
        "linked_entities": list(memory.linked_entities),
        "token_count": memory.token_count,
        "access_count": memory.access_count,
        "created_at": memory.created_at.isoformat(),
        "accessed_at": memory.accessed_at.isoformat(),
        "metadata": memory.metadata,
        "session_id": memory.session_id,
        "superseded_by": memory.superseded_by,
        "author": memory.author,
    }


def document(memories: list[Memory], now: float) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": datetime.fromtimestamp(now, tz=UTC).isoformat(),
        "memories": [to_record(m) for m in memories],
    }


def records_of(doc: object) -> list[object]:
    """The record list of an export document (or a bare list of records)."""
    if isinstance(doc, list):
        return list(doc)
    if not isinstance(doc, dict):
        raise InvalidInputError("file", "must hold a JSON object with a 'memories' list")
    if doc.get("format", FORMAT) != FORMAT:
        raise InvalidInputError("format", f"must be {FORMAT!r}, got {doc.get('format')!r}")
    version = doc.get("version", VERSION)
    if version != VERSION:
        raise InvalidInputError("version", f"this pma-mcp reads version {VERSION}, got {version!r}")
    memories = doc.get("memories")
    if not isinstance(memories, list):
        raise InvalidInputError("memories", "must be a list of memory records")
    return list(memories)


def from_record(
    record: object,
    index: int,
    namespace: str | None = None,
    *,
    admit: Callable[[NewMemory], NewMemory] | None = None,
    author: str | None = None,
) -> Memory:
    """A memory from record number `index` (1-based in messages); `namespace` overrides.

    `author` is the importing person, for a record written before exports carried one (no
    "author" key); a record's own author, even null (unknown), is kept.

    `admit` cleans the validated fields before the memory (and its content hash) is made:
    the service's intake door, so an export from a store kept with PMA_REDACT=off loses its
    secrets here.
    """
    try:
        return _from_record(record, namespace, author, admit)
    except InvalidInputError as exc:
        raise InvalidInputError(f"record {index}, field {exc.field!r}", _message(exc)) from None


def _message(exc: InvalidInputError) -> str:
    return str(exc).split(": ", 1)[1] if ": " in str(exc) else str(exc)


def _from_record(
    record: object,
    namespace: str | None,
    author: str | None,
    admit: Callable[[NewMemory], NewMemory] | None,
) -> Memory:
    if not isinstance(record, dict):
        raise InvalidInputError("record", f"must be a JSON object, got {type(record).__name__}")
    new = validation.new_memory(
        content=record.get("content"),
        namespace_=namespace if namespace is not None else record.get("namespace"),
        importance_=record.get("importance", 0.5),
        memory_type_=record.get("memory_type", "episodic"),
        tags=record.get("tags"),
        linked_entities=record.get("linked_entities"),
        metadata_=record.get("metadata"),
        session_id=record.get("session_id"),
        author_=record.get("author", author),
        kind_=record.get("kind"),
    )
    if admit is not None:
        new = admit(new)
    memory_id = validation.id_prefix(record.get("id"), "id")
    access = _count("access_count", record.get("access_count", 0))
    superseded = validation.optional_id("superseded_by", record.get("superseded_by"))
    created = _time("created_at", record.get("created_at"))
    accessed = _time("accessed_at", record.get("accessed_at", record.get("created_at")))
    token_count = _count("token_count", record.get("token_count"))
    return build_memory(new, memory_id=memory_id, token_count=token_count, created_at=created,
                 accessed_at=accessed, access_count=access, superseded_by=superseded)




MAX_COUNT = 2**63 - 1
"""SQLite's largest INTEGER; a bigger count would fail deep in the insert."""


def _count(field: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInputError(field, f"must be a whole number ≥ 0, got {value!r}")
    if value > MAX_COUNT:
        raise InvalidInputError(field, f"{value} is out of range (at most {MAX_COUNT})")
    return value


def _time(field: str, value: object) -> datetime:
    """An import's time; one the store could not read back (years outside 1-9999) is refused."""
    when: datetime | None = None
    try:
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            when = datetime.fromtimestamp(float(value), tz=UTC)
        elif isinstance(value, str):
            with contextlib.suppress(ValueError):
                parsed = datetime.fromisoformat(value)
                when = parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
        if when is not None:
            datetime.fromtimestamp(when.timestamp(), tz=UTC)  # as the store reads it back
            return when
    except (OverflowError, OSError, ValueError):
        raise InvalidInputError(field, f"{value!r} is out of range (years 1 to 9999)") from None
    raise InvalidInputError(field, f"must be an ISO-8601 time or epoch seconds, got {value!r}")


# ------------------------------------------------------------------ JSON

def jsonable(value: object) -> Any:
    """Dataclasses, enums and datetimes as plain JSON values (datetimes in ISO-8601 UTC)."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, datetime):
        return value.isoformat()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(jsonable(k)): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    return value


def dumps(value: object) -> str:
    """Indented UTF-8 JSON: readable in a terminal and diffable as a backup."""
    return json.dumps(jsonable(value), indent=2, ensure_ascii=False)
