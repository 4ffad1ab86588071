"""`--from mcp-memory`: the knowledge graph of `@modelcontextprotocol/server-memory`.

Its file (`MEMORY_FILE_PATH`, default `memory.jsonl` beside the server) holds one JSON object
a line: `{"type":"entity","name","entityType","observations":[...]}` and
`{"type":"relation","from","to","relationType"}`. A `read_graph` result
(`{"entities": [...], "relations": [...]}`) is read too. Every observation becomes a semantic
memory "<name> (<entityType>): <observation>" linked to its entity; an entity without
observations becomes "<name> is a <entityType>"; every relation becomes
"<from> <relationType> <to>" linked to both. The file has no times: the file's modification
time is used. Memories go to --namespace, else the current namespace.

The file is read through pma_mcp.files (a FIFO is refused at once); JSON Lines are streamed,
so memory stays bounded by the longest line kept, not by the file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, BinaryIO

from pma_mcp import files
from pma_mcp.core.models import ImportItem, MemoryType
from pma_mcp.importers.base import (
    MAX_DOCUMENT_BYTES,
    MAX_LINE_BYTES,
    MAX_STREAM_BYTES,
    FormatError,
    Reader,
    Source,
    bounded,
    each,
    json_document,
    labels,
    mtime,
    opened,
)

NAME = "mcp-memory"
EXPECTS = ("a @modelcontextprotocol/server-memory file (JSON Lines of {\"type\": \"entity\"} "
           "and {\"type\": \"relation\"} objects, as in its MEMORY_FILE_PATH)")
SNIFF_BYTES = 1 << 16
_DOCUMENT = re.compile(rb'\{\s*(?:"(?:entities|relations)"|$)')
"""The first line of a `read_graph` document (pretty-printed or on one line), not a record."""


def read(source: Source) -> list[ImportItem]:
    path = source.path.expanduser()
    records = _records(path, source)
    namespace = source.namespace or source.current
    when = mtime(path)

    def items_of(record: dict[str, Any]) -> list[ImportItem]:
        if record.get("type") == "entity" or "entityType" in record:
            return _entity(record, namespace, when)
        if record.get("type") == "relation" or "relationType" in record:
            return _relation(record, namespace, when)
        return []

    return [item for items in each(records, items_of, source, "record") for item in items]


def _records(path: Path, source: Source) -> list[dict[str, Any]]:
    """The graph's records: a `read_graph` document is parsed whole (up to
    MAX_DOCUMENT_BYTES), JSON Lines are streamed a line at a time (a line past MAX_LINE_BYTES
    is skipped with a note, never held)."""
    with opened(NAME, path, EXPECTS) as handle:
        first = files.head_of(handle, SNIFF_BYTES).data.lstrip().split(b"\n", 1)[0]
        handle.seek(0)
        if _DOCUMENT.match(first):
            data = bounded(NAME, path, EXPECTS, files.head_of(handle, MAX_DOCUMENT_BYTES),
                           "the file")
            try:
                whole = json_document(NAME, path, EXPECTS, data)
            except json.JSONDecodeError:
                whole = None  # read as lines: the error then names the line
            if isinstance(whole, dict) and ("entities" in whole or "relations" in whole):
                return [*_objects(whole.get("entities")), *_objects(whole.get("relations"))]
            handle.seek(0)
        try:
            return _json_lines(path, handle, source)
        except files.RefusedFileError as exc:
            raise FormatError(NAME, path, EXPECTS, exc.reason) from None


def _json_lines(path: Path, handle: BinaryIO, source: Source) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for line in files.lines(handle, path, max_line=MAX_LINE_BYTES, max_total=MAX_STREAM_BYTES):
        if line.data is None:
            source.note(f"line {line.number}", f"longer than {MAX_LINE_BYTES:,} bytes; skipped")
            continue
        if not line.data.strip():
            continue
        try:
            record = json.loads(line.data.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise FormatError(NAME, path, EXPECTS, f"line {line.number} is not UTF-8 text "
                              f"(byte {exc.start})") from None
        except RecursionError:
            source.note(f"line {line.number}", "JSON nested too deep to read; skipped")
            continue
        except json.JSONDecodeError as exc:
            raise FormatError(NAME, path, EXPECTS, f"line {line.number} is not JSON ({exc.msg})"
                              ) from None
        if not isinstance(record, dict) or record.get("type") not in ("entity", "relation"):
            raise FormatError(NAME, path, EXPECTS,
                              f"line {line.number} is not an entity or relation object")
        records.append(record)
    return records


def _objects(value: object) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _entity(record: dict[str, Any], namespace: str, when: float | None) -> list[ImportItem]:
    name = str(record.get("name") or "").strip()
    kind = str(record.get("entityType") or "").strip()
    if not name:
        return []
    observations = [str(o).strip() for o in record.get("observations") or [] if str(o).strip()]
    texts = [f"{name} ({kind}): {o}" if kind else f"{name}: {o}" for o in observations]
    if not texts:
        texts = [f"{name} is a {kind}." if kind else name]
    return [ImportItem(
        key=f"{NAME}\0entity\0{name}\0{text}",
        content=text,
        namespace=namespace,
        memory_type=MemoryType.SEMANTIC,
        importance=0.6,
        tags=labels([NAME, kind]),
        linked_entities=labels([name]),
        metadata={"source": NAME, "record": "entity", "entity": name, "entityType": kind},
        created_at=when,
    ) for text in texts]


def _relation(record: dict[str, Any], namespace: str, when: float | None) -> list[ImportItem]:
    start, end = str(record.get("from") or "").strip(), str(record.get("to") or "").strip()
    kind = str(record.get("relationType") or "").strip()
    if not (start and end and kind):
        return []
    return [ImportItem(
        key=f"{NAME}\0relation\0{start}\0{kind}\0{end}",
        content=f"{start} {kind.replace('_', ' ')} {end}",
        namespace=namespace,
        memory_type=MemoryType.SEMANTIC,
        importance=0.55,
        tags=labels([NAME, "relation", kind]),
        linked_entities=labels([start, end]),
        metadata={"source": NAME, "record": "relation", "from": start, "to": end,
                  "relationType": kind},
        created_at=when,
    )]


READER = Reader(read, EXPECTS)
