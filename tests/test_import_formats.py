"""Importers follow the formats their tools write today, as the CLI (a subprocess) runs them.

mem0's Claude Code plugin export (`mem0-export-*.md`), Claude Code rules scoped by `paths:`
front matter and the auto-memory `MEMORY.md` index, and a `pma-mcp export` file imported twice
(into another store and back into its own): the second time is a no-op success.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from tests import import_sources as src
from tests.test_import import NAMESPACE, env_for, imported, pma, stored


async def test_mem0_plugin_export_markdown(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    path = src.mem0_plugin_export(tmp_path)

    first = imported(env, "--from", "mem0", str(path))
    assert first["imported"] == 2, first
    again = imported(env, "--from", "mem0", str(path))
    assert again["imported"] == 0 and again["skipped"] == 2

    memories = {m.metadata["mem0_id"]: m for m in await stored(env)}
    queue = memories["3f9b1c2e-6a4d-4b8e-9c1f-2d3e4f5a6b70"]
    assert queue.content == "The nightly export runs on a BullMQ queue with 5 attempts per job."
    assert {"mem0", "architecture_decisions", "infra"} <= set(queue.tags)
    assert queue.linked_entities == ["src/export/queue.ts", "src/export/retry.ts"]
    assert queue.metadata["mem0_metadata"] == {"type": "architecture_decisions",
                                               "confidence": "0.9", "branch": "main"}
    assert queue.created_at == datetime(2026, 8, 18, 16, 12, 44, 120391, tzinfo=UTC)
    webhook = memories["7a0c2d4e-1b3f-4c5d-8e9f-0a1b2c3d4e5f"]
    assert src.SECRET not in webhook.content and "[REDACTED" in webhook.content
    assert webhook.metadata["mem0_metadata"]["branch"] == "feat/webhooks"


def test_a_markdown_file_without_blocks_is_a_clear_format_error(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    path = tmp_path / "mem0-export-empty-2026-08-20.md"
    path.write_text("---\nid: x\ntype: note\n---\n\n", encoding="utf-8")
    done = pma(env, "import", "--from", "mem0", str(path))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "mem0-export" in done.stderr and "no `---` blocks" in done.stderr


async def test_claude_code_keeps_paths_scoping_and_skips_the_memory_index(
    tmp_path: Path
) -> None:
    env = env_for(tmp_path)
    project = src.claude_code_project(tmp_path, Path(env["CLAUDE_CONFIG_DIR"]))
    rules = project / ".claude" / "rules"
    (rules / "flow.md").write_text('---\npaths: ["docs/**/*.md", "README.md"]\n---\n\n'
                                   "# Docs rules\n\nEvery doc names the command it describes.\n")
    (rules / "line.md").write_text("---\npaths: migrations/*.sql, seeds/*.sql\n---\n\n"
                                   "# Migration rules\n\nA migration never drops a column "
                                   "in the same release that stops writing it.\n")

    result = imported(env, "--from", "claude-code", str(project), "--namespace", NAMESPACE)
    memories = await stored(env)
    assert result["imported"] == 7, [m.content[:40] for m in memories]
    assert not [m for m in memories if "Memory index" in m.content or "](debugging.md)" in
                m.content]
    api = next(m for m in memories if "validates its input" in m.content)
    assert {"paths:src/api/**/*.ts", "paths:src/routes/*.ts", "rules"} <= set(api.tags)
    assert api.metadata["paths"] == ["src/api/**/*.ts", "src/routes/*.ts"]
    docs = next(m for m in memories if "names the command" in m.content)
    assert {"paths:docs/**/*.md", "paths:README.md"} <= set(docs.tags)
    line = next(m for m in memories if "never drops a column" in m.content)
    assert {"paths:migrations/*.sql", "paths:seeds/*.sql"} <= set(line.tags)
    unscoped = next(m for m in memories if "reversible" in m.content)
    assert not [t for t in unscoped.tags if t.startswith("paths:")]

    # the memory folder given directly: the index is skipped there too
    folder = Path(env["CLAUDE_CONFIG_DIR"]) / "projects"
    [memory_dir] = list(folder.glob("*/memory"))
    env2 = fresh(tmp_path / "second")
    assert imported(env2, "--from", "claude-code", str(memory_dir))["imported"] == 1


def fresh(path: Path) -> dict[str, str]:
    path.mkdir()
    return env_for(path)


def test_importing_the_same_export_twice_is_a_no_op_success(tmp_path: Path) -> None:
    a = fresh(tmp_path / "a")
    imported(a, "--from", "claude-mem", str(src.claude_mem_db(tmp_path / "claude-mem.db")))
    exported = pma(a, "export", "--all")
    assert exported.returncode == 0, exported.stderr
    doc = tmp_path / "export.json"
    doc.write_text(exported.stdout, encoding="utf-8")
    count = len(json.loads(exported.stdout)["memories"])
    assert count == 6

    b = fresh(tmp_path / "b")
    assert imported(b, str(doc)) == {"imported": count, "skipped": 0}
    before = json.loads(pma(b, "export", "--all").stdout)["memories"]
    for env in (b, a):  # again into the copy, and back into the store it came from
        assert imported(env, str(doc)) == {"imported": 0, "skipped": count}
        plain = pma(env, "import", str(doc))
        assert plain.returncode == 0 and f"{count} skipped: already stored" in plain.stdout
    assert json.loads(pma(b, "export", "--all").stdout)["memories"] == before

    # a record whose id is stored with other content is still refused, and nothing changes
    data = json.loads(doc.read_text(encoding="utf-8"))
    data["memories"][0]["content"] = "A different text under the same id."
    doc.write_text(json.dumps(data), encoding="utf-8")
    done = pma(b, "import", str(doc))
    assert done.returncode == 1 and "record 1" in done.stderr and "--skip-existing" in done.stderr
    assert json.loads(pma(b, "export", "--all").stdout)["memories"] == before


async def test_a_claude_mem_item_with_metadata_too_deep_keeps_its_text(tmp_path: Path) -> None:
    """v13 `memory_items.metadata` nested past our limit is dropped, not the import."""
    db = src.claude_mem_db(tmp_path / "claude-mem.db")
    deep = '{"k":' * 40 + "1" + "}" * 40
    conn = sqlite3.connect(db)
    conn.execute("UPDATE memory_items SET metadata = ? WHERE id = 'mi-queue'", (deep,))
    conn.commit()
    conn.close()
    env = env_for(tmp_path)
    assert imported(env, "--from", "claude-mem", str(db))["imported"] == 6
    queue = next(m for m in await stored(env) if "BullMQ" in m.content)
    assert "claude_mem_metadata" not in queue.metadata and queue.metadata["record"] == "memory_item"
