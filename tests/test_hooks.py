"""Claude Code hooks as Claude Code runs them: a fresh process, JSON on stdin, a real store
(a SQLite file, or a PostgreSQL schema: each test runs on both backends) and transcript JSONL
on disk (shapes from INTEGRATION.md §1.2 and §2).

The helpers here are shared by the other test_hooks_* modules.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import InitVar, dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from pma_mcp.config import Settings
from pma_mcp.core.budget import WordEstimate
from pma_mcp.core.namespaces import GLOBAL_NAMESPACE
from pma_mcp.hooks import handlers as hooks
from pma_mcp.service import MemoryService
from tests.backends import injected_ids, lineage_events, store_env, stored_rows

REPO = Path(__file__).resolve().parents[1]
PROJECT = "/home/dev/acme-api"
SESSION = "7d3f2b10-5c6e-4e2a-8f41-9b0c1d2e3f40"
AUTHOR = "dev@acme.test"
"""PMA_AUTHOR of the hooks on a backend-parametrised store: on a shared database the global
namespace is the author's own (Settings.global_namespace), and the seed must name the same."""
REPLY = (
    "The export timed out because retries were unbounded (export.retries = -1), so one failing "
    "upload never ended. I capped them at 5 with jitter in config/jobs.toml and added a test."
)


# ------------------------------------------------------------------ helpers


@dataclass
class Hook:
    """Runs `pma-mcp hook <event>` against one store, as Claude Code would."""

    db: Path
    env: dict[str, str]
    store: InitVar[Settings | None] = None
    """The store the hook's env names (store_settings); None: the SQLite file `db`."""
    settings: Settings = field(init=False)

    def __post_init__(self, store: Settings | None) -> None:
        self.settings = store or Settings(db_path=self.db, namespace=PROJECT)

    def run(
        self,
        event: str,
        payload: Mapping[str, Any] | bytes | str,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        if isinstance(payload, bytes):
            data = payload
        elif isinstance(payload, str):
            data = payload.encode()
        else:
            data = json.dumps(payload).encode()
        return subprocess.run(
            [sys.executable, "-m", "pma_mcp", "hook", event],
            input=data, capture_output=True, env={**self.env, **(env or {})},
            cwd=cwd or REPO, timeout=120, check=False,
        )

    def context(self, event: str, payload: Mapping[str, Any], **kw: Any) -> str | None:
        """additionalContext of a context hook (None when it printed nothing)."""
        proc = self.run(event, payload, **kw)
        assert proc.returncode == 0, proc.stderr
        if not proc.stdout.strip():
            return None
        out = json.loads(proc.stdout)
        assert set(out) == {"hookSpecificOutput"}
        inner = out["hookSpecificOutput"]
        assert inner["hookEventName"] == {"user-prompt-submit": "UserPromptSubmit",
                                          "session-start": "SessionStart"}[event]
        text = inner["additionalContext"]
        assert isinstance(text, str) and 0 < len(text) <= 10_000
        return text

    def rows(self) -> list[dict[str, Any]]:
        """Every stored memory (all namespaces) in seq order, read through the store."""
        return stored_rows(self.settings)

    def lineage(self) -> list[tuple[str, str]]:
        """(memory_id, event) of every lineage row, oldest first."""
        return lineage_events(self.settings)

    def left_no_store(self) -> bool:
        """A hook with nothing to store left nothing behind: on SQLite not even the file (no
        stray store in a user's home); on PostgreSQL, where opening the configured database
        migrates its schema, no memory — and no SQLite file beside it either."""
        if self.db.exists():
            return False
        return not self.settings.database_url or not self.rows()


def hook_env(db: Path, home: Path, settings: Settings | None = None) -> dict[str, str]:
    """The parent environment minus every PMA_/CLAUDE_ setting, pointed at `db` (or at
    `settings`' store: the SQLite file or the PostgreSQL schema)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMA_", "CLAUDE_"))
           or k == "PMA_RUNTIME_DIR"}  # this test's hooks' sockets (conftest.hook_sockets)
    env.update({"PMA_DB_PATH": str(db), "HOME": str(home), "TIKTOKEN_CACHE_DIR": ""})
    if settings is not None:
        env.update(store_env(settings))
    return env


def assert_quiet(proc: subprocess.CompletedProcess[bytes]) -> None:
    """Exit 0, nothing on stdout, at most one line on stderr."""
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b""
    assert len(proc.stderr.decode(errors="replace").strip().splitlines()) <= 1, proc.stderr


class Transcript:
    """Transcript JSONL with the line types of a real session (INTEGRATION.md §2)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines: list[str] = []
        self.n = 0
        self.parent: str | None = None

    def _line(self, kind: str, **fields: Any) -> str:
        self.n += 1
        uuid = f"11111111-2222-4333-8444-{self.n:012d}"
        entry = {"parentUuid": self.parent, "isSidechain": False, "userType": "external",
                 "cwd": PROJECT, "sessionId": SESSION, "version": "2.1.250",
                 "gitBranch": "main", "type": kind, "uuid": uuid,
                 "timestamp": f"2026-09-14T08:30:{self.n % 60:02d}.000Z", **fields}
        self.parent = uuid
        self.lines.append(json.dumps(entry))
        return uuid

    def noise(self) -> Transcript:
        self.lines.append(json.dumps({"type": "file-history-snapshot", "messageId": "m",
                                      "snapshot": {"trackedFileBackups": {}},
                                      "isSnapshotUpdate": False}))
        self._line("progress", data={"type": "hook_progress", "hookEvent": "SessionStart"})
        self.lines.append(json.dumps({"type": "some-future-line-type", "payload": [1, 2]}))
        return self

    def prompt(self, text: str) -> str:
        return self._line("user", message={"role": "user", "content": text},
                          permissionMode="default")

    def reply(self, text: str, *, with_tool: bool = True, interim: str = "") -> None:
        msg = {"model": "claude-sonnet-4-5", "id": f"msg_{self.n}", "type": "message",
               "role": "assistant", "stop_reason": None, "usage": {"output_tokens": 9}}
        self._line("assistant", message={**msg, "content": [
            {"type": "thinking", "thinking": "check the config", "signature": "c2ln"}]})
        if interim:
            self._line("assistant", message={**msg, "content": [
                {"type": "text", "text": interim}]})
        if with_tool:
            self._line("assistant", message={**msg, "content": [
                {"type": "tool_use", "id": f"toolu_{self.n}", "name": "Bash",
                 "input": {"command": "grep -n export config/jobs.toml"}}]})
            self._line("user", message={"role": "user", "content": [
                {"tool_use_id": f"toolu_{self.n - 1}", "type": "tool_result",
                 "content": "13:export.retries = -1", "is_error": False}]},
                toolUseResult={"stdout": "13:export.retries = -1", "stderr": ""})
        self._line("assistant", message={**msg, "id": f"msg_{self.n}b",
                                         "content": [{"type": "text", "text": text}]})

    def exchange(self, prompt: str, reply: str) -> str:
        uuid = self.prompt(prompt)
        self.reply(reply)
        return uuid

    def write(self, *, partial_tail: bool = False) -> Path:
        text = "\n".join(self.lines) + "\n"
        if partial_tail:
            text += '{"parentUuid":"x","isSidechain":false,"type":"assis'
        self.path.write_text(text)
        return self.path


def stop_input(transcript: Path | str, message: str = REPLY, **extra: Any) -> dict[str, Any]:
    return {"session_id": SESSION, "transcript_path": str(transcript), "cwd": PROJECT,
            "permission_mode": "default", "hook_event_name": "Stop", "stop_hook_active": False,
            "last_assistant_message": message, "background_tasks": [], "session_crons": [],
            **extra}


def prompt_input(prompt: str, session: str = SESSION, cwd: str = PROJECT) -> dict[str, Any]:
    return {"session_id": session, "transcript_path": f"/tmp/{session}.jsonl", "cwd": cwd,
            "permission_mode": "default", "hook_event_name": "UserPromptSubmit",
            "prompt": prompt, "prompt_id": "p-1"}


BACKGROUND = [
    "Set up the Python virtualenv with uv sync before running anything.",
    "The login page shows a spinner forever when the OAuth callback fails.",
    "We moved the docs site from Sphinx to MkDocs Material.",
    "Use the staging database for load tests, never production.",
    "Sentry alerts for the payments service go to the on-call rotation.",
    "The CSV importer chokes on Windows line endings; normalise them first.",
    "Dark mode colours live in theme.css under the :root selector.",
    "The mobile app caches the feature flags for one hour.",
    "Renamed the invoices table to billing_invoices in migration 0042.",
    "Webpack was replaced by Vite; the dev server starts in under a second.",
    "Redis is only used for rate limiting and session storage.",
    "Our REST API versioning uses a v2 prefix in the URL path.",
    "The nightly backup writes to the S3 bucket acme-backups in eu-west-1.",
    "Type checking runs with mypy in strict mode in CI.",
    "The search page debounces keystrokes by 300 milliseconds.",
    "Customer emails are rendered with MJML templates.",
    "The GraphQL gateway batches resolver calls with DataLoader.",
    "Password reset links expire after 30 minutes.",
    "The admin dashboard requires the staff role.",
    "Release notes are generated from conventional commit messages.",
]
"""Another project's memories: they make term statistics realistic (a word in every memory
of a five-memory store has no weight) and must never show up in this project's context."""


async def seed(
    store: Path | Settings, items: list[tuple[str, dict[str, Any]]], *,
    background: bool = True, age_days: float = 0.0,
) -> list[str]:
    """Store memories through the service in the SQLite file or `Settings`' store (the real
    clock, as the hooks use wall time; `age_days` back, so the memories are that old)."""
    settings = (Settings(db_path=store, namespace=PROJECT) if isinstance(store, Path)
                else replace(store, namespace=PROJECT))
    clock = (lambda: time.time() - age_days * 86_400.0) if age_days else time.time
    async with await MemoryService.open(
        settings, counter=WordEstimate(), merge_near_duplicates=False, clock=clock
    ) as service:
        if background:
            for text in BACKGROUND:
                await service.add(text, namespace="/home/dev/other-project")
        return [(await service.add(content, **_global_is_personal(kw, settings))).memory.id
                for content, kw in items]


def _global_is_personal(kw: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """A seed item "in the global namespace" lands in this person's (`default/<author>` on
    PostgreSQL, `default` on SQLite), where the hooks read their global rules."""
    if kw.get("namespace") == GLOBAL_NAMESPACE:
        return {**kw, "namespace": settings.global_namespace}
    return kw


def make_hook(tmp_path: Path, settings: Settings | None = None) -> Hook:
    """A hook on `settings`' store (store_settings: each backend), else a SQLite file."""
    if settings is None:
        db = tmp_path / "store.db"
        return Hook(db=db, env=hook_env(db, tmp_path))
    settings = replace(settings, author=AUTHOR)
    env = {**hook_env(settings.db_path, tmp_path, settings), "PMA_AUTHOR": AUTHOR}
    return Hook(db=settings.db_path, env=env, store=settings)


@pytest.fixture
def settings(store_settings: Settings) -> Settings:
    """The in-process tests here (the `service` fixture) run on each backend too."""
    return store_settings


@pytest.fixture
def hook(tmp_path: Path, store_settings: Settings) -> Hook:
    """Runs every test that takes it on each backend (tests/backends.py)."""
    return make_hook(tmp_path, store_settings)


@pytest.fixture
def transcript(tmp_path: Path) -> Transcript:
    return Transcript(tmp_path / f"{SESSION}.jsonl")


# --------------------------------------------------------------------- stop


def test_stop_saves_the_last_exchange_and_prints_nothing(
    hook: Hook, transcript: Transcript
) -> None:
    transcript.noise()
    transcript.exchange("How do I run the tests?", "Run `uv run pytest` from the root. " * 5)
    uuid = transcript.prompt("Why does the nightly export job time out?")
    transcript.reply("Looking at the job settings first.")
    path = transcript.write(partial_tail=True)  # the final reply is not in the file yet

    assert_quiet(hook.run("stop", stop_input(path)))

    (row,) = hook.rows()
    said = f"User: Why does the nightly export job time out?\nAssistant: {REPLY}"
    assert row["content"] == (  # the digest of its one tool call sits between the two
        "User: Why does the nightly export job time out?\n"
        "Ran: `grep -n export config/jobs.toml` passed: 13:export.retries = -1\n"
        f"Tools: Bash\nAssistant: {REPLY}")
    assert (row["namespace"], row["memory_type"], row["session_id"]) == (
        PROJECT, "episodic", SESSION)
    assert row["tags"] == ["session", "auto-saved", "tool:bash"]
    assert row["metadata"] == {"source": "hook:stop", "prompt_uuid": uuid}
    # 0.5 + 0.1 ("failing": a problem) + 0.1 ("never": rule-style wording); the digest of a
    # passing command adds nothing
    assert row["importance"] == hooks.importance_of(said) == 0.7


def test_stop_without_a_transcript_saves_the_reply_alone(hook: Hook, tmp_path: Path) -> None:
    assert_quiet(hook.run("stop", stop_input(tmp_path / "not-written-yet.jsonl")))
    (row,) = hook.rows()
    assert row["content"] == f"Assistant: {REPLY}"


def test_stop_skips_short_replies(hook: Hook, transcript: Transcript) -> None:
    path = transcript.write()
    assert_quiet(hook.run("stop", stop_input(path, "Done — tests pass.")))
    assert_quiet(hook.run("stop", stop_input(path, "x" * 119)))
    assert hook.rows() == []


def test_stop_does_not_count_or_reinforce_an_exact_duplicate(
    hook: Hook, transcript: Transcript
) -> None:
    transcript.exchange("Why does the nightly export job time out?", REPLY)
    path = transcript.write()
    for _ in range(3):
        assert_quiet(hook.run("stop", stop_input(path)))
    (row,) = hook.rows()
    assert row["access_count"] == 0
    assert hook.lineage() == [(row["id"], "created")]


def test_stop_strips_private_blocks(hook: Hook, transcript: Transcript) -> None:
    transcript.prompt("Deploy it <private>my home address is 12 Elm St</private> please")
    path = transcript.write()
    reply = REPLY + " <private>The staging box is under my desk.</private> Nothing else changed."
    assert_quiet(hook.run("stop", stop_input(path, reply)))
    (row,) = hook.rows()
    assert "Elm St" not in row["content"] and "under my desk" not in row["content"]
    assert "Nothing else changed." in row["content"] and "Deploy it" in row["content"]


def test_stop_with_only_private_content_saves_nothing(hook: Hook, tmp_path: Path) -> None:
    message = f"<private>{REPLY}</private> ok"
    assert_quiet(hook.run("stop", stop_input(tmp_path / "t.jsonl", message)))
    assert hook.rows() == []


def test_autosave_off_writes_nothing(hook: Hook, transcript: Transcript) -> None:
    transcript.exchange("Why does the nightly export job time out?", REPLY)
    path = transcript.write()
    for event, payload in (("stop", stop_input(path)),
                           ("pre-compact", {"session_id": SESSION, "transcript_path": str(path),
                                            "cwd": PROJECT, "trigger": "manual"})):
        assert_quiet(hook.run(event, payload, env={"PMA_AUTOSAVE": "0"}))
    assert hook.left_no_store()


def test_stop_runs_a_bounded_gc_share_past_the_threshold(hook: Hook, tmp_path: Path) -> None:
    stale = [(f"Note {i}: the billing cron ran on shard {i}.", {"importance": 0.0,
                                                               "memory_type": "working"})
             for i in range(85)]
    import asyncio

    # 30 days old and idle: the GC archives them
    ids = asyncio.run(seed(hook.settings, stale, background=False, age_days=30))

    assert_quiet(hook.run("stop", stop_input(tmp_path / "none.jsonl")))

    tiers = {r["id"]: r["memory_type"] for r in hook.rows()}
    assert len(tiers) == 86
    assert sum(tiers[i] != "working" for i in ids) == 85  # every stale memory moved down
    gc_events = [e for _, e in hook.lineage() if e in ("demote", "archive", "delete")]
    assert len(gc_events) >= 85


def test_stop_gc_share_looks_at_no_more_than_its_bound(
    hook: Hook, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    stale = [(f"Old note {i} about shard {i}.", {"importance": 0.0, "memory_type": "working"})
             for i in range(hooks.GC_SHARE + 40)]
    asyncio.run(seed(hook.settings, stale, background=False, age_days=30))
    assert_quiet(hook.run("stop", stop_input(tmp_path / "none.jsonl")))
    changed = {m for m, e in hook.lineage() if e in ("demote", "archive", "delete")}
    assert 0 < len(changed) <= hooks.GC_SHARE


# --------------------------------------------------------------- pre-compact


def test_pre_compact_catches_up_every_exchange_once(hook: Hook, transcript: Transcript) -> None:
    answers = [f"{REPLY} Variant {i} of the answer, about shard {i}." for i in range(3)]
    transcript.noise()
    transcript.exchange("Question 0 about the export job?", answers[0])
    transcript.prompt("Question 1 about the export job?")
    transcript.reply(answers[1], interim="Let me look at the job settings.")
    # The Stop hook saved exchange 1 from its final message (the transcript also holds the
    # interim text, so only the prompt's uuid tells that it is the same exchange).
    assert_quiet(hook.run("stop", stop_input(transcript.write(), answers[1])))
    transcript.exchange("Question 2 about the export job?", answers[2])
    transcript.prompt("<command-name>/compact</command-name>")
    path = transcript.write(partial_tail=True)

    payload = {"session_id": SESSION, "transcript_path": str(path), "cwd": PROJECT,
               "hook_event_name": "PreCompact", "trigger": "manual", "custom_instructions": ""}
    for _ in range(2):
        assert_quiet(hook.run("pre-compact", payload))

    rows = hook.rows()
    assert sorted(r["content"].split("\n")[0] for r in rows) == [
        f"User: Question {i} about the export job?" for i in range(3)]
    assert [r["metadata"]["source"] for r in rows] == [
        "hook:stop", "hook:pre-compact", "hook:pre-compact"]
    assert all(r["access_count"] == 0 for r in rows)


def test_auto_compaction_leaves_the_running_exchange_to_stop(
    hook: Hook, transcript: Transcript
) -> None:
    transcript.exchange("First question about the export job?", REPLY)
    transcript.exchange("Second question, still running?", REPLY + " More to come.")
    path = transcript.write()
    payload = {"session_id": SESSION, "transcript_path": str(path), "cwd": PROJECT,
               "hook_event_name": "PreCompact", "trigger": "auto", "custom_instructions": ""}
    assert_quiet(hook.run("pre-compact", payload))
    (row,) = hook.rows()
    assert row["content"].startswith("User: First question")


def test_pre_compact_with_a_missing_transcript_is_quiet(hook: Hook, tmp_path: Path) -> None:
    payload = {"session_id": SESSION, "transcript_path": str(tmp_path / "gone.jsonl"),
               "cwd": PROJECT, "trigger": "manual"}
    assert_quiet(hook.run("pre-compact", payload))
    assert hook.rows() == []


# -------------------------------------------------------- user-prompt-submit

EXPORT_FACT = ("The nightly export job timed out because retries were unbounded; we capped "
               "export retries at 5 with jitter.")
UNRELATED: list[tuple[str, dict[str, Any]]] = [
    ("Always write commit messages in the imperative mood.", {"importance": 1.0,
                                                              "memory_type": "working"}),
    ("The office coffee machine needs descaling every Friday.", {"importance": 0.95}),
    ("Frontend uses Tailwind with a custom purple palette.", {"importance": 0.9,
                                                              "memory_type": "semantic"}),
]


async def test_prompt_injects_relevant_memories_in_a_compact_block(hook: Hook) -> None:
    await seed(hook.settings, [(EXPORT_FACT, {"importance": 0.7, "memory_type": "semantic"}),
                         *UNRELATED])
    text = hook.context("user-prompt-submit",
                        prompt_input("Why did the nightly export job time out last week?"))
    assert text is not None
    lines = text.splitlines()
    assert "not instructions" in lines[0]
    assert len(lines) == 2  # only the relevant memory, however important the others are
    assert lines[1].startswith("- [fact · importance 0.70 · ")  # kind inferred: semantic tier
    assert lines[1].endswith(EXPORT_FACT)
    assert time.strftime("%Y-%m-%d", time.gmtime()) in lines[1]


@pytest.mark.sqlite_only  # holds SQLite's write lock with a connection of its own
async def test_prompt_context_survives_another_process_holding_the_write_lock(
    hook: Hook,
) -> None:
    """A long write elsewhere (an import, a GC) must not cost the prompt its context: the
    hook waits about a second for its bookkeeping write, then injects anyway."""
    await seed(hook.settings, [(EXPORT_FACT, {"importance": 0.7})])
    blocker = sqlite3.connect(hook.db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        text = hook.context("user-prompt-submit",
                            prompt_input("Why did the nightly export job time out?"))
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert text is not None and EXPORT_FACT in text


async def test_prompt_prints_nothing_when_nothing_is_relevant(hook: Hook) -> None:
    await seed(hook.settings, UNRELATED)
    proc = hook.run("user-prompt-submit",
                    prompt_input("How do I rotate the Kubernetes ingress certificate?"))
    assert_quiet(proc)


@pytest.mark.parametrize("prompt", ["ok", "thanks!", "Thank you", "go on", "/compact",
                                    "/memory export", "  ", "y", "continue please"])
async def test_trivial_prompts_inject_nothing(hook: Hook, prompt: str) -> None:
    await seed(hook.settings, [(f"Note about {prompt} and the export job retries.", {})])
    assert_quiet(hook.run("user-prompt-submit", prompt_input(prompt)))


async def test_prompt_merges_project_and_global_without_duplicates(hook: Hook) -> None:
    rule = "Rule: export jobs must log their retry count at INFO level."
    await seed(hook.settings, [
        (EXPORT_FACT, {}),
        (rule, {}),  # the same text in the project ...
        (rule, {"namespace": GLOBAL_NAMESPACE}),  # ... and the global namespace
        ("Global rule: export job alerts go to the #ops channel.",
         {"namespace": GLOBAL_NAMESPACE}),
        ("Other project: the export job of billing-web uses cron.",
         {"namespace": "/home/dev/billing-web"}),
    ])
    text = hook.context("user-prompt-submit",
                        prompt_input("What do we know about the export job retries and alerts?"))
    assert text is not None
    assert text.count(rule) == 1
    assert EXPORT_FACT in text
    assert "#ops channel" in text
    (global_line,) = [line for line in text.splitlines() if "#ops" in line]
    assert "· global ·" in global_line
    assert "billing-web" not in text


async def test_prompt_does_not_repeat_a_memory_until_the_session_is_compacted(
    hook: Hook
) -> None:
    # Session start fills its 2,000 tokens exactly with important notes (WordEstimate: 192
    # words → 250 tokens), so the export fact only ever reaches the context through prompts.
    filler = [(f"Onboarding note {i}: " + " ".join(["welcome"] * 189), {"importance": 1.0})
              for i in range(8)]
    await seed(hook.settings, [(EXPORT_FACT, {"importance": 0.0}), *filler])
    ask = prompt_input("Why did the nightly export job time out?")
    assert EXPORT_FACT in (hook.context("user-prompt-submit", ask) or "")
    assert_quiet(hook.run("user-prompt-submit", ask))
    assert_quiet(hook.run("user-prompt-submit",
                          prompt_input("Remind me why the export job timed out")))
    # Another session has its own record.
    assert hook.context("user-prompt-submit", prompt_input(ask["prompt"], session="s-2"))
    # A resumed session keeps its record; a compacted or cleared one starts afresh.
    start = {"session_id": SESSION, "transcript_path": "/tmp/x.jsonl", "cwd": PROJECT,
             "hook_event_name": "SessionStart"}
    assert EXPORT_FACT not in (hook.context("session-start", {**start, "source": "resume"})
                               or "")
    assert_quiet(hook.run("user-prompt-submit", ask))
    for source in ("compact", "clear"):
        loaded = hook.context("session-start", {**start, "source": source})
        assert loaded is not None and EXPORT_FACT not in loaded
        assert EXPORT_FACT in (hook.context("user-prompt-submit", ask) or "")
        assert_quiet(hook.run("user-prompt-submit", ask))


async def test_prompt_counts_an_access_for_what_it_injected(hook: Hook) -> None:
    (fact_id,) = await seed(hook.settings, [(EXPORT_FACT, {})])
    hook.context("user-prompt-submit", prompt_input("Why did the nightly export time out?"))
    (row,) = [r for r in hook.rows() if r["id"] == fact_id]
    assert row["access_count"] == 1
    assert injected_ids(hook.settings, SESSION) == {fact_id}


async def test_prompt_context_stays_under_the_output_cap(hook: Hook) -> None:
    filler = " ".join(f"word{i}" for i in range(400))
    await seed(hook.settings, [(f"Export job note {i}: {filler}", {"namespace": ns})
                         for i in range(30) for ns in (PROJECT, GLOBAL_NAMESPACE)])
    text = hook.context("user-prompt-submit", prompt_input("export job note word1 word2"))
    assert text is not None and len(text) <= 10_000


async def test_a_huge_prompt_is_cut_before_querying(hook: Hook) -> None:
    await seed(hook.settings, [(EXPORT_FACT, {})])
    prompt = "Why did the nightly export job time out? " + "export job timed out; " * 250_000
    assert len(prompt) > 5_000_000
    assert hook.context("user-prompt-submit", prompt_input(prompt)) is not None


def test_prompt_with_no_database_creates_none(hook: Hook) -> None:
    assert_quiet(hook.run("user-prompt-submit", prompt_input("Why does the export time out?")))
    assert hook.left_no_store()


# ------------------------------------------------------------- session-start


async def test_session_start_loads_project_context(hook: Hook) -> None:
    await seed(hook.settings, [
        ("Architecture: the API is FastAPI behind nginx; jobs run on Celery.",
         {"importance": 0.9, "memory_type": "semantic"}),
        ("Global: prefer small commits.", {"namespace": GLOBAL_NAMESPACE, "importance": 0.8}),
        ("Other project memory.", {"namespace": "/home/dev/other"}),
    ])
    payload = {"session_id": SESSION, "transcript_path": "/tmp/x.jsonl", "cwd": PROJECT,
               "hook_event_name": "SessionStart", "source": "startup", "model": "claude"}
    text = hook.context("session-start", payload)
    assert text is not None
    assert "FastAPI behind nginx" in text and "prefer small commits" in text
    assert "Other project" not in text
    # What session start loaded is not injected again by the prompt hook.
    assert_quiet(hook.run("user-prompt-submit",
                          prompt_input("Is the API FastAPI behind nginx with Celery jobs?")))


def test_session_start_on_an_empty_or_missing_store_prints_nothing(hook: Hook) -> None:
    payload = {"session_id": SESSION, "cwd": PROJECT, "source": "startup"}
    assert_quiet(hook.run("session-start", payload))
    assert hook.left_no_store()


# ----------------------------------------------------------- launcher, config


def test_launcher_script_runs_from_a_checkout(hook: Hook, tmp_path: Path) -> None:
    script = REPO / "hooks" / "pma-hook"
    assert os.access(script, os.X_OK)
    proc = subprocess.run([str(script), "stop"], input=json.dumps(
        stop_input(tmp_path / "none.jsonl")).encode(), capture_output=True,
        env=hook.env, cwd=tmp_path, timeout=120, check=False)
    assert_quiet(proc)
    assert len(hook.rows()) == 1


def test_launcher_fails_open_when_python_cannot_start(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "PMA_PYTHON": str(tmp_path / "no-python")}
    proc = subprocess.run([str(REPO / "hooks" / "pma-hook"), "user-prompt-submit"],
                          input=b'{"prompt": "hi there friend"}', capture_output=True,
                          env=env, timeout=60, check=False)
    assert proc.returncode == 0 and proc.stdout == b""


def hook_config() -> Iterator[tuple[str, dict[str, Any]]]:
    config = json.loads((REPO / "hooks" / "hooks.json").read_text())
    for event, groups in config["hooks"].items():
        for group in groups:
            for handler in group["hooks"]:
                yield event, handler


def test_hooks_json_wires_every_event_to_its_command() -> None:
    wired = {event: handler["command"] for event, handler in hook_config()}
    assert set(wired) == {"SessionStart", "UserPromptSubmit", "Stop", "PreCompact"}
    for event, command in wired.items():
        assert "pma-mcp hook" in command or "pma-hook" in command
        assert hooks._event_name(event) in command
    for _, handler in hook_config():
        assert handler["type"] == "command" and handler["timeout"] <= 60


def test_plugin_manifest_bundles_the_server_and_relies_on_the_standard_hooks_file() -> None:
    manifest = json.loads((REPO / "plugin" / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "pma"
    assert "hooks" not in manifest  # hooks/hooks.json is loaded automatically; naming it fails
    server = manifest["mcpServers"]["pma"]
    assert server["command"] and "pma-mcp" in " ".join([server["command"], *server["args"]])


# ------------------------------------------------------------------ pure parts


@pytest.mark.parametrize(("prompt", "expected"), [
    ("ok", None), ("Thanks!", None), ("/clear", None), ("<command-name>/x</command-name>", None),
    ("sure, go ahead", None), ("refactor", None),
    ("fix the flaky export test", "fix the flaky export test"),
    ("Why?", None), ("  why does export hang  ", "why does export hang"),
])
def test_prompt_query(prompt: str, expected: str | None) -> None:
    assert hooks.prompt_query(prompt) == expected


def test_prompt_query_keeps_head_and_tail_of_a_huge_prompt() -> None:
    query = hooks.prompt_query("START " + "x " * 100_000 + " END")
    assert query is not None and len(query) <= hooks.MAX_QUERY_CHARS
    assert query.startswith("START") and query.endswith("END")


@pytest.mark.parametrize(("text", "expected"), [
    ("We renamed the variable.", 0.5),
    ("We decided to use SQLite.", 0.65),
    ("Fixed the bug in the parser.", 0.6),
    ("Always run ruff; we decided this after a bug. " + "x" * 2_100, 0.85),
])
def test_importance_heuristic(text: str, expected: float) -> None:
    assert hooks.importance_of(text) == expected


@pytest.mark.parametrize("name", ["user-prompt-submit", "UserPromptSubmit",
                                  "user_prompt_submit"])
def test_event_aliases(name: str) -> None:
    assert hooks._event_name(name) == "user-prompt-submit"


async def test_context_floor_and_exclusions_apply_before_the_pool_is_cut(
    service: MemoryService,
) -> None:
    """The prompt hook's filters must not starve it: excluded or below-floor memories never
    take the places of eligible ones (in-process, on the service the hook calls)."""
    strong = [(await service.add(f"Export job retry note {i}: capped at {i}.",
                                 importance=1.0)).memory.id for i in range(80)]
    for i in range(60):  # important, recent, but unrelated
        await service.add(f"Coffee machine descaling reminder {i}.", importance=1.0)
    seen = set(strong[:70])
    pack = await service.get_context("export job retry", token_budget=1_400,
                                      min_similarity=0.55, exclude_ids=seen, touch=False)
    got = {r.memory.id for r in pack.memories}
    assert got == set(strong[70:])
    assert all(r.breakdown.semantic_similarity >= 0.55 for r in pack.memories)


def test_a_word_in_no_memory_does_not_use_up_the_postings_budget() -> None:
    """A prompt nearly always holds some word no memory has; if that word alone filled the
    MATCH, a large store would never find anything for the prompt hook."""
    from pma_mcp.core.text import relevance
    from pma_mcp.core.text.relevance import TermStats

    stats = TermStats(total_docs=100_000, doc_freq={"cach": 3_000, "layer": 2_500},
                      content_freq={"cach": 3_000, "layer": 2_500})
    full, _ = relevance.within_budget(["convent", "cach", "layer"], stats)
    assert "convent" in full and "layer" in full


def test_stop_expands_a_home_relative_transcript_path(hook: Hook, tmp_path: Path) -> None:
    transcript = Transcript(tmp_path / ".claude" / "projects" / "p" / f"{SESSION}.jsonl")
    transcript.path.parent.mkdir(parents=True)
    transcript.exchange("Why does the nightly export job time out?", REPLY)
    transcript.write()
    payload = stop_input(f"~/.claude/projects/p/{SESSION}.jsonl")  # HOME is tmp_path
    assert_quiet(hook.run("stop", payload))
    (row,) = hook.rows()
    assert row["content"].startswith("User: Why does the nightly export job time out?")


def test_input_with_a_byte_order_mark_is_read(hook: Hook, tmp_path: Path) -> None:
    data = b"\xef\xbb\xbf" + json.dumps(stop_input(tmp_path / "none.jsonl")).encode()
    assert_quiet(hook.run("stop", data))
    assert len(hook.rows()) == 1


async def test_one_pass_packs_each_namespace_into_its_own_budget(
    service: MemoryService,
) -> None:
    """get_contexts: the prompt hook's project + global split in one retrieval."""
    words = " ".join(["retry"] * 40)  # ~53 tokens each (WordEstimate)
    for i in range(30):
        await service.add(f"Export retry note {i}: {words}")
        await service.add(f"Global export retry rule {i}: {words}", namespace=GLOBAL_NAMESPACE)
    packs = await service.get_contexts("export retry", {PROJECT: 300, GLOBAL_NAMESPACE: 120},
                                       min_similarity=0.3)
    assert {m.memory.namespace for m in packs[PROJECT].memories} == {PROJECT}
    assert {m.memory.namespace for m in packs[GLOBAL_NAMESPACE].memories} == {GLOBAL_NAMESPACE}
    assert 0 < packs[PROJECT].total_tokens <= 300 and len(packs[PROJECT].memories) == 5
    assert 0 < packs[GLOBAL_NAMESPACE].total_tokens <= 120
    # A query with no searchable words cannot clear a positive floor: nothing, cheaply.
    empty = await service.get_contexts("the and of", {PROJECT: 300}, min_similarity=0.1)
    assert empty[PROJECT].memories == []


@pytest.mark.sqlite_only  # holds SQLite's write lock with a connection of its own
@pytest.mark.parametrize("source", ["startup", "compact"])
async def test_session_start_under_a_held_write_lock_says_one_line_at_most(
    hook: Hook, source: str
) -> None:
    """Another process holding the write lock (a long GC batch, an import) costs session
    start its bookkeeping writes, never its context, and at most one line on stderr."""
    await seed(hook.settings, [("Architecture: the API is FastAPI behind nginx.",
                          {"importance": 0.9, "memory_type": "semantic"})])
    blocker = sqlite3.connect(hook.db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        proc = hook.run("session-start", {"session_id": SESSION, "cwd": PROJECT,
                                          "hook_event_name": "SessionStart", "source": source})
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert proc.returncode == 0, proc.stderr
    assert "FastAPI behind nginx" in json.loads(proc.stdout)["hookSpecificOutput"][
        "additionalContext"]
    assert len(proc.stderr.decode(errors="replace").strip().splitlines()) <= 1, proc.stderr
