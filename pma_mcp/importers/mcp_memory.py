"""`--from mcp-memory`: the knowledge graph of `@modelcontextprotocol/server-memory`.

Its file (`MEMORY_FILE_PATH`, default `memory.jsonl` beside the server) holds one JSON object
a line: `{"type":"entity","name","entityType","observations":[...]}` and
`{"type":"relation","from","to","relationType"}`. A `read_graph` result
(`{"entities": [...], "relations": [...]}`) is read too. Every observation becomes a semantic
memory "<name> (<entityType>): <observation>" linked to its entity; an entity without
observations becomes "<name> is a <entityType>"; every relation becomes
"<from> <relationType> <to>" linked to both. The file has no times: the file's modification
time is used. Memories go to --namespace, else the current namespace.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pma_mcp.core.models import ImportItem, MemoryType
from pma_mcp.importers.base import FormatError, Reader, Source, labels, mtime

NAME = "mcp-memory"
EXPECTS = ("a @modelcontextprotocol/server-memory file (JSON Lines of {\"type\": \"entity\"} "
           "and {\"type\": \"relation\"} objects, as in its MEMORY_FILE_PATH)")
MAX_FILE_BYTES = 200_000_000


def read(source: Source) -> list[ImportItem]:
    path = source.path.expanduser()
    records = _records(path)
    namespace = source.namespace or source.current
    when = mtime(path)
    items: list[ImportItem] = []
    for record in records:
        if record.get("type") == "entity" or "entityType" in record:
            items.extend(_entity(record, namespace, when))
        elif record.get("type") == "relation" or "relationType" in record:
            items.extend(_relation(record, namespace, when))
    return items


def _records(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_bytes()[:MAX_FILE_BYTES].decode("utf-8")
    except FileNotFoundError:
        raise FormatError(NAME, path, EXPECTS, "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise FormatError(NAME, path, EXPECTS, str(exc)) from None
    try:
        whole = json.loads(text) if text.lstrip().startswith("{") and "\n{" not in text else None
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, dict) and ("entities" in whole or "relations" in whole):
        return [*_objects(whole.get("entities")), *_objects(whole.get("relations"))]
    records: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise FormatError(NAME, path, EXPECTS, f"line {number} is not JSON ({exc.msg})"
                              ) from None
        if not isinstance(record, dict) or record.get("type") not in ("entity", "relation"):
            raise FormatError(NAME, path, EXPECTS,
                              f"line {number} is not an entity or relation object")
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
