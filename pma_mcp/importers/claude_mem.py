"""`--from claude-mem`: claude-mem's SQLite database (default `~/.claude-mem/claude-mem.db`).

Tables as claude-mem's own code creates them (`src/services/sqlite/SessionStore.ts` for the
worker's tables, `src/storage/sqlite/schema.ts` for the server storage added in v13), read on a
read-only connection; every column is optional, so databases from v9 on read alike:
- `observations` → episodic memories: title, subtitle, narrative and facts as the text (the
  legacy `text` column when those are empty); `type` and `concepts` as tags; `files_read` and
  `files_modified` as linked entities; `memory_session_id` as the session.
- `session_summaries` → semantic memories: request, investigated, learned, completed,
  next_steps and notes as labelled lines; `files_read` and `files_edited` as entities.
- `memory_items` (v13) → memories like the above by `kind`: `observation` episodic, `summary`
  and `manual` (written on purpose, importance 0.7) semantic, `prompt` episodic; its project
  from `projects`, its session from `server_sessions`, its `metadata` object kept. An item that
  copies a legacy row read here (`legacy_observation_id`, or a `memory_sources` row naming it)
  is skipped, so nothing arrives twice.
Each row keeps its `created_at_epoch` (milliseconds) as `created_at`. `project` (a folder's
name; `merged_into_project` when set) maps to a namespace: --namespace if given, else the
current namespace when its last path part is that name, else the name itself. `user_prompts`,
`sdk_sessions` and the sync, event and team tables hold no memory and are not read.

The file is checked to be a regular file before SQLite opens it (a FIFO is refused at once),
generated columns are never read, and every value's length is checked in SQL before it is
fetched, so a small file computing a huge value costs no memory.

This module holds the only SQL outside the store package: it reads another program's file, never
our store, and only with SELECT on a read-only connection.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path, PurePath
from typing import Any
from urllib.parse import quote

from pma_mcp import files
from pma_mcp.core import validation
from pma_mcp.core.errors import InvalidInputError
from pma_mcp.core.models import ImportItem, MemoryType
from pma_mcp.importers.base import FormatError, Reader, Source, each, epoch, json_list, labels

NAME = "claude-mem"
EXPECTS = ("a claude-mem SQLite database (~/.claude-mem/claude-mem.db, with observations, "
           "session_summaries or memory_items tables)")
TABLES = ("observations", "session_summaries", "memory_items")
ITEM_KINDS = {"observation": (MemoryType.EPISODIC, None), "prompt": (MemoryType.EPISODIC, 0.4),
              "summary": (MemoryType.SEMANTIC, 0.6), "manual": (MemoryType.SEMANTIC, 0.7)}
IMPORTANCE = {"decision": 0.7, "bugfix": 0.65, "feature": 0.6, "discovery": 0.55}
MAX_VALUE_CHARS = 1_000_000
"""A column value longer than this is not read; its row is skipped with a note."""
MAX_SQLITE_VALUE_BYTES = 8_000_000
"""SQLite's own cap on any string or blob while reading the file (a backstop: a computed value
past it ends the read with FormatError)."""
SUMMARY_FIELDS = (("request", "Request"), ("investigated", "Investigated"),
                  ("learned", "Learned"), ("completed", "Completed"),
                  ("next_steps", "Next steps"), ("notes", "Notes"))


def read(source: Source) -> list[ImportItem]:
    path = source.path.expanduser()
    why = files.not_regular(path)  # SQLite opens the file itself: checked before it does
    if why is not None or not path.is_file():
        raise FormatError(NAME, path, EXPECTS, why or "no such file")
    try:
        conn = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise FormatError(NAME, path, EXPECTS, str(exc)) from None
    conn.row_factory = sqlite3.Row
    # No string or blob SQLite builds for us may pass this, whatever the schema computes.
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_SQLITE_VALUE_BYTES)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not tables.intersection(TABLES):
            found = ", ".join(sorted(tables)) or "none"
            raise FormatError(NAME, path, EXPECTS, "it has no observations, session_summaries "
                              f"or memory_items table (tables: {found})")
        observations = _rows(conn, tables, "observations", source)
        summaries = _rows(conn, tables, "session_summaries", source)
        items = each(observations, lambda row: _observation(row, source), source, "observation")
        items += each(summaries, lambda row: _summary(row, source), source, "session summary")
        read_already = {("observations", row.get("id")) for row in observations}
        read_already |= {("session_summaries", row.get("id")) for row in summaries}
        items += _memory_items(conn, tables, source, read_already)
    except sqlite3.DatabaseError as exc:
        raise FormatError(NAME, path, EXPECTS, str(exc)) from None
    finally:
        conn.close()
    return [item for item in items if item.content.strip()]


def _rows(conn: sqlite3.Connection, tables: set[str], table: str, source: Source
          ) -> list[dict[str, Any]]:
    """The table's rows, stored columns only (a generated column is computed by the file's
    own schema, so it is never read). A value longer than MAX_VALUE_CHARS is checked in SQL
    and never fetched: its row is skipped with a note."""
    if table not in tables:
        return []
    # `table` is one of a fixed set of names, never user text; column names are quoted.
    columns = [str(r["name"]) for r in conn.execute(f"PRAGMA table_xinfo({table})")
               if r["hidden"] == 0]
    if not columns:
        return []
    quoted = ['"' + c.replace('"', '""') + '"' for c in columns]
    values = ", ".join(f"CASE WHEN length({q}) > {MAX_VALUE_CHARS} THEN NULL ELSE {q} END AS {q}"
                       for q in quoted)
    over = " || ".join(f"CASE WHEN length({q}) > {MAX_VALUE_CHARS} THEN "
                       f"'{c.replace(chr(39), chr(39) * 2)} ' ELSE '' END"
                       for c, q in zip(columns, quoted, strict=True))
    rows = []
    for row in conn.execute(f"SELECT {values}, {over} AS pma_oversize FROM {table} ORDER BY id"):
        record = dict(row)
        oversize = str(record.pop("pma_oversize") or "").split()
        if oversize:
            source.note(f"{table} row {record.get('id')}", f"{', '.join(oversize)} longer than "
                        f"{MAX_VALUE_CHARS:,} characters; skipped")
            continue
        rows.append(record)
    return rows


def namespace_of(project: object, source: Source) -> str:
    if source.namespace is not None:
        return source.namespace
    name = str(project or "").strip()
    if not name or PurePath(source.current).name == name:
        return source.current
    return name


def _project(row: dict[str, Any]) -> object:
    return row.get("merged_into_project") or row.get("project")


def _observation(row: dict[str, Any], source: Source) -> ImportItem:
    facts = [f"- {f}" for f in json_list(row.get("facts")) if str(f).strip()]
    parts = [row.get("title"), row.get("subtitle"), row.get("narrative"), "\n".join(facts)]
    text = "\n\n".join(str(p).strip() for p in parts if p and str(p).strip())
    kind = str(row.get("type") or "observation")
    files = json_list(row.get("files_read")) + json_list(row.get("files_modified"))
    return ImportItem(
        key=f"{NAME}\0observation\0{row.get('id')}",
        content=text or str(row.get("text") or ""),
        namespace=namespace_of(_project(row), source),
        memory_type=MemoryType.EPISODIC,
        importance=IMPORTANCE.get(kind, 0.5),
        tags=labels([NAME, kind, *json_list(row.get("concepts"))]),
        linked_entities=labels(files),
        metadata=_meta(row, "observation"),
        session_id=_session(row),
        created_at=_created(row),
    )


def _summary(row: dict[str, Any], source: Source) -> ImportItem:
    lines = [f"{label}: {str(row.get(key)).strip()}" for key, label in SUMMARY_FIELDS
             if row.get(key) and str(row.get(key)).strip()]
    files = json_list(row.get("files_read")) + json_list(row.get("files_edited"))
    return ImportItem(
        key=f"{NAME}\0summary\0{row.get('id')}",
        content="Session summary\n" + "\n".join(lines) if lines else "",
        namespace=namespace_of(_project(row), source),
        memory_type=MemoryType.SEMANTIC,
        importance=0.6,
        tags=labels([NAME, "session-summary"]),
        linked_entities=labels(files),
        metadata=_meta(row, "session_summary"),
        session_id=_session(row),
        created_at=_created(row),
    )


def _memory_items(conn: sqlite3.Connection, tables: set[str], source: Source,
                  read_already: set[tuple[str, object]]) -> list[ImportItem]:
    """v13's `memory_items`, minus those that copy a legacy row already read."""
    projects = {r.get("id"): r.get("name") for r in _rows(conn, tables, "projects", source)}
    sessions = {r.get("id"): r.get("memory_session_id") or r.get("content_session_id")
                for r in _rows(conn, tables, "server_sessions", source)}
    copies: set[object] = set()
    for row in _rows(conn, tables, "memory_sources", source):
        if (row.get("legacy_table"), row.get("legacy_id")) in read_already:
            copies.add(row.get("memory_item_id"))

    def item(row: dict[str, Any]) -> ImportItem | None:
        legacy = row.get("legacy_observation_id")
        if row.get("id") in copies or (legacy is not None
                                       and ("observations", legacy) in read_already):
            return None
        kind = str(row.get("kind") or "observation")
        memory_type, importance = ITEM_KINDS.get(kind, ITEM_KINDS["observation"])
        base = _observation({**row, "project": projects.get(row.get("project_id"))}, source)
        meta = _meta(row, "memory_item")
        if isinstance(extra := _json_object(row.get("metadata")), dict) and extra:
            meta["claude_mem_metadata"] = extra
        session = sessions.get(row.get("server_session_id"))
        return dataclasses.replace(
            base, key=f"{NAME}\0memory_item\0{row.get('id')}", memory_type=memory_type,
            importance=base.importance if importance is None else importance,
            tags=labels([NAME, kind, *base.tags[1:]]), metadata=meta,
            session_id=str(session) if session else None)

    return each(_rows(conn, tables, "memory_items", source), item, source, "memory item")


def _json_object(value: object) -> object:
    """A JSON metadata column, or None when it is not JSON or nests past our depth limit (the
    item is still imported, without it)."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        parsed = json.loads(value)
        validation.shallow(parsed, limit=validation.MAX_METADATA_DEPTH - 1)
    except (json.JSONDecodeError, RecursionError, InvalidInputError):
        return None
    return parsed


def _meta(row: dict[str, Any], kind: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"source": NAME, "record": kind, "claude_mem_id": row.get("id")}
    for key in ("project", "prompt_number", "generated_by_model"):
        if row.get(key) is not None:
            meta[key] = row[key]
    return meta


def _session(row: dict[str, Any]) -> str | None:
    value = row.get("memory_session_id")
    return str(value) if value else None


def _created(row: dict[str, Any]) -> float | None:
    return epoch(row.get("created_at_epoch")) or epoch(row.get("created_at"))


READER = Reader(read, EXPECTS)


def default_path(home: Path) -> Path:
    return home / ".claude-mem" / "claude-mem.db"
