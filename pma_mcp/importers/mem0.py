"""`--from mem0`: memories exported from OpenMemory or mem0.

Read, in the shapes their code writes:
- OpenMemory's backup zip (`POST /api/v1/backup/export`, `memories_export_<user>.zip`) holding
  `memories.json` (`{"user", "apps", "categories", "memories": [{"id", "content", "metadata",
  "state", "created_at", "app_id", "category_ids", ...}], ...}`); that `memories.json` alone;
  or its `memories.jsonl.gz` lines (`{"id", "content", "metadata", "created_at", "state",
  "app", "categories"}`).
- mem0's `get_all()` result, `{"results": [{"id", "memory", "hash", "metadata",
  "categories", "created_at", "updated_at", "user_id", "agent_id", "run_id"}]}`, or a list of
  such objects.
- The mem0 Claude Code plugin's export (`mem0-export-<project>-<date>.md`, written by its
  `export` skill): blocks of `---` front matter (`id`, `created_at`, `type`, `confidence`,
  `branch`, `files` and `categories` as comma-separated lines) followed by the memory's text.
  `files` become linked entities, `type`, `confidence` and `branch` metadata.
Each becomes a semantic memory (state `archived` → the archived tier; `deleted` is skipped)
tagged `mem0` and its categories, keeping `created_at`. Memories go to --namespace, else the
current namespace.

Read through pma_mcp.files: a FIFO is refused at once, and the file, a zip member and what
gzip data expands to are each read only up to MAX_DOCUMENT_BYTES (past it: FormatError, nothing
imported), so a compression bomb costs that much memory, never more. A record with odd values
(categories not a list, a created_at that is no time, metadata nested too deep) is coerced or
skipped with a note, and the import goes on.
"""

from __future__ import annotations

import json
import re
import zipfile
import zlib
from pathlib import Path
from typing import Any, BinaryIO

from pma_mcp import files
from pma_mcp.core.models import ImportItem, MemoryType
from pma_mcp.importers.base import (
    MAX_DOCUMENT_BYTES,
    FormatError,
    Reader,
    Source,
    bounded,
    each,
    epoch,
    json_document,
    labels,
    opened,
    shallow_metadata,
)

NAME = "mem0"
EXPECTS = ("an OpenMemory export (the backup zip, its memories.json or memories.jsonl.gz), a "
           "mem0 get_all() JSON ({\"results\": [{\"memory\": ...}]}) or the mem0 plugin's "
           "mem0-export-*.md")


def read(source: Source) -> list[ImportItem]:
    path = source.path.expanduser()
    records = _records(path)
    namespace = source.namespace or source.current
    return each(records, lambda r: _item(r, namespace, source), source, "memory")


def _records(path: Path) -> list[dict[str, Any]]:
    """The records, every read and decompression bounded by MAX_DOCUMENT_BYTES of output."""
    with opened(NAME, path, EXPECTS) as handle:
        try:
            if zipfile.is_zipfile(handle):
                return _from_zip(path, handle)
            handle.seek(0)
            if handle.read(2) == b"\x1f\x8b":
                handle.seek(0)
                data = _gunzipped(path, handle)
            else:
                handle.seek(0)
                data = bounded(NAME, path, EXPECTS, files.head_of(handle, MAX_DOCUMENT_BYTES),
                               "the file")
        except (OSError, EOFError, zlib.error, zipfile.BadZipFile) as exc:
            raise FormatError(NAME, path, EXPECTS, str(exc)) from None
    return _from_text(path, data)


def _gunzipped(path: Path, stream: files.Readable) -> bytes:
    return bounded(NAME, path, EXPECTS, files.gunzip_head(stream, MAX_DOCUMENT_BYTES),
                   "what the gzip data expands to")


def _from_zip(path: Path, handle: BinaryIO) -> list[dict[str, Any]]:
    with zipfile.ZipFile(handle) as archive:
        names = {n.rsplit("/", 1)[-1]: n for n in archive.namelist() if not n.endswith("/")}
        for wanted in ("memories.json", "memories.jsonl.gz"):
            if wanted not in names:
                continue
            info = archive.getinfo(names[wanted])
            what = f"{wanted} in the zip"
            if info.file_size > MAX_DOCUMENT_BYTES:  # said by the archive; the read checks too
                bounded(NAME, path, EXPECTS, files.Head(b"", cut=True), what)
            with archive.open(info) as member:
                if wanted == "memories.json":
                    data = bounded(NAME, path, EXPECTS,
                                   files.head_of(member, MAX_DOCUMENT_BYTES), what)
                else:
                    data = _gunzipped(path, member)
            return _from_text(path, data)
    raise FormatError(NAME, path, EXPECTS, "the zip holds no memories.json")


def _from_text(path: Path, data: bytes) -> list[dict[str, Any]]:
    if _PLUGIN_START.match(data[:1024].decode("utf-8", errors="replace")):
        return _plugin_export(path, data.decode("utf-8", errors="replace"))
    try:
        doc: object = json_document(NAME, path, EXPECTS, data)
    except json.JSONDecodeError:
        doc = _json_lines(path, data.decode("utf-8"))
    if isinstance(doc, dict) and isinstance(doc.get("memories"), list):
        return _openmemory(doc)
    if isinstance(doc, dict) and isinstance(doc.get("results"), list):
        doc = doc["results"]
    if isinstance(doc, list) and all(isinstance(r, dict) and ("memory" in r or "content" in r)
                                     for r in doc):
        return list(doc)
    raise FormatError(NAME, path, EXPECTS, "no 'memories' or 'results' list of memory objects")


def _json_lines(path: Path, text: str) -> list[object]:
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise FormatError(NAME, path, EXPECTS,
                                  f"not JSON (line {number}: {exc.msg})") from None
            except RecursionError:
                raise FormatError(NAME, path, EXPECTS,
                                  f"line {number}: JSON nested too deep to read") from None
    return out


_PLUGIN_START = re.compile(r"\A\ufeff?\s*---[ \t]*\r?\n[A-Za-z_]\w*[ \t]*:")
_PLUGIN_FENCE = re.compile(r"(?m)^---[ \t]*\r?$")
_PLUGIN_FIELD = re.compile(r"^(?P<key>[A-Za-z_]\w*)[ \t]*:[ \t]*(?P<value>.*?)[ \t]*$")


def _plugin_export(path: Path, text: str) -> list[dict[str, Any]]:
    """The plugin's Markdown: `---`, `key: value` lines, `---`, the memory's text, repeated."""
    parts = _PLUGIN_FENCE.split(text)
    records: list[dict[str, Any]] = []
    for front, body in zip(parts[1::2], parts[2::2], strict=False):
        fields: dict[str, str] = {}
        for line in front.splitlines():
            if found := _PLUGIN_FIELD.match(line.strip()):
                fields[found["key"]] = found["value"]
        content = body.strip()
        if not content:
            continue
        meta = {k: fields[k] for k in ("type", "confidence", "branch") if fields.get(k)}
        records.append({
            "id": fields.get("id") or None, "memory": content,
            "created_at": fields.get("created_at") or None,
            "categories": [*_commas(fields.get("categories")), fields.get("type", "")],
            "files": _commas(fields.get("files")), "metadata": meta,
        })
    if not records:
        raise FormatError(NAME, path, EXPECTS, "no `---` blocks with a memory's text")
    return records


def _commas(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def _openmemory(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """memories.json: names for category and app ids, which the records only reference."""
    categories = {c.get("id"): c.get("name") for c in _list(doc.get("categories"))
                  if isinstance(c, dict) and _is_key(c.get("id"))}
    apps = {a.get("id"): a.get("name") for a in _list(doc.get("apps"))
            if isinstance(a, dict) and _is_key(a.get("id"))}
    user = doc.get("user") if isinstance(doc.get("user"), dict) else {}
    records = []
    for m in doc["memories"]:
        if isinstance(m, dict):
            app_id = m.get("app_id")
            records.append({**m, "categories": [categories.get(c) for c in
                                                _list(m.get("category_ids")) if _is_key(c)],
                            "app": apps.get(app_id) if _is_key(app_id) else None,
                            "user_id": (user or {}).get("user_id", m.get("user_id"))})
    return records


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def _is_key(value: object) -> bool:
    """An id a record can reference (a list or object as an id references nothing)."""
    return isinstance(value, str | int | float | bool) or value is None


def _item(record: dict[str, Any], namespace: str, source: Source) -> ImportItem | None:
    state = str(record.get("state") or "active")
    text = str(record.get("content") or record.get("memory") or "").strip()
    if state == "deleted" or not text:
        return None
    what = f"memory {record.get('id') or text[:40]!r}"
    meta: dict[str, Any] = {"source": NAME, "mem0_id": record.get("id")}
    for key in ("user_id", "agent_id", "run_id", "app", "state", "updated_at"):
        if record.get(key):
            meta[key] = record[key]
    kept = shallow_metadata(record.get("metadata"), source, what)
    if kept:
        meta["mem0_metadata"] = kept
    created = epoch(record.get("created_at"))
    if created is None and record.get("created_at") not in (None, ""):
        source.note(what, f"created_at {str(record['created_at'])[:40]!r} is no time; "
                    "imported without it")
    return ImportItem(
        key=f"{NAME}\0{record.get('id') or text}",
        content=text,
        namespace=namespace,
        memory_type=MemoryType.ARCHIVED if state == "archived" else MemoryType.SEMANTIC,
        importance=0.6,
        tags=labels([NAME, *_categories(record.get("categories"), source, what)]),
        linked_entities=labels(paths) if isinstance(paths := record.get("files"), list) else (),
        metadata=meta,
        created_at=created,
        author=str(record["user_id"]) if isinstance(record.get("user_id"), str | int) else None,
    )


def _categories(value: object, source: Source, what: str) -> list[object]:
    """Category names: a list as it is, one name (a string or a number) as one, else none."""
    if value is None or isinstance(value, list):
        return value or []
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return [value]
    source.note(what, f"categories is {type(value).__name__}, not a list; imported without them")
    return []


READER = Reader(read, EXPECTS)
