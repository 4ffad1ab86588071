"""The CLI as a person runs it: `python -m pma_mcp <command>` in a subprocess, real SQLite.

Stores are filled in-process through MemoryService (fast); every command under test runs as
its own process with PMA_DB_PATH pointing into tmp_path.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import pty
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from pma_mcp.commands import handlers as commands
from pma_mcp.config import Settings
from pma_mcp.core.budget import WordEstimate
from pma_mcp.core.models import MemoryType
from pma_mcp.core.namespaces import GLOBAL_NAMESPACE
from pma_mcp.service import MemoryService
from tests.conftest import PROJECT, FakeClock

ROOT = Path(__file__).resolve().parents[1]

HOUR = 3600.0


# ---------------------------------------------------------------- helpers


@pytest.fixture
def inline(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Give this process the subprocess tests' environment, so `cli_inline` can run
    variants of a command already covered by a subprocess test: scikit-learn, which gc and
    inspect load, costs seconds in every fresh process. The logging set-up `main` does is
    undone afterwards (its handler holds this test's captured stderr)."""
    for key in [k for k in os.environ if k.startswith(("PMA_", "CLAUDE_"))]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        if key.startswith("PMA_"):
            monkeypatch.setenv(key, value)
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def cli_inline(capsys: pytest.CaptureFixture[str], *args: str, code: int = 0) -> str:
    """stdout of `pma-mcp ARGS` run in this process (with the `inline` fixture)."""
    capsys.readouterr()
    assert commands.main(list(args)) == code
    return capsys.readouterr().out


def cli_env(db: Path, home: Path, **extra: str) -> dict[str, str]:
    """The parent's environment without PMA_*/CLAUDE_* settings, plus the test's own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMA_", "CLAUDE_"))}
    home.mkdir(parents=True, exist_ok=True)
    env.update({"PMA_DB_PATH": str(db), "HOME": str(home), "COLUMNS": "160", **extra})
    return env


def cli(
    *args: str,
    env: dict[str, str],
    cwd: Path | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pma_mcp", *args],
        env=env, cwd=cwd, input=stdin, capture_output=True, text=True, check=False,
        timeout=120,
    )


def assert_one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.fixture
def env(db_path: Path, tmp_path: Path) -> dict[str, str]:
    return cli_env(db_path, tmp_path / "home", PMA_NAMESPACE=PROJECT)


async def open_service(db: Path, clock: FakeClock | None = None) -> MemoryService:
    settings = Settings(db_path=db, namespace=PROJECT)
    if clock is None:
        return await MemoryService.open(settings, counter=WordEstimate())
    return await MemoryService.open(settings, clock=clock, counter=WordEstimate())


async def fill_small(db: Path) -> dict[str, str]:
    """Three project memories and one global one; returns their ids by nickname."""
    async with await open_service(db) as service:
        export = await service.add(
            "The nightly export job timed out because retries were unbounded; capped at 5.",
            importance=0.8, tags=["export", "ops"], linked_entities=["nightly-export"])
        wal = await service.add(
            "Use WAL mode and a busy timeout when several processes share one SQLite file.",
            memory_type="semantic", tags=["sqlite"])
        style = await service.add("Release notes are written in the imperative mood.",
                                  memory_type="working", importance=0.4)
        user = await service.add("The user prefers short answers with code first.",
                                 namespace=GLOBAL_NAMESPACE, importance=0.9)
    return {"export": export.memory.id, "wal": wal.memory.id, "style": style.memory.id,
            "user": user.memory.id}


async def export_all(db: Path) -> list[dict[str, Any]]:
    async with await open_service(db) as service:
        doc = await service.export(namespace="*")
    return list(doc["memories"])


def record(i: int, **overrides: Any) -> dict[str, Any]:
    """A valid export record (built directly, no database)."""
    base: dict[str, Any] = {
        "id": uuid.uuid4().hex, "namespace": PROJECT,
        "content": f"Imported note {i}: the build cache lives in .cache/build-{i}.",
        "memory_type": "episodic", "importance": 0.5, "tags": ["imported"],
        "linked_entities": [], "token_count": 10, "access_count": 0,
        "created_at": "2026-01-01T00:00:00+00:00", "accessed_at": "2026-01-01T00:00:00+00:00",
        "metadata": {}, "session_id": None, "superseded_by": None,
    }
    base.update(overrides)
    return base


def write_doc(path: Path, records: Sequence[object]) -> Path:
    path.write_text(json.dumps({"format": "pma-mcp-export", "version": 1,
                                "memories": list(records)}), encoding="utf-8")
    return path


# ------------------------------------------------------------------ stats


async def test_stats_table_and_json(db_path: Path, env: dict[str, str]) -> None:
    await fill_small(db_path)
    human = cli("stats", env=env)
    assert human.returncode == 0, human.stderr
    assert PROJECT in human.stdout
    for tier in ("working", "episodic", "semantic", "archived"):
        assert tier in human.stdout
    data = json.loads(cli("stats", "--json", env=env).stdout)
    assert data["namespace"] == PROJECT and data["total"] == 3
    assert {t: v["count"] for t, v in data["by_tier"].items()} == {
        "working": 1, "episodic": 1, "semantic": 1, "archived": 0}
    other = json.loads(cli("stats", "--json", "--namespace", GLOBAL_NAMESPACE, env=env).stdout)
    assert other["total"] == 1


# ----------------------------------------------------------------- search


async def test_search_ranks_with_breakdown_and_counts_no_access(
    db_path: Path, env: dict[str, str]
) -> None:
    ids = await fill_small(db_path)
    before = await export_all(db_path)
    proc = cli("search", "export retries timed out", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    top = data["results"][0]
    assert top["id"] == ids["export"] and top["rank"] == 1
    assert set(top["breakdown"]) >= {"semantic_similarity", "importance", "recency",
                                     "access_frequency", "composite"}
    assert top["breakdown"]["semantic_similarity"] > 0
    assert top["score"] == pytest.approx(top["breakdown"]["composite"])
    assert await export_all(db_path) == before  # touch=False: no access counted

    table = cli("search", "export retries", "-n", "2", env=env)
    assert table.returncode == 0
    header = table.stdout.splitlines()[0].split()
    assert header == ["#", "id", "kind", "tier", "score", "semantic", "importance", "recency",
                      "access", "author", "content"]
    assert ids["export"][:8] in table.stdout


async def test_search_filters_by_kind_and_edit_relabels_one(
    db_path: Path, env: dict[str, str]
) -> None:
    ids = await fill_small(db_path)  # kinds inferred: note, fact (semantic), note, preference
    proc = cli("search", "WAL export retries release notes", "--kind", "fact", "--json",
               env=env)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)["results"]
    assert [(r["id"], r["kind"]) for r in found] == [(ids["wal"], "fact")]
    table = cli("search", "user prefers short answers", "--kind", "preference", env=env)
    assert ids["user"][:8] in table.stdout and " preference " in table.stdout
    assert ids["export"][:8] not in table.stdout

    wrong = cli("search", "x", "--kind", "rule", env=env)
    assert wrong.returncode == 2 and "fact" in wrong.stderr and wrong.stdout == ""
    edited = cli("edit", ids["export"][:8], "--kind", "decision", env=env)
    assert edited.returncode == 0, edited.stderr
    assert edited.stdout.strip() == f"edited {ids['export']}: kind"
    shown = cli("inspect", ids["export"][:8], env=env).stdout
    assert "decision (what it is; the collector never changes it)" in shown
    assert "episodic (where the collector keeps it now)" in shown


async def test_search_sees_the_global_namespace_and_marks_it(
    db_path: Path, env: dict[str, str]
) -> None:
    ids = await fill_small(db_path)
    proc = cli("search", "user prefers short answers", env=env)
    assert ids["user"][:8] in proc.stdout and "[global]" in proc.stdout


LONG = ("payments-service retries every webhook three times with exponential backoff, then "
        "parks it in the dead-letter queue that the on-call engineer drains each morning")


async def test_piped_search_keeps_every_memorys_whole_text(
    db_path: Path, env: dict[str, str]
) -> None:
    """A pipe is not a terminal: nothing is cut, however narrow COLUMNS says it is."""
    async with await open_service(db_path) as service:
        await service.add(LONG, tags=["payments"])
    for columns in ("40", "160"):
        piped = cli("search", "payments webhook", env={**env, "COLUMNS": columns})
        assert piped.returncode == 0, piped.stderr
        assert LONG in piped.stdout and "…" not in piped.stdout, piped.stdout


async def test_search_on_a_terminal_fits_its_width(db_path: Path, env: dict[str, str]) -> None:
    async with await open_service(db_path) as service:
        await service.add(LONG, tags=["payments"])
    out = on_a_terminal(["search", "payments webhook"], {**env, "COLUMNS": "120"})
    rows = [line for line in out.splitlines() if "payments-service" in line]
    assert rows and all(len(line) <= 120 for line in rows) and rows[0].endswith("…"), out


def on_a_terminal(args: list[str], env: dict[str, str]) -> str:
    """stdout of `pma-mcp ARGS` written to a pseudo-terminal."""
    controller, terminal = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "pma_mcp", *args], env=env, stdin=terminal,
                            stdout=terminal, stderr=subprocess.PIPE)
    os.close(terminal)
    seen = drain(controller)
    assert proc.wait(timeout=120) == 0
    assert proc.stderr is not None
    proc.stderr.close()
    return seen.decode("utf-8").replace("\r\n", "\n")


def drain(controller: int) -> bytes:
    """Everything written to a pseudo-terminal until the child closes it (then closed)."""
    seen = b""
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(controller)
    return seen


def test_help_lists_every_command_and_each_one_answers_its_help(env: dict[str, str]) -> None:
    """Including those the entry point starts itself (ui, hook, serve)."""
    done = cli("--help", env=env)
    assert done.returncode == 0
    listed = [line.split()[0] for line in done.stdout.splitlines()
              if line.startswith("    ") and not line.startswith("     ")]
    assert set(listed) >= {"serve", "hook", "ui", "stats", "search", "inspect", "edit", "gc",
                           "export", "import", "seed", "doctor", "migrate"}, done.stdout
    for command in listed:
        answered = cli(command, "--help", env=env)
        assert answered.returncode == 0, (command, answered.stderr)
        assert "usage" in (answered.stdout + answered.stderr).lower(), command


def test_search_usage_errors_exit_2(env: dict[str, str]) -> None:
    for args in (["search"], ["search", "x", "-n", "0"], ["search", "x", "-n", "many"],
                 ["frobnicate"], []):
        proc = cli(*args, env=env) if args else cli("--no-such-flag", env=env)
        assert proc.returncode == 2, (args, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


# ---------------------------------------------------------------- inspect


def test_inspect_shows_breakdown_gc_decision_and_lineage(
    db_path: Path, env: dict[str, str], inline: None, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = asyncio.run(fill_small(db_path))
    proc = cli("inspect", ids["export"][:8], env=env)
    assert proc.returncode == 0, proc.stderr
    for part in ("score", "composite", "next gc", "why:", "lineage", "created", ids["export"]):
        assert part in proc.stdout

    data = json.loads(cli_inline(capsys, "inspect", ids["export"], "--query", "export",
                                 "--json"))
    assert data["memory"]["id"] == ids["export"] and data["deleted"] is False
    assert data["gc"]["action"] in {"keep", "promote", "demote", "archive", "delete", "merge"}
    assert data["gc"]["reason"]
    assert data["breakdown"]["semantic_similarity"] > 0
    assert data["lineage"][0]["event"] == "created"


async def test_inspect_a_deleted_memory_shows_its_surviving_lineage(
    db_path: Path, env: dict[str, str]
) -> None:
    ids = await fill_small(db_path)
    async with await open_service(db_path) as service:
        await service.delete(ids["style"])
    data = json.loads(cli("inspect", ids["style"], "--json", env=env).stdout)
    assert data["deleted"] is True
    assert [e["event"] for e in data["lineage"]] == ["created", "deleted"]


async def test_inspect_unknown_id_is_one_line_exit_1(db_path: Path, env: dict[str, str]) -> None:
    await fill_small(db_path)
    assert_one_line_error(cli("inspect", "abcdef12", env=env), "abcdef12", "pma-mcp search")
    assert_one_line_error(cli("inspect", "zz", env=env), "memory_id")


# --------------------------------------------------------------------- gc


def test_gc_dry_run_changes_nothing_and_run_applies_the_same_plan(
    db_path: Path, env: dict[str, str], inline: None, capsys: pytest.CaptureFixture[str]
) -> None:
    old = time.time() - 2000 * HOUR  # far from every threshold: same plan a second later
    stamp = {"created_at": old, "accessed_at": old}
    records = [
        record(1, importance=0.05, **stamp),                          # stale, unimportant
        record(2, importance=0.05, memory_type="archived", **stamp),  # archived, worthless
        record(3, importance=0.95, memory_type="semantic",
               created_at=time.time(), accessed_at=time.time()),      # fresh, important
    ]

    async def fill() -> None:
        async with await open_service(db_path) as service:
            await service.import_document({"memories": records})

    asyncio.run(fill())
    before = asyncio.run(export_all(db_path))

    preview = cli("gc", "--dry-run", "--json", env=env)
    assert preview.returncode == 0, preview.stderr
    plan = json.loads(preview.stdout)
    assert plan["applied"] is False and asyncio.run(export_all(db_path)) == before
    planned = {(d["memory_id"], d["action"], d["to_tier"]) for d in plan["decisions"]}
    assert {d["memory_id"] for d in plan["decisions"]} == {r["id"] for r in records}
    assert all(d["reason"] for d in plan["decisions"])
    assert (records[1]["id"], "delete", None) in planned

    # applied in-process (scikit-learn is already loaded here): the same decisions
    run = json.loads(cli_inline(capsys, "gc", "--json"))
    assert run["applied"] is True
    assert {(d["memory_id"], d["action"], d["to_tier"]) for d in run["decisions"]} == planned
    assert run["counts"] == plan["counts"]
    after = {m["id"]: m["memory_type"] for m in asyncio.run(export_all(db_path))}
    for memory_id, action, to_tier in planned:
        assert after.get(memory_id) == to_tier, action


def test_gc_human_output_gives_each_decision_with_its_reason(
    db_path: Path, inline: None, capsys: pytest.CaptureFixture[str]
) -> None:
    old = time.time() - 2000 * HOUR
    worthless = record(1, importance=0.0, memory_type="archived", created_at=old,
                       accessed_at=old)

    async def fill() -> None:
        async with await open_service(db_path) as service:
            await service.import_document({"memories": [worthless]})

    asyncio.run(fill())
    text = cli_inline(capsys, "gc", "--dry-run")
    assert "dry run" in text and "nothing changed" in text
    assert f"delete   {worthless['id'][:8]}" in text and "why: archived and score" in text
    applied = cli_inline(capsys, "gc")
    assert "gc applied" in applied and "1 delete" in applied
    assert "no changes" in cli_inline(capsys, "gc")


# ---------------------------------------------------------- export/import


async def fill_thousand(db: Path) -> None:
    """1,000 memories with every field varied: tiers, labels, metadata, sessions, times,
    access counts, a supersede chain, two namespaces."""
    clock = FakeClock()
    tiers = list(MemoryType)
    async with await open_service(db, clock) as service:
        added = []
        for i in range(1000):
            clock.advance(0.25)
            result = await service.add(
                f"Note {i}: module m{i % 17} talks to service s{i % 11} via queue q{i}.",
                importance=round((i % 10) / 10, 1),
                memory_type=tiers[i % 3],
                tags=[f"t{i % 5}", "bulk"] if i % 4 else [],
                linked_entities=[f"m{i % 17}"] if i % 3 else [],
                metadata={"n": i, "nested": {"ok": i % 2 == 0}, "text": "ünïcødé ✓"}
                if i % 6 == 0 else None,
                session_id=f"session-{i % 7}" if i % 2 else None,
                namespace=GLOBAL_NAMESPACE if i % 25 == 0 else None,
            )
            added.append(result.memory)
        clock.advance(3)
        await service.store.touch(added[::3], clock.now, reason="test")
        await service.store.touch(added[::9], clock.now + 60, reason="test")
        await service.add("Note 5 corrected: queue q5 was renamed.", supersedes=added[5].id)


async def test_thousand_memories_round_trip_losslessly(tmp_path: Path) -> None:
    source, target = tmp_path / "source.db", tmp_path / "target.db"
    await fill_thousand(source)
    home = tmp_path / "home"
    first, second = tmp_path / "first.json", tmp_path / "second.json"

    out = cli("export", "--all", "-o", str(first), env=cli_env(source, home))
    assert out.returncode == 0, out.stderr
    assert "exported 1,001 memories" in out.stderr
    assert first.stat().st_mode & 0o777 == 0o600
    back = cli("import", str(first), env=cli_env(target, home))
    assert back.returncode == 0, back.stderr
    assert "imported 1,001 memories" in back.stdout
    again = cli("export", "--all", "-o", str(second), env=cli_env(target, home))
    assert again.returncode == 0, again.stderr

    a = json.loads(first.read_text(encoding="utf-8"))["memories"]
    b = json.loads(second.read_text(encoding="utf-8"))["memories"]
    assert len(a) == 1001 and a == b
    assert a == json.loads(json.dumps(await export_all(source), default=str))
    assert {m["memory_type"] for m in a} == {"working", "episodic", "semantic", "archived"}
    assert any(m["superseded_by"] for m in a) and any(m["access_count"] >= 2 for m in a)
    assert any(m["metadata"].get("text") == "ünïcødé ✓" for m in a)
    assert {m["namespace"] for m in a} == {PROJECT, GLOBAL_NAMESPACE}


async def test_export_defaults_to_stdout_and_the_resolved_namespace(
    db_path: Path, env: dict[str, str]
) -> None:
    ids = await fill_small(db_path)
    proc = cli("export", env=env)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["format"] == "pma-mcp-export"
    assert {m["id"] for m in doc["memories"]} == {ids["export"], ids["wal"], ids["style"]}
    everything = json.loads(cli("export", "--all", env=env).stdout)
    assert len(everything["memories"]) == 4
    assert cli("export", "--all", "--namespace", "x", env=env).returncode == 2


async def test_import_namespace_override_skip_existing_and_stdin(
    db_path: Path, env: dict[str, str], tmp_path: Path
) -> None:
    doc = write_doc(tmp_path / "in.json", [record(i) for i in range(3)])
    moved = cli("import", str(doc), "--namespace", "/elsewhere", "--json", env=env)
    assert json.loads(moved.stdout) == {"imported": 3, "skipped": 0}
    assert {m["namespace"] for m in await export_all(db_path)} == {"/elsewhere"}

    twice = cli("import", str(doc), "--namespace", "/elsewhere", "--json", env=env)
    assert json.loads(twice.stdout) == {"imported": 0, "skipped": 3}  # all present as they are
    elsewhere = cli("import", str(doc), env=env)  # the same ids in another namespace clash
    assert_one_line_error(elsewhere, "record 1", "--skip-existing")
    skipped = cli("import", "-", "--namespace", "/elsewhere", "--skip-existing", "--json",
                  env=env, stdin=doc.read_text(encoding="utf-8"))
    assert json.loads(skipped.stdout) == {"imported": 0, "skipped": 3}


@pytest.mark.parametrize(
    ("bad", "needles"),
    [
        ({"importance": "high"}, ["record 4", "importance"]),
        ({"memory_type": "cache"}, ["record 4", "memory_type"]),
        ({"created_at": "yesterday"}, ["record 4", "created_at"]),
        ({"content": ""}, ["record 4", "content"]),
        ({"access_count": -1}, ["record 4", "access_count"]),
    ],
)
async def test_a_bad_file_is_refused_naming_record_and_field_and_changes_nothing(
    db_path: Path, env: dict[str, str], tmp_path: Path,
    bad: dict[str, Any], needles: list[str],
) -> None:
    await fill_small(db_path)
    before = await export_all(db_path)
    records = [record(i) for i in range(6)]
    records[3].update(bad)
    proc = cli("import", str(write_doc(tmp_path / "bad.json", records)), env=env)
    assert_one_line_error(proc, *needles)
    assert await export_all(db_path) == before


async def test_a_clash_late_in_the_file_rolls_back_the_records_before_it(
    db_path: Path, env: dict[str, str], tmp_path: Path
) -> None:
    ids = await fill_small(db_path)
    before = await export_all(db_path)
    records = [record(i) for i in range(4)] + [record(9, id=ids["export"])]
    proc = cli("import", str(write_doc(tmp_path / "clash.json", records)), env=env)
    assert_one_line_error(proc, "record 5", ids["export"])
    assert await export_all(db_path) == before


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ('{"memories": [', "not valid JSON"),
        ('{"format": "something-else", "memories": []}', "format"),
        ('{"memories": {"a": 1}}', "memories"),
        ("[1]", "record 1"),
    ],
)
def test_malformed_files_are_refused_in_one_line(
    db_path: Path, env: dict[str, str], tmp_path: Path, content: str, needle: str
) -> None:
    path = tmp_path / "broken.json"
    path.write_text(content, encoding="utf-8")
    assert_one_line_error(cli("import", str(path), env=env), needle)


def test_a_missing_file_is_one_line(env: dict[str, str], tmp_path: Path) -> None:
    assert_one_line_error(cli("import", str(tmp_path / "nope.json"), env=env), "nope.json")


def test_import_progress_bar_only_on_a_terminal(env: dict[str, str], tmp_path: Path) -> None:
    doc = write_doc(tmp_path / "big.json", [record(i) for i in range(600)])
    piped = cli("import", str(doc), env=env)
    assert piped.returncode == 0 and piped.stderr == ""

    env2 = {**env, "PMA_DB_PATH": str(tmp_path / "tty.db")}
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "pma_mcp", "import", str(doc)],
                            env=env2, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    seen = drain(master)
    assert proc.wait() == 0
    assert proc.stdout is not None and b"imported 600 memories" in proc.stdout.read()
    proc.stdout.close()
    text = seen.decode("utf-8")
    assert "importing [" in text and "600/600" in text


# ------------------------------------------------------------------- seed


def make_project(root: Path) -> Path:
    (root / "docs").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "README.md").write_text(
        "# Acme API\n\nThe Acme API serves invoices over HTTP and stores them in Postgres.\n\n"
        "## Running\n\nStart it with `make run`; it listens on port 8080 by default.\n",
        encoding="utf-8")
    (root / "docs" / "ops.md").write_text(
        "# Operations\n\nBackups run nightly at 02:00 UTC and are kept for thirty days.\n",
        encoding="utf-8")
    return root


def test_seed_is_idempotent_and_uses_the_projects_namespace(
    db_path: Path, tmp_path: Path
) -> None:
    project = make_project(tmp_path / "acme")
    env = cli_env(db_path, tmp_path / "home")
    first = cli("seed", str(project), "--json", env=env)
    assert first.returncode == 0, first.stderr
    data = json.loads(first.stdout)
    assert data["namespace"] == str(project.resolve()) and len(data["added"]) >= 3
    assert {a["source"] for a in data["added"]} >= {"README.md", "docs/ops.md"}
    second = cli("seed", env=env, cwd=project)  # PATH defaults to ., same namespace
    assert second.returncode == 0 and "nothing new" in second.stdout
    stats = json.loads(cli("stats", "--json", env=env, cwd=project).stdout)
    assert stats["by_tier"]["semantic"]["count"] == len(data["added"])


def test_seed_a_missing_directory_is_one_line(db_path: Path, tmp_path: Path) -> None:
    env = cli_env(db_path, tmp_path / "home")
    assert_one_line_error(cli("seed", str(tmp_path / "missing"), env=env), "not a directory")


# ----------------------------------------------------------------- doctor


def doctor(env: dict[str, str], cwd: Path) -> tuple[int, dict[str, Any]]:
    proc = cli("doctor", "--json", env=env, cwd=cwd)
    assert "Traceback" not in proc.stderr
    data = json.loads(proc.stdout)
    return proc.returncode, data


def statuses(data: dict[str, Any]) -> dict[str, str]:
    """check → worst status (a check may report twice)."""
    order = ["ok", "info", "warn", "fail"]
    out: dict[str, str] = {}
    for f in data["findings"]:
        prev = out.get(f["check"], "ok")
        out[f["check"]] = max(prev, f["status"], key=order.index)
    return out


async def test_doctor_healthy_store_without_claude_config_warns_but_passes(
    db_path: Path, tmp_path: Path
) -> None:
    await fill_small(db_path)
    project = make_project(tmp_path / "acme")
    code, data = doctor(cli_env(db_path, tmp_path / "home"), project)
    s = statuses(data)
    assert code == 0 and data["healthy"] is True
    for check in ("database", "file mode", "schema", "integrity", "index"):
        assert s[check] == "ok", data
    assert s["mcp server"] == "warn" and s["hooks"] == "warn"
    assert s["tokens"] in {"ok", "warn"}
    namespace = next(f for f in data["findings"] if f["check"] == "namespace")
    assert str(project.resolve()) in namespace["detail"]
    assert all(f["fix"] for f in data["findings"] if f["status"] in {"warn", "fail"})
    human = cli("doctor", env=cli_env(db_path, tmp_path / "home"), cwd=project)
    assert human.returncode == 0 and "healthy" in human.stdout and "fix:" in human.stdout


async def test_doctor_finds_the_server_and_hooks_in_project_settings(
    db_path: Path, tmp_path: Path
) -> None:
    await fill_small(db_path)
    project = make_project(tmp_path / "acme")
    (project / ".mcp.json").write_text(json.dumps(
        {"mcpServers": {"pma": {"command": "uvx", "args": ["pma-mcp"]}}}), encoding="utf-8")
    (project / ".claude").mkdir()
    hooks = {event: [{"hooks": [{"type": "command", "command": f"uvx pma-mcp hook {slug}"}]}]
             for event, slug in [("SessionStart", "session-start"),
                                 ("UserPromptSubmit", "user-prompt-submit"),
                                 ("Stop", "stop")]}
    (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}),
                                                         encoding="utf-8")
    sub = project / "src"
    sub.mkdir()
    env = cli_env(db_path, tmp_path / "home")
    code, data = doctor(env, sub)  # found from a subdirectory too
    s = statuses(data)
    assert code == 0 and s["mcp server"] == "ok"
    hook = next(f for f in data["findings"] if f["check"] == "hooks")
    assert hook["status"] == "warn" and "PreCompact" in hook["detail"]
    assert "SessionStart" not in hook["detail"]
    # the fix is hooks/hooks.json's PreCompact entry (timeout, `|| true`) for a settings file
    snippet = json.loads(hook["fix"].split(": ", 1)[1])
    plugin = json.loads((ROOT / "hooks" / "hooks.json").read_text())["hooks"]
    assert list(snippet["hooks"]) == ["PreCompact"]
    handler = snippet["hooks"]["PreCompact"][0]["hooks"][0]
    assert handler["timeout"] == plugin["PreCompact"][0]["hooks"][0]["timeout"]
    assert handler["command"].endswith(" pre-compact || true")
    # the CLI in src/ would use another namespace than Claude Code started in the root
    assert any(f["check"] == "namespace" and f["status"] == "warn" for f in data["findings"])

    hooks["PreCompact"] = [{"hooks": [{"type": "command", "command": "pma-mcp hook pre-compact"}]}]
    (project / ".claude" / "settings.local.json").write_text(
        json.dumps({"hooks": {"PreCompact": hooks["PreCompact"]}}), encoding="utf-8")
    code, data = doctor(env, project)
    assert statuses(data)["hooks"] == "ok"


def test_doctor_does_not_create_a_missing_store(db_path: Path, tmp_path: Path) -> None:
    project = make_project(tmp_path / "acme")
    code, data = doctor(cli_env(db_path, tmp_path / "home"), project)
    assert code == 0 and not db_path.exists()
    assert "created (mode 0600) on first use" in data["findings"][0]["detail"]


def test_doctor_fails_on_a_file_that_is_not_a_database(db_path: Path, tmp_path: Path) -> None:
    db_path.write_bytes(b"this is not sqlite" * 100)
    db_path.chmod(0o600)
    code, data = doctor(cli_env(db_path, tmp_path / "home"), make_project(tmp_path / "p"))
    assert code == 1 and data["healthy"] is False
    failed = [f for f in data["findings"] if f["status"] == "fail"]
    assert failed and all(f["fix"] for f in failed)


async def test_doctor_fails_on_a_newer_schema_and_a_broken_index(
    db_path: Path, tmp_path: Path
) -> None:
    await fill_small(db_path)
    project = make_project(tmp_path / "p")
    env = cli_env(db_path, tmp_path / "home")
    with sqlite3.connect(db_path) as conn:
        conn.execute("DELETE FROM memory_fts WHERE rowid = (SELECT min(seq) FROM memories)")
    code, data = doctor(env, project)
    assert code == 1 and statuses(data)["index"] == "fail"
    assert "export --all" in next(f["fix"] for f in data["findings"] if f["check"] == "index")

    with sqlite3.connect(db_path) as conn:
        conn.execute("PRAGMA user_version = 99")
    code, data = doctor(env, project)
    assert code == 1 and statuses(data)["schema"] == "fail"


async def test_doctor_warns_about_a_readable_store(db_path: Path, tmp_path: Path) -> None:
    await fill_small(db_path)
    db_path.chmod(0o644)
    code, data = doctor(cli_env(db_path, tmp_path / "home"), make_project(tmp_path / "p"))
    assert code == 0 and statuses(data)["file mode"] == "warn"
    fix = next(f["fix"] for f in data["findings"] if f["check"] == "file mode")
    assert fix.startswith("chmod 600")


def test_doctor_reports_a_bad_setting_as_a_failure(db_path: Path, tmp_path: Path) -> None:
    env = cli_env(db_path, tmp_path / "home", PMA_STORAGE="floppy")
    code, data = doctor(env, tmp_path)
    assert code == 1 and statuses(data) == {"config": "fail"}


# ----------------------------------------------------------------- errors


def test_a_bad_setting_is_one_line_for_every_command(db_path: Path, tmp_path: Path) -> None:
    env = cli_env(db_path, tmp_path / "home", PMA_WEIGHTS="1,1,1,1")
    assert_one_line_error(cli("stats", env=env), "weights must sum to 1")


def test_an_unusable_database_path_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    env = cli_env(blocker / "store.db", tmp_path / "home")
    assert_one_line_error(cli("stats", env=env), "PMA_DB_PATH")


def test_unexpected_errors_are_one_line_with_a_debug_hint(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pma_mcp.commands.handlers import _guarded

    def boom() -> int:
        raise RuntimeError("kaboom")

    assert _guarded(boom) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "kaboom" in err[0] and "PMA_LOG_LEVEL=DEBUG" in err[0]
