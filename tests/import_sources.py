"""Inputs for the importers, built the way each tool writes them.

claude-mem 13: the worker's tables as its `src/services/sqlite/SessionStore.ts` migrations
leave them and the server storage of `src/storage/sqlite/schema.ts` (`projects`,
`server_sessions`, `memory_items`, `memory_sources`), rows as its stores write them (JSON-array
text columns, ISO time plus epoch milliseconds). OpenMemory: the zip of its `routers/backup.py`
export. mem0: `get_all()`'s `{"results": [...]}`. Claude Code: CLAUDE.md, rules and an
auto-memory folder under a throwaway config dir. The mcp-memory file is written by the real
server (test_import.py).
"""

from __future__ import annotations

import json
import re
import sqlite3
import zipfile
from pathlib import Path
from typing import Any

SECRET = "sk-ant-api03-" + "Q" * 40
"""A credential planted in every source: it must arrive redacted."""

CLAUDE_MEM_DDL = """
CREATE TABLE schema_versions (id INTEGER PRIMARY KEY, version INTEGER UNIQUE NOT NULL,
  applied_at TEXT NOT NULL);
CREATE TABLE sdk_sessions (id INTEGER PRIMARY KEY AUTOINCREMENT,
  content_session_id TEXT UNIQUE NOT NULL, memory_session_id TEXT UNIQUE, project TEXT NOT NULL,
  platform_source TEXT NOT NULL DEFAULT 'claude', user_prompt TEXT, started_at TEXT NOT NULL,
  started_at_epoch INTEGER NOT NULL, completed_at TEXT, completed_at_epoch INTEGER,
  status TEXT NOT NULL DEFAULT 'active', worker_port INTEGER, prompt_counter INTEGER DEFAULT 0,
  custom_title TEXT);
CREATE TABLE observations (id INTEGER PRIMARY KEY AUTOINCREMENT,
  memory_session_id TEXT NOT NULL, project TEXT NOT NULL, text TEXT, type TEXT NOT NULL,
  title TEXT, subtitle TEXT, facts TEXT, narrative TEXT, concepts TEXT, files_read TEXT,
  files_modified TEXT, prompt_number INTEGER, discovery_tokens INTEGER DEFAULT 0,
  content_hash TEXT, agent_type TEXT, agent_id TEXT, merged_into_project TEXT,
  generated_by_model TEXT, metadata TEXT, created_at TEXT NOT NULL,
  created_at_epoch INTEGER NOT NULL, UNIQUE(memory_session_id, content_hash));
CREATE TABLE session_summaries (id INTEGER PRIMARY KEY AUTOINCREMENT,
  memory_session_id TEXT NOT NULL, project TEXT NOT NULL, request TEXT, investigated TEXT,
  learned TEXT, completed TEXT, next_steps TEXT, files_read TEXT, files_edited TEXT, notes TEXT,
  prompt_number INTEGER, discovery_tokens INTEGER DEFAULT 0, merged_into_project TEXT,
  created_at TEXT NOT NULL, created_at_epoch INTEGER NOT NULL);
CREATE TABLE user_prompts (id INTEGER PRIMARY KEY AUTOINCREMENT,
  content_session_id TEXT NOT NULL, prompt_number INTEGER NOT NULL, prompt_text TEXT NOT NULL,
  created_at TEXT NOT NULL, created_at_epoch INTEGER NOT NULL);
CREATE TABLE projects (id TEXT PRIMARY KEY, name TEXT NOT NULL, slug TEXT UNIQUE,
  root_path TEXT UNIQUE, metadata TEXT NOT NULL DEFAULT '{}', created_at_epoch INTEGER NOT NULL,
  updated_at_epoch INTEGER NOT NULL);
CREATE TABLE server_sessions (id TEXT PRIMARY KEY, project_id TEXT NOT NULL,
  content_session_id TEXT, memory_session_id TEXT, platform_source TEXT NOT NULL DEFAULT 'claude',
  title TEXT, status TEXT NOT NULL DEFAULT 'active', metadata TEXT NOT NULL DEFAULT '{}',
  started_at_epoch INTEGER NOT NULL, completed_at_epoch INTEGER, updated_at_epoch INTEGER NOT NULL);
CREATE TABLE memory_items (id TEXT PRIMARY KEY, project_id TEXT NOT NULL, server_session_id TEXT,
  legacy_observation_id INTEGER, kind TEXT NOT NULL
  CHECK(kind IN ('observation', 'summary', 'prompt', 'manual')), type TEXT NOT NULL, title TEXT,
  subtitle TEXT, text TEXT, narrative TEXT, facts TEXT NOT NULL DEFAULT '[]',
  concepts TEXT NOT NULL DEFAULT '[]', files_read TEXT NOT NULL DEFAULT '[]',
  files_modified TEXT NOT NULL DEFAULT '[]', metadata TEXT NOT NULL DEFAULT '{}',
  created_at_epoch INTEGER NOT NULL, updated_at_epoch INTEGER NOT NULL);
CREATE TABLE memory_sources (id TEXT PRIMARY KEY, memory_item_id TEXT NOT NULL,
  source_type TEXT NOT NULL, legacy_table TEXT, legacy_id INTEGER, source_uri TEXT,
  metadata TEXT NOT NULL DEFAULT '{}', created_at_epoch INTEGER NOT NULL);
"""
OBSERVATION_MS = 1_767_225_600_000
"""2026-01-01T00:00:00Z, as claude-mem stores it (Date.now())."""


def claude_mem_db(path: Path, project: str = "acme-api") -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(CLAUDE_MEM_DDL)
    iso = "2026-01-01T00:00:00.000Z"
    conn.execute(
        "INSERT INTO sdk_sessions (content_session_id, memory_session_id, project, user_prompt, "
        "started_at, started_at_epoch, status) VALUES (?,?,?,?,?,?,?)",
        ("7d3f2b10-5c6e-4e2a-8f41-9b0c1d2e3f40", "mem-7d3f2b10", project,
         "Why does the nightly export time out?", iso, OBSERVATION_MS, "completed"))
    observations = [
        ("bugfix", "Export job retried forever", "Unbounded retries in the nightly export",
         ["Retries were unbounded", "Capped retries at 5 in export/retry.py"],
         "The nightly export timed out because its webhook retries never stopped. "
         f"Debug key was {SECRET}.", ["retries", "export"], ["export/retry.py"],
         ["export/retry.py", "export/config.py"]),
        ("decision", "Gzip level 6 for exports", None, ["Level 9 cost 3x CPU for 4% size"],
         "We decided on gzip level 6 for nightly export archives.", ["compression"],
         ["export/archive.py"], []),
        ("discovery", "Billing owns payments-service", "Ownership", [],
         "The billing team owns payments-service and its webhook retries.", [], [], []),
    ]
    for i, (kind, title, subtitle, facts, narrative, concepts, read, modified) in enumerate(
            observations):
        conn.execute(
            "INSERT INTO observations (memory_session_id, project, type, title, subtitle, facts, "
            "narrative, concepts, files_read, files_modified, prompt_number, discovery_tokens, "
            "created_at, created_at_epoch) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            ("mem-7d3f2b10", project, kind, title, subtitle, json.dumps(facts), narrative,
             json.dumps(concepts), json.dumps(read), json.dumps(modified), i + 1, 1200, iso,
             OBSERVATION_MS + i * 60_000))
    conn.execute(
        "INSERT INTO session_summaries (memory_session_id, project, request, investigated, "
        "learned, completed, next_steps, files_read, files_edited, notes, prompt_number, "
        "created_at, created_at_epoch) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
        ("mem-7d3f2b10", project, "Fix the nightly export timeout",
         "Retry policy and archive settings", "Retries must be bounded",
         "Capped retries at 5; gzip level 6", "Add an alert on retry exhaustion",
         json.dumps(["export/retry.py"]), json.dumps(["export/retry.py"]), None, 3, iso,
         OBSERVATION_MS + 600_000))
    conn.execute(
        "INSERT INTO user_prompts (content_session_id, prompt_number, prompt_text, created_at, "
        "created_at_epoch) VALUES (?,?,?,?,?)",
        ("7d3f2b10-5c6e-4e2a-8f41-9b0c1d2e3f40", 1, "Why does the export time out?", iso,
         OBSERVATION_MS))
    # v13's server storage: one item copying observation 1 (skipped), one copying the
    # summary through memory_sources (skipped), and two written there only.
    conn.execute("INSERT INTO projects VALUES (?,?,?,?,?,?,?)",
                 ("p-acme", project, project, f"/home/dev/{project}", "{}", OBSERVATION_MS,
                  OBSERVATION_MS))
    conn.execute("INSERT INTO server_sessions (id, project_id, content_session_id, "
                 "memory_session_id, started_at_epoch, updated_at_epoch) VALUES (?,?,?,?,?,?)",
                 ("ss-1", "p-acme", "7d3f2b10-5c6e-4e2a-8f41-9b0c1d2e3f40", "mem-7d3f2b10",
                  OBSERVATION_MS, OBSERVATION_MS))
    items: list[tuple[str, int | None, str, str, str, str | None, str]] = [
        ("mi-copy", 1, "observation", "bugfix", "Export job retried forever", None, "{}"),
        ("mi-summary", None, "summary", "summary", "Fix the nightly export timeout", None, "{}"),
        ("mi-manual", None, "manual", "rule", "Always run the test suite before committing.",
         None, json.dumps({"origin": {"client": "cli", SECRET: "a secret as a key"}})),
        ("mi-queue", None, "observation", "decision", "Export queue moved to BullMQ",
         "The nightly export queue moved from cron to BullMQ with 5 attempts per job.", "{}"),
    ]
    for n, (item_id, legacy, item_kind, item_type, heading, body, meta) in enumerate(items):
        conn.execute(
            "INSERT INTO memory_items (id, project_id, server_session_id, legacy_observation_id, "
            "kind, type, title, narrative, concepts, files_modified, metadata, created_at_epoch, "
            "updated_at_epoch) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (item_id, "p-acme", "ss-1", legacy, item_kind, item_type, heading, body,
             json.dumps(["export"]), json.dumps(["export/queue.ts"] if body else []), meta,
             OBSERVATION_MS + (20 + n) * 60_000, OBSERVATION_MS + (20 + n) * 60_000))
    conn.execute("INSERT INTO memory_sources (id, memory_item_id, source_type, legacy_table, "
                 "legacy_id, created_at_epoch) VALUES (?,?,?,?,?,?)",
                 ("ms-1", "mi-summary", "session_summary", "session_summaries", 1, OBSERVATION_MS))
    conn.commit()
    conn.close()
    return path


def openmemory_zip(path: Path) -> Path:
    """What OpenMemory's POST /api/v1/backup/export returns."""
    cat = {"id": "0b8e8a3c-1111-4c2a-9d7e-000000000001", "name": "work",
           "description": None, "created_at": "2025-11-02T10:00:00+00:00", "updated_at": None}
    app: dict[str, Any] = {
        "id": "5f0c1d2e-2222-4a1b-8c3d-000000000001", "owner_id": "u-1", "name": "cursor",
        "description": None, "metadata": {}, "is_active": True,
        "created_at": "2025-11-02T10:00:00+00:00", "updated_at": None}
    memories: list[dict[str, Any]] = [
        {"id": "9a1b2c3d-3333-4e5f-8a9b-000000000001", "user_id": "u-1", "app_id": app["id"],
         "content": "Prefers pnpm over npm for every JavaScript project",
         "metadata": {"source_app": "cursor"}, "state": "active",
         "created_at": "2025-11-03T09:15:00+00:00", "updated_at": None, "archived_at": None,
         "deleted_at": None, "category_ids": [cat["id"]]},
        {"id": "9a1b2c3d-3333-4e5f-8a9b-000000000002", "user_id": "u-1", "app_id": app["id"],
         "content": f"Staging deploy token is {SECRET}", "metadata": {}, "state": "active",
         "created_at": "2025-11-04T09:15:00+00:00", "updated_at": None, "archived_at": None,
         "deleted_at": None, "category_ids": []},
        {"id": "9a1b2c3d-3333-4e5f-8a9b-000000000003", "user_id": "u-1", "app_id": None,
         "content": "Old laptop was a ThinkPad", "metadata": {}, "state": "deleted",
         "created_at": "2025-11-05T09:15:00+00:00", "updated_at": None, "archived_at": None,
         "deleted_at": "2025-11-06T09:15:00+00:00", "category_ids": []},
    ]
    payload = {
        "user": {"id": "u-1", "user_id": "dev", "name": "Dev", "email": None, "metadata": {},
                 "created_at": "2025-11-01T00:00:00+00:00", "updated_at": None},
        "apps": [app], "categories": [cat], "memories": memories,
        "memory_categories": [{"memory_id": memories[0]["id"], "category_id": cat["id"]}],
        "status_history": [], "access_controls": [],
        "export_meta": {"app_id_filter": None, "from_date": None, "to_date": None,
                        "version": "1", "generated_at": "2025-11-07T00:00:00+00:00"},
    }
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("memories.json", json.dumps(payload, indent=2))
    return path


def mem0_get_all(path: Path) -> Path:
    """mem0's Memory.get_all(user_id=...) result, saved with json.dump."""
    results = [
        {"id": "c1d2e3f4-4444-4a5b-9c6d-000000000001",
         "memory": "Is allergic to peanuts", "hash": "5d41402abc4b2a76b9719d911017c592",
         "metadata": None, "created_at": "2025-10-01T08:00:00.000000-07:00",
         "updated_at": None, "user_id": "alice"},
        {"id": "c1d2e3f4-4444-4a5b-9c6d-000000000002",
         "memory": "Works on the payments-service webhook retries",
         "hash": "7d793037a0760186574b0282f2f435e7", "metadata": {"topic": "work"},
         "created_at": "2025-10-02T08:00:00.000000-07:00", "updated_at": None,
         "user_id": "alice"},
    ]
    path.write_text(json.dumps({"results": results}, indent=2), encoding="utf-8")
    return path


def claude_code_project(root: Path, claude_home: Path) -> Path:
    project = root / "acme-api"
    (project / ".claude" / "rules").mkdir(parents=True)
    (project / "CLAUDE.md").write_text(
        "# acme-api\n\nPayments backend.\n\n## Commands\n\n"
        "Run `uv run pytest -q` before every commit; lint with `uv run ruff check .`.\n\n"
        "## Conventions\n\nMoney is stored as integer cents, never floats, in every table.\n",
        encoding="utf-8")
    (project / ".claude" / "rules" / "sql.md").write_text(
        "# SQL rules\n\nEvery migration is reversible and reviewed by the billing team.\n",
        encoding="utf-8")
    # a path-scoped rule, as Claude Code's memory docs write one
    (project / ".claude" / "rules" / "api.md").write_text(
        '---\npaths:\n  - "src/api/**/*.ts"\n  - "src/routes/*.ts"\n---\n\n# API rules\n\n'
        "Every endpoint validates its input with the shared schema before touching the "
        "database.\n", encoding="utf-8")
    memory = claude_home / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(project)) / "memory"
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text(
        "# Memory index\n\n- [Debugging notes](debugging.md): export retry investigation\n"
        "- The user prefers small focused commits with honest messages.\n", encoding="utf-8")
    (memory / "debugging.md").write_text(
        "---\nname: Debugging notes\ndescription: how the export timeout was found\n"
        "type: project\n---\n\n## Export timeout\n\nThe nightly export hung on unbounded webhook "
        f"retries; capping them at 5 fixed it. The token {SECRET} was rotated.\n",
        encoding="utf-8")
    return project


MCP_MEMORY_FIXTURE = Path(__file__).parent / "fixtures" / "mcp_memory.jsonl"
"""What `@modelcontextprotocol/server-memory` 2026.8.31 wrote for `write_mcp_memory`'s calls."""


async def write_mcp_memory(server: str, path: Path) -> Path:
    """Drive the real reference memory server over stdio so it writes its own file."""
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=server, args=[], env={"MEMORY_FILE_PATH": str(path)})
    async with Client(params, mode="legacy") as client:
        calls: list[tuple[str, dict[str, Any]]] = [
            ("create_entities", {"entities": [
                {"name": "payments-service", "entityType": "service",
                 "observations": ["Retries webhooks up to 5 times", "Owned by the billing team"]},
                {"name": "Alice", "entityType": "person",
                 "observations": [f"Rotated the key {SECRET}"]},
                {"name": "billing", "entityType": "team", "observations": []}]}),
            ("create_relations", {"relations": [
                {"from": "Alice", "to": "payments-service", "relationType": "maintains"},
                {"from": "billing", "to": "payments-service", "relationType": "owns"}]}),
            ("add_observations", {"observations": [
                {"entityName": "payments-service",
                 "contents": ["Nightly export uses gzip level 6"]}]}),
        ]
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)
            assert not result.is_error, result
    return path


def mem0_plugin_export(directory: Path) -> Path:
    """What the mem0 Claude Code plugin's `export` skill writes: `mem0-export-<project>-<date>.md`,
    one `---` front-matter block per memory, then its text and a blank line."""
    blocks = [
        ("3f9b1c2e-6a4d-4b8e-9c1f-2d3e4f5a6b70", "2026-08-18T09:12:44.120391-07:00",
         "architecture_decisions", "0.9", "main", "src/export/queue.ts, src/export/retry.ts",
         "architecture_decisions, infra",
         "The nightly export runs on a BullMQ queue with 5 attempts per job."),
        ("7a0c2d4e-1b3f-4c5d-8e9f-0a1b2c3d4e5f", "2026-08-19T14:03:05Z", "task_learnings", "",
         "feat/webhooks", "", "task_learnings",
         f"Webhook signing uses the shared secret; the old one ({SECRET}) was revoked."),
        ("0e1d2c3b-4a59-4867-9a5b-6c7d8e9f0a1b", "2026-08-20T08:00:00Z", "", "", "", "", "",
         ""),  # a block whose memory text is empty: nothing to import
    ]
    text = "".join(
        f"---\nid: {i}\ncreated_at: {c}\ntype: {t}\nconfidence: {conf}\nbranch: {b}\n"
        f"files: {f}\ncategories: {cats}\n---\n{body}\n\n"
        for i, c, t, conf, b, f, cats, body in blocks)
    path = directory / "mem0-export-acme-api-2026-08-20.md"
    path.write_text(text, encoding="utf-8")
    return path
