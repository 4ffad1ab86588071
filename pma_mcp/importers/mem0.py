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
"""

from __future__ import annotations

import gzip
import json
import re
import zipfile
from pathlib import Path
from typing import Any

from pma_mcp.core.models import ImportItem, MemoryType
from pma_mcp.importers.base import FormatError, Reader, Source, epoch, labels

NAME = "mem0"
EXPECTS = ("an OpenMemory export (the backup zip, its memories.json or memories.jsonl.gz), a "
           "mem0 get_all() JSON ({\"results\": [{\"memory\": ...}]}) or the mem0 plugin's "
           "mem0-export-*.md")
MAX_BYTES = 200_000_000


def read(source: Source) -> list[ImportItem]:
    path = source.path.expanduser()
    records = _records(path)
    namespace = source.namespace or source.current
    return [item for r in records if (item := _item(r, namespace)) is not None]


def _records(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise FormatError(NAME, path, EXPECTS, "no such file")
    try:
        if zipfile.is_zipfile(path):
            return _from_zip(path)
        raw = path.read_bytes()[:MAX_BYTES]
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError, EOFError, zipfile.BadZipFile) as exc:
        raise FormatError(NAME, path, EXPECTS, str(exc)) from None
    return _from_text(path, text)


def _from_zip(path: Path) -> list[dict[str, Any]]:
    with zipfile.ZipFile(path) as archive:
        names = {n.rsplit("/", 1)[-1]: n for n in archive.namelist() if not n.endswith("/")}
        if "memories.json" in names:
            return _from_text(path, archive.read(names["memories.json"]).decode("utf-8"))
        if "memories.jsonl.gz" in names:
            data = gzip.decompress(archive.read(names["memories.jsonl.gz"])).decode("utf-8")
            return _from_text(path, data)
    raise FormatError(NAME, path, EXPECTS, "the zip holds no memories.json")


def _from_text(path: Path, text: str) -> list[dict[str, Any]]:
    if _PLUGIN_START.match(text):
        return _plugin_export(path, text)
    try:
        doc: object = json.loads(text)
    except json.JSONDecodeError:
        doc = _json_lines(path, text)
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
    categories = {c.get("id"): c.get("name") for c in doc.get("categories") or []
                  if isinstance(c, dict)}
    apps = {a.get("id"): a.get("name") for a in doc.get("apps") or [] if isinstance(a, dict)}
    user = doc.get("user") if isinstance(doc.get("user"), dict) else {}
    records = []
    for m in doc["memories"]:
        if isinstance(m, dict):
            records.append({**m, "categories": [categories.get(c) for c in
                                                m.get("category_ids") or []],
                            "app": apps.get(m.get("app_id")),
                            "user_id": (user or {}).get("user_id", m.get("user_id"))})
    return records


def _item(record: dict[str, Any], namespace: str) -> ImportItem | None:
    state = str(record.get("state") or "active")
    text = str(record.get("content") or record.get("memory") or "").strip()
    if state == "deleted" or not text:
        return None
    meta: dict[str, Any] = {"source": NAME, "mem0_id": record.get("id")}
    for key in ("user_id", "agent_id", "run_id", "app", "state", "updated_at"):
        if record.get(key):
            meta[key] = record[key]
    if isinstance(record.get("metadata"), dict) and record["metadata"]:
        meta["mem0_metadata"] = record["metadata"]
    return ImportItem(
        key=f"{NAME}\0{record.get('id') or text}",
        content=text,
        namespace=namespace,
        memory_type=MemoryType.ARCHIVED if state == "archived" else MemoryType.SEMANTIC,
        importance=0.6,
        tags=labels([NAME, *(record.get("categories") or [])]),
        linked_entities=labels(files) if isinstance(files := record.get("files"), list) else (),
        metadata=meta,
        created_at=epoch(record.get("created_at")),
        author=str(record["user_id"]) if record.get("user_id") else None,
    )


READER = Reader(read, EXPECTS)
