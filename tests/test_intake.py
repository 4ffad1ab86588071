"""The intake door through the real processes: a `python -m pma_mcp` stdio server driven by
the SDK client, and the CLI as a subprocess.

A secret given in any stored field (content, tags, linked entities, session id, metadata keys
and values at any depth) comes back redacted from recall, inspect, lineage and export, and is
nowhere in the SQLite file; `remember` and `update` treat `<private>` alike (kept as written:
text stored on purpose), `import --from` drops it (captured conversation); metadata nested
past the documented limit is refused with the limit in the message. The secrets are made up
here, in the shapes of the redactor's token families (core/secret_rules.py).
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, TextContent

from pma_mcp.config import Settings
from pma_mcp.core.validation import MAX_METADATA_DEPTH
from tests.backends import store_env
from tests.test_cli import cli, cli_env

DEADLINE = 60.0
"""Only keeps a broken server from hanging the suite; nothing asserts on timing."""
NAMESPACE = "/home/dev/lighthouse"

OPENAI = "sk-proj-Lantern7Harbor9Quill3Meadow5Cobalt"
GITHUB = "ghp_" + "Tide4Gull8Reef2Kelp6Surf0Dune3Cove5Bay1"
HUGGING = "hf_" + "OrchardPlum4Fig8Quince2Pear6Apple0Lime"
GROQ = "gsk_" + "Saffron1Clove3Anise5Cumin7Mace9Sumac2Dill4"
XAI = "xai-" + "Basalt2Granite4Marble6Slate8Quartz0Onyx3Jade5"
SECRETS = (OPENAI, GITHUB, HUGGING, GROQ, XAI)
PRIVATE = "keep <private>my home address</private> out of recall"


def nested(depth: int) -> dict[str, Any]:
    """Metadata with `depth` objects inside each other, the outer one counted."""
    value: dict[str, Any] = {"leaf": "x"}
    for _ in range(depth - 1):
        value = {"k": value}
    return value


def assert_clean(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret[:8]}… stored in clear"
        assert secret[8:20] not in text, f"a piece of {secret[:8]}… survived"


def store_bytes(settings: Settings) -> str:
    """Everything in the SQLite file and its WAL, as text (empty on PostgreSQL)."""
    if settings.database_url:
        return ""
    files = [settings.db_path, settings.db_path.with_name(settings.db_path.name + "-wal")]
    return "".join(p.read_bytes().decode("latin-1") for p in files if p.exists())


@asynccontextmanager
async def server(settings: Settings) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "pma_mcp"],
        env={**store_env(settings), "PMA_NAMESPACE": NAMESPACE},
    )
    async with Client(params) as client:
        yield client


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> CallToolResult:
    with anyio.fail_after(DEADLINE):
        return await client.call_tool(tool, arguments)


def structured(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    content: dict[str, Any] | None = result.structured_content
    assert content is not None
    return content


def error_text(result: CallToolResult) -> str:
    assert result.is_error
    assert isinstance(result.content[0], TextContent)
    return result.content[0].text


def pma(settings: Settings, tmp_path: Path, *args: str) -> str:
    env = cli_env(settings.db_path, tmp_path / "home", PMA_NAMESPACE=NAMESPACE,
                  **store_env(settings))
    done = cli(*args, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_remember_and_update_store_every_field_redacted(
    store_settings: Settings, tmp_path: Path
) -> None:
    async with server(store_settings) as client:
        stored = structured(await call(client, "remember", {
            "content": f"The lighthouse deploy reads OPENAI_API_KEY={OPENAI}",
            "tags": ["deploy", GITHUB],
            "linked_entities": [f"bot {HUGGING}"],
            "session_id": GROQ,
            "metadata": {"api_key": OPENAI, "env": {XAI: "nested key", "list": [GITHUB]}},
        }))
        memory_id = stored["id"]
        assert stored["tags"] == ["deploy", "[REDACTED:github_token]"]

        edited = structured(await call(client, "update", {
            "memory_id": memory_id,
            "metadata": {"api_key": OPENAI, "deep": {"deeper": {GROQ: [XAI]}}},
            "tags": ["rotated", XAI],
            "linked_entities": [GITHUB],
        }))
        assert edited["changed"] == ["tags", "linked_entities", "metadata"]

        found = structured(await call(client, "recall", {"query": "lighthouse deploy"}))
        assert [r["id"] for r in found["results"]] == [memory_id]
        inspected = structured(await call(client, "inspect", {"memory_id": memory_id}))
        assert [e["event"] for e in inspected["lineage"]][:2] == ["created", "edited"]

    exported = pma(store_settings, tmp_path, "export")
    assert memory_id in exported
    for text in (json.dumps(stored), json.dumps(edited), json.dumps(found),
                 json.dumps(inspected), exported, store_bytes(store_settings)):
        assert_clean(text)
    memory = json.loads(exported)["memories"][0]
    assert memory["content"] == "The lighthouse deploy reads OPENAI_API_KEY=[REDACTED:openai_key]"
    assert memory["tags"] == ["rotated", "[REDACTED:xai_key]"]
    assert memory["session_id"] == "[REDACTED:groq_key]"
    assert memory["metadata"]["deep"]["deeper"] == {"[REDACTED:groq_key]": ["[REDACTED:xai_key]"]}


async def test_remember_and_update_keep_private_blocks_alike(
    store_settings: Settings, tmp_path: Path
) -> None:
    async with server(store_settings) as client:
        remembered = structured(await call(client, "remember", {"content": PRIVATE}))
        shown = structured(await call(client, "inspect", {"memory_id": remembered["id"]}))
        other = structured(await call(client, "remember", {"content": "a second memory"}))
        updated = structured(await call(client, "update", {
            "memory_id": other["id"], "content": PRIVATE.replace("recall", "the prompt")}))
        alone = structured(await call(client, "update", {
            "memory_id": other["id"], "content": "<private>only this</private>"}))
    assert shown["memory"]["content"] == PRIVATE
    assert updated["memory"]["content"] == PRIVATE.replace("recall", "the prompt")
    assert alone["memory"]["content"] == "<private>only this</private>"
    export = json.loads(pma(store_settings, tmp_path, "export"))
    assert sorted(m["content"] for m in export["memories"]) == [
        "<private>only this</private>", PRIVATE]


async def test_metadata_nested_past_the_limit_is_refused_with_the_limit(
    store_settings: Settings, tmp_path: Path
) -> None:
    limit = MAX_METADATA_DEPTH
    async with server(store_settings) as client:
        at_limit = structured(await call(client, "remember", {
            "content": "metadata exactly at the depth limit", "metadata": nested(limit)}))
        for depth in (limit + 1, 150):
            refused = error_text(await call(client, "remember", {
                "content": f"metadata {depth} deep", "metadata": nested(depth)}))
            assert f"at most {limit}" in refused and "metadata" in refused, refused
            refused = error_text(await call(client, "update", {
                "memory_id": at_limit["id"], "metadata": nested(depth)}))
            assert f"at most {limit}" in refused, refused
        # the server is still serving, and nothing was stored or changed
        found = structured(await call(client, "recall", {"query": "metadata deep"}))
    assert [r["id"] for r in found["results"]] == [at_limit["id"]]
    export = json.loads(pma(store_settings, tmp_path, "export"))
    assert [m["metadata"] for m in export["memories"]] == [nested(limit)]

    env = cli_env(store_settings.db_path, tmp_path / "home", PMA_NAMESPACE=NAMESPACE,
                  **store_env(store_settings))
    done = cli("edit", at_limit["id"], "--metadata", json.dumps(nested(limit + 1)), env=env)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"at most {limit}" in done.stderr


def export_file(tmp_path: Path) -> tuple[dict[str, Any], Path]:
    """An export file whose one record carries a secret in every field that holds text."""
    record = {
        "id": "0123456789abcdef0123456789abcdef", "namespace": NAMESPACE,
        "content": f"The harbour job uses {GITHUB}. {PRIVATE}", "memory_type": "semantic",
        "importance": 0.7, "tags": ["harbour", OPENAI], "linked_entities": [HUGGING],
        "token_count": 12, "access_count": 0, "created_at": "2026-01-02T03:04:05+00:00",
        "accessed_at": "2026-01-02T03:04:05+00:00", "session_id": XAI,
        "metadata": {"ci": {"token": GROQ, GITHUB: {"more": [OPENAI]}}},
        "superseded_by": None, "author": "Dev One",
    }
    doc = tmp_path / "in.json"
    doc.write_text(json.dumps({"format": "pma-mcp-export", "version": 1, "memories": [record]}))
    return record, doc


def test_cli_import_of_an_export_redacts_every_field_and_keeps_private(
    store_settings: Settings, tmp_path: Path
) -> None:
    _, doc = export_file(tmp_path)
    pma(store_settings, tmp_path, "import", str(doc))
    out = pma(store_settings, tmp_path, "export")
    assert_clean(out)
    assert_clean(store_bytes(store_settings))
    [imported] = json.loads(out)["memories"]
    assert PRIVATE in imported["content"]
    assert imported["tags"] == ["harbour", "[REDACTED:openai_key]"]
    assert imported["linked_entities"] == ["[REDACTED:huggingface_token]"]
    assert imported["session_id"] == "[REDACTED:xai_key]"
    assert imported["metadata"]["ci"] == {
        "token": "[REDACTED:groq_key]",
        "[REDACTED:github_token]": {"more": ["[REDACTED:openai_key]"]}}


def test_cli_edit_never_repeats_an_old_secret_in_lineage(
    store_settings: Settings, tmp_path: Path
) -> None:
    # Stored in clear on purpose (PMA_REDACT=off), then edited with redaction on: the
    # `edited` lineage line names the removed labels, and must not repeat the secret.
    record, doc = export_file(tmp_path)
    env = cli_env(store_settings.db_path, tmp_path / "home", PMA_NAMESPACE=NAMESPACE,
                  PMA_REDACT="off", **store_env(store_settings))
    done = cli("import", str(doc), env=env)
    assert done.returncode == 0, done.stderr
    assert OPENAI in pma(store_settings, tmp_path, "export")  # redaction off kept it

    pma(store_settings, tmp_path, "edit", record["id"], "--tag", f"fresh {XAI}",
        "--entity", GROQ, "--metadata", json.dumps({"note": f"rotated, was {OPENAI}"}))
    inspected = json.loads(pma(store_settings, tmp_path, "inspect", record["id"], "--json"))
    [edited] = [e for e in inspected["lineage"] if e["event"] == "edited"]
    assert "tags" in edited["reason"] and "[REDACTED:openai_key]" in edited["reason"]
    assert_clean(edited["reason"])
    memory = inspected["memory"]
    assert memory["tags"] == ["fresh [REDACTED:xai_key]"]
    assert_clean(json.dumps([memory["tags"], memory["linked_entities"], memory["metadata"]]))


def test_import_from_another_tool_drops_private_blocks_and_redacts(
    store_settings: Settings, tmp_path: Path
) -> None:
    mem0 = tmp_path / "mem0.json"
    mem0.write_text(json.dumps({"results": [
        {"id": "m-1", "memory": f"Prefers the harbour deploy key {GITHUB}. {PRIVATE}",
         "metadata": {"source": {"token": OPENAI, HUGGING: "key as a key"}},
         "categories": ["deploy"], "created_at": "2026-01-02T03:04:05Z"},
        {"id": "m-2", "memory": "<private>nothing but this</private>", "metadata": {}},
    ]}))
    result = json.loads(pma(store_settings, tmp_path, "import", "--from", "mem0", str(mem0),
                            "--json"))
    assert result["imported"] == 1 and result["skipped"] == 1
    out = pma(store_settings, tmp_path, "export")
    assert_clean(out)
    assert_clean(store_bytes(store_settings))
    [memory] = json.loads(out)["memories"]
    assert "my home address" not in out and "nothing but this" not in out
    assert memory["content"].startswith("Prefers the harbour deploy key [REDACTED:")


@pytest.mark.parametrize("depth", [MAX_METADATA_DEPTH + 1, 5_000])
def test_import_of_deep_metadata_is_one_line_naming_the_limit(
    depth: int, store_settings: Settings, tmp_path: Path
) -> None:
    record = {"id": "0123456789abcdef0123456789abcdef", "content": "deep record",
              "namespace": NAMESPACE,
              "created_at": "2026-01-02T03:04:05+00:00", "token_count": 2}
    doc = tmp_path / "deep.json"
    body = json.dumps({"format": "pma-mcp-export", "version": 1, "memories": [record]})
    deep = '{"k":' * (depth - 1) + '{"leaf": 1}' + "}" * (depth - 1)
    doc.write_text(body.replace('"token_count": 2', f'"token_count": 2, "metadata": {deep}'))
    env = cli_env(store_settings.db_path, tmp_path / "home", PMA_NAMESPACE=NAMESPACE,
                  **store_env(store_settings))
    done = cli("import", str(doc), env=env)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert f"at most {MAX_METADATA_DEPTH}" in done.stderr
    # within what the JSON parser reads, the door names the record; deeper, the file
    assert ("record 1" if depth < 500 else "nested too deep") in done.stderr


def test_import_from_another_tool_keeps_a_deep_record_without_its_metadata(
    store_settings: Settings, tmp_path: Path
) -> None:
    """One odd record must not abort an import: its too-deep metadata is dropped with a note
    naming the record, and every record is stored (the door's own limit never sees it)."""
    mem0 = tmp_path / "mem0.json"
    mem0.write_text(json.dumps({"results": [
        {"id": "m-1", "memory": "A shallow record", "metadata": {"app": "notes"}},
        {"id": "m-2", "memory": "A deep record", "metadata": nested(MAX_METADATA_DEPTH + 5)},
    ]}))
    env = cli_env(store_settings.db_path, tmp_path / "home", PMA_NAMESPACE=NAMESPACE,
                  **store_env(store_settings))
    done = cli("import", "--from", "mem0", str(mem0), env=env)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "'m-2'" in done.stdout and "nested more than" in done.stdout, done.stdout
    stored = {m["content"]: m["metadata"]
              for m in json.loads(pma(store_settings, tmp_path, "export"))["memories"]}
    assert set(stored) == {"A shallow record", "A deep record"}
    assert "mem0_metadata" in stored["A shallow record"]
    assert "mem0_metadata" not in stored["A deep record"]
