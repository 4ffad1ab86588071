"""No secret of the hostile corpus reaches the database, by any way text enters the store.

The corpus (tests/hostile/secrets.jsonl, ~750 synthetic shapes in fourteen classes) goes through
the real Stop hook process with a realistic transcript, `pma-mcp seed` over a project's docs,
`pma-mcp import` of an export file, and the MCP `remember` tool. Afterwards the raw database
file and its WAL are searched for every 8-character piece of every secret, so the FTS index,
lineage and metadata are checked as well as the memory text. Each path also proves the text
arrived whole (an end marker per case is stored), so a truncation cannot pass for redaction.

False positives: this repository's docs must come out of redaction unchanged, and so must the
LoCoMo dev conversations when ../shared/bench holds them.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from pma_mcp.config import Settings
from pma_mcp.core.budget import WordEstimate
from pma_mcp.core.redact import redact
from pma_mcp.server import build_server
from tests.conftest import PROJECT
from tests.hostile import secret_corpus
from tests.test_cli import cli, cli_env
from tests.test_hooks import REPLY, Transcript, assert_quiet, make_hook, stop_input

ROOT = Path(__file__).resolve().parents[1]
LOCOMO = ROOT.parent / "shared" / "bench" / "locomo_dev.json"
CASES = secret_corpus.load()


def block(case: dict[str, str]) -> str:
    return f"Case {case['id']}:\n{case['text']}\nend-of-{case['id']}\n"


def groups(limit: int) -> Iterator[list[dict[str, str]]]:
    """The corpus in consecutive groups whose blocks add up to at most `limit` characters."""
    group: list[dict[str, str]] = []
    size = 0
    for case in CASES:
        if group and size + len(block(case)) > limit:
            yield group
            group, size = [], 0
        group.append(case)
        size += len(block(case)) + 1
    if group:
        yield group


def database_bytes(db: Path) -> bytes:
    return b"".join(p.read_bytes() for p in (db, Path(f"{db}-wal")) if p.exists())


def stored_text(db: Path) -> str:
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT content, metadata FROM memories").fetchall()
    finally:
        conn.close()
    return "\n".join(f"{content}\n{metadata}" for content, metadata in rows)


def assert_no_secret_stored(db: Path) -> None:
    raw = database_bytes(db)
    assert raw, "nothing was written"
    text = stored_text(db)
    missing = [c["id"] for c in CASES if f"end-of-{c['id']}" not in text]
    assert not missing, f"cases not stored whole: {missing[:10]}"
    owner: dict[bytes, str] = {}  # every 8-byte piece of every secret -> its case
    for case in CASES:
        secret = case["secret"].encode()
        for i in range(len(secret) - 7):
            owner.setdefault(secret[i : i + 8], case["id"])
    leaks = sorted({owner[piece] for i in range(len(raw) - 7)
                    if (piece := raw[i : i + 8]) in owner})
    assert not leaks, f"{len(leaks)} secrets reached the database: {leaks[:20]}"


def test_the_corpus_covers_every_class_richly() -> None:
    by_class: dict[str, int] = {}
    for case in CASES:
        by_class[case["class"]] = by_class.get(case["class"], 0) + 1
        assert case["secret"] in case["text"] and len(case["secret"]) >= 8
    assert len(CASES) >= 700
    rich = {"token_format", "value_extent", "mistaken_value", "cli_argument", "config_file",
            "key_block", "key_like"}
    talk = {"csv_export", "yaml_phrase", "messaging_key", "pgpass_line", "base64_inline",
            "prose_password", "cloud_key_pair"}
    assert set(by_class) == rich | talk
    assert min(by_class[k] for k in rich) >= 20
    assert min(by_class[k] for k in talk) >= 5  # several variants of each shape, not one string


def test_stop_hook_stores_no_secret(tmp_path: Path) -> None:
    hook = make_hook(tmp_path)
    for n, group in enumerate(groups(3_400)):
        transcript = Transcript(tmp_path / f"t{n}.jsonl")
        transcript.noise()
        transcript.prompt("The deploy broke again. These are the files and commands I used; "
                          "what is wrong?")
        reply = REPLY + "\n\nHere is what you pasted, checked one by one:\n\n" + "\n".join(
            block(case) for case in group)
        transcript.reply(reply)
        assert_quiet(hook.run("stop", stop_input(transcript.write(), reply)))
    assert_no_secret_stored(hook.db)


def test_seed_stores_no_secret(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "docs").mkdir(parents=True)
    (project / "README.md").write_text("# Acme\n\nThe billing API and its deploy notes.\n")
    sections = [f"## Setup step {n}\n\n" + "\n".join(f"```\n{block(c)}```\n" for c in group)
                for n, group in enumerate(groups(3_000))]
    (project / "docs" / "setup.md").write_text("# Setup\n\n" + "\n".join(sections))
    db = tmp_path / "store.db"

    proc = cli("seed", str(project), env=cli_env(db, tmp_path / "home"))

    assert proc.returncode == 0, proc.stderr
    assert_no_secret_stored(db)


def _record(n: int, content: str) -> dict[str, Any]:
    return {"id": f"{n + 1:032x}", "namespace": PROJECT,
            "content": content, "memory_type": "semantic", "importance": 0.6,
            "tags": ["imported"], "linked_entities": [], "token_count": 40, "access_count": 0,
            "created_at": "2026-09-14T08:30:00+00:00", "accessed_at": "2026-09-14T08:30:00+00:00",
            "metadata": {"note": content}, "session_id": None, "superseded_by": None}


def test_import_stores_no_secret(tmp_path: Path) -> None:
    doc = {"format": "pma-mcp-export", "version": 1, "exported_at": "2026-09-14T08:30:00+00:00",
           "memories": [_record(n, block(case)) for n, case in enumerate(CASES)]}
    path = tmp_path / "export.json"
    path.write_text(json.dumps(doc))
    db = tmp_path / "store.db"

    proc = cli("import", str(path), env=cli_env(db, tmp_path / "home"))

    assert proc.returncode == 0, proc.stderr
    assert_no_secret_stored(db)


async def test_remember_tool_stores_no_secret(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    app = build_server(Settings(db_path=db, namespace=PROJECT), counter=WordEstimate())
    async with Client(app, raise_exceptions=True) as client:
        for group in groups(20_000):
            result = await client.call_tool("remember", {
                "content": "\n".join(block(case) for case in group),
                "metadata": {"pasted": group[0]["text"]},
            })
            assert not result.is_error
    assert_no_secret_stored(db)


# ------------------------------------------------------------------ false positives


def test_repository_docs_lose_nothing() -> None:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    assert len(files) >= 3
    for file in files:
        text = file.read_text("utf-8")
        result = redact(text)
        assert result.count == 0, (file.name, result.kinds)
        assert result.text == text


@pytest.mark.skipif(not LOCOMO.exists(), reason=f"LoCoMo dev split not present at {LOCOMO}")
def test_locomo_dev_conversations_lose_nothing() -> None:
    turns = [
        str(turn.get("text", ""))
        for sample in json.loads(LOCOMO.read_text("utf-8"))
        for key, session in sample["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for turn in session
    ]
    assert len(turns) > 1_000
    changed = [t for t in turns if redact(t).text != t]
    assert changed == []
