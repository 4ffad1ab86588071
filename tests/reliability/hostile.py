"""The hostile-input corpus (tests/hostile/*.jsonl) and the runners that replay it.

Corpus files, one case per line (tests/hostile/README.md has the details):

- tool_arguments.jsonl  tool calls with bad arguments: {"id", "tool", "args", "expect", "needle"?}
- queries.jsonl         query text full of FTS5/SQL syntax, run through four query entry points
- jsonrpc_lines.jsonl   raw lines for the stdio server: {"id", "raw" | "raw_b64" | "message"}
- hook_inputs.jsonl     hook stdin: {"id", "events", "raw" | "raw_b64" | "json", "expect"}

Values JSON cannot hold are written as markers and expanded here: {"$float": "nan"},
{"$repeat": [text, n]}, {"$labels": n}, {"$nest": n}, {"$words": n}, {"$memory": "own" |
"other" | "global", "prefix"?: n}, {"$project": true}, {"$transcript": kind}.

Every case must end in a clear error (or, for hooks, a silent fail-open exit), with no
traceback text reaching the client, the server still answering, and the database unchanged by
input it rejected.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import queue
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from mcp import Client, MCPError
from mcp.types import CallToolResult, TextContent

from pma_mcp.config import Settings
from pma_mcp.core.budget import WordEstimate
from pma_mcp.core.namespaces import GLOBAL_NAMESPACE
from pma_mcp.server import build_server
from pma_mcp.service import MemoryService
from tests.backends import store_env
from tests.reliability import checks
from tests.reliability.procs import REPO, RawServer, child_env

CORPUS = REPO / "tests" / "hostile"
PROJECT = "/home/dev/acme-api"
OTHER = "/home/dev/other-project"
OTHER_MARKER = "zebracorn"
AUTHOR = "dev@acme.test"
"""Every process of a world stores as this person, so all share one global namespace (on a
shared database the global namespace is the author's own: Settings.global_namespace)."""
"""A word only the other namespace's memories contain: it must never reach this project."""
AMBIGUOUS = ("aaaaaa01" + "0" * 24, "aaaaaa02" + "0" * 24)
LATE_ANSWER = 1.0
"""How long a request the SDK drops is given to be answered after the ping (a deadline, not
a timing assertion: an answer that never comes is the expected outcome there)."""
GENERIC = "internal error in"
"""The server's message for an unexpected exception: a case ending there is a bug, not a
clear error."""


def load(name: str) -> list[dict[str, Any]]:
    with (CORPUS / name).open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def corpus_size() -> dict[str, int]:
    """Cases per corpus file; queries count once per entry point they are run through."""
    return {
        "tool arguments": len(load("tool_arguments.jsonl")),
        "queries x 4 entry points": len(load("queries.jsonl")) * len(QUERY_TARGETS),
        "JSON-RPC lines": len(load("jsonrpc_lines.jsonl")),
        "hook inputs": len(load("hook_inputs.jsonl")),
    }


# ---------------------------------------------------------------------- markers


@dataclass
class World:
    """The seeded store a corpus runs against, and what markers expand to."""

    db: Path
    own: list[str]
    other: list[str]
    global_: list[str]
    tmp: Path
    transcripts: dict[str, Path] = field(default_factory=dict)
    store: Settings | None = None
    """The store on its backend (store_settings); None: the SQLite file `db`."""
    every: int = 1
    """Replay every n-th case of each corpus file (a smaller size where each case costs more,
    as on PostgreSQL, whose before/after snapshots are a server round trip each)."""

    def cases(self, name: str) -> list[dict[str, Any]]:
        """The corpus file's cases this world replays."""
        return load(name)[::self.every]

    @property
    def where(self) -> checks.Where:
        """What the checks read: the SQLite file, or the store's Settings."""
        return self.store or self.db

    @property
    def settings(self) -> Settings:
        """This project's Settings on the world's store, as every process here resolves them."""
        return world_settings(self.store or self.db)

    def env(self, home: Path, **extra: str) -> dict[str, str]:
        """A child process's environment on the world's store."""
        more = store_env(self.store) if self.store else {}
        return child_env(self.db, home, PMA_AUTHOR=AUTHOR, **more, **extra)

    def memory(self, kind: str) -> str:
        return {"own": self.own[0], "other": self.other[0], "global": self.global_[0]}[kind]


def expand(value: Any, world: World) -> Any:
    if isinstance(value, list):
        return [expand(v, world) for v in value]
    if not isinstance(value, dict):
        return value
    markers = [k for k in value if k.startswith("$")]
    if not markers:
        return {k: expand(v, world) for k, v in value.items()}
    key = markers[0]
    arg = value[key]
    if key == "$float":
        return float(arg)
    if key == "$repeat":
        return str(arg[0]) * int(arg[1])
    if key == "$labels":
        return [f"tag{i}" for i in range(int(arg))]
    if key == "$words":
        return " ".join(f"w{i}" for i in range(int(arg)))
    if key == "$nest":
        nested: dict[str, Any] = {}
        for _ in range(int(arg)):
            nested = {"a": nested}
        return nested
    if key == "$memory":
        memory_id = world.memory(str(arg))
        prefix = value.get("prefix")
        return memory_id[: int(prefix)] if prefix is not None else memory_id
    if key == "$project":
        return PROJECT
    if key == "$other_project":
        return OTHER
    if key == "$global":
        return world.settings.global_namespace
    if key == "$transcript":
        return str(world.transcripts[str(arg)])
    raise ValueError(f"unknown corpus marker {key}")


def raw_bytes(case: Mapping[str, Any], world: World) -> bytes:
    """The exact bytes of a `raw`, `raw_b64`, `message` or `json` case."""
    if "raw_b64" in case:
        return base64.b64decode(case["raw_b64"])
    if "raw" in case:
        text = expand(case["raw"], world)
        text = "".join(text) if isinstance(text, list) else str(text)
        return text.encode("utf-8", "surrogatepass")
    value = expand(case["message"] if "message" in case else case["json"], world)
    return json.dumps(value, allow_nan=True).encode("utf-8", "surrogatepass")


def world_settings(store: Path | Settings) -> Settings:
    """The project's Settings on a SQLite file or on `store`'s backend."""
    base = Settings(db_path=store) if isinstance(store, Path) else store
    return replace(base, namespace=PROJECT, author=AUTHOR)


async def seed(store: Path | Settings) -> tuple[list[str], list[str], list[str]]:
    """Memories in this project, in another project and in the global namespace."""
    own: list[str] = []
    other: list[str] = []
    shared: list[str] = []
    texts = [
        ("Export job retries were unbounded; capped at 5 with jitter in config/jobs.toml",
         ["ops", "export"], ["config/jobs.toml"]),
        ("Deploy with make release; never push to main directly", ["ops", "deploy"], ["Makefile"]),
        ("The billing webhook retries three times with exponential backoff", ["billing"],
         ["billing/webhooks.py"]),
        ("Schema migrations run in one transaction by PRAGMA user_version", ["db"],
         ["pma_mcp/db.py"]),
    ]
    counter = WordEstimate()
    settings = world_settings(store)
    async with await MemoryService.open(settings, counter=counter) as service:
        for content, tags, entities in texts:
            added = await service.add(content, importance=0.7, tags=tags,
                                      linked_entities=entities, session_id="seed-session")
            own.append(added.memory.id)
        doc = await service.export()
        records = []
        for memory_id, record in zip(AMBIGUOUS, doc["memories"][:2], strict=True):
            records.append({**record, "id": memory_id,
                            "content": f"Prefix twin {memory_id[:8]}: {record['content']}"})
        await service.import_document({"memories": records})
        own.extend(AMBIGUOUS)
        for content, tags, entities in texts[:3]:
            added = await service.add(
                f"{content} ({OTHER_MARKER} secret of the other project)", importance=0.9,
                tags=tags, linked_entities=entities, namespace=OTHER)
            other.append(added.memory.id)
        for content in ("Always answer in British English", "Prefer uv over pip for Python"):
            added = await service.add(content, importance=0.9, memory_type="semantic",
                                      tags=["rule", "ops"],
                                      namespace=settings.global_namespace)
            shared.append(added.memory.id)
    return own, other, shared


# ------------------------------------------------------------------- outcomes


@dataclass
class Outcome:
    corpus: str
    case: str
    target: str
    expected: str
    got: str
    detail: str = ""
    problems: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return (f"[{self.corpus}] {self.case} via {self.target}: expected {self.expected}, "
                f"got {self.got}: {'; '.join(self.problems)} ({self.detail[:200]!r})")


def tally(outcomes: list[Outcome]) -> Counter[str]:
    return Counter(o.got for o in outcomes)


def leaks_traceback(text: str) -> bool:
    return "Traceback (most recent call last)" in text or 'File "/' in text


def text_of(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


def _namespaces_in(data: Any) -> Iterator[str]:
    if isinstance(data, dict):
        for key, value in data.items():
            if key == "namespace" and isinstance(value, str):
                yield value
            else:
                yield from _namespaces_in(value)
    elif isinstance(data, list):
        for item in data:
            yield from _namespaces_in(item)


def foreign(result: CallToolResult | str, global_namespace: str = GLOBAL_NAMESPACE) -> list[str]:
    """Signs that another project's memory reached this caller (whose global namespace is
    `global_namespace`)."""
    if isinstance(result, str):
        text, data = result, None
    else:
        text, data = text_of(result), result.structured_content
    found = [f"namespace {ns}" for ns in _namespaces_in(data) if ns not in (PROJECT,
                                                                             global_namespace)]
    if OTHER_MARKER in text:
        found.append(f"{OTHER_MARKER} in the answer")
    return found


# ------------------------------------------------------------- tool arguments


async def run_tool_cases(world: World, mode: Literal["auto", "legacy"]) -> list[Outcome]:
    """Every tool_arguments case through the SDK's in-process Client."""
    app = build_server(world.settings, counter=WordEstimate())
    outcomes: list[Outcome] = []
    async with Client(app, mode=mode, raise_exceptions=True) as client:
        for case in world.cases("tool_arguments.jsonl"):
            tool = expand(case["tool"], world)
            args = expand(case["args"], world)
            outcome = Outcome("tool_arguments", case["id"], f"{tool} ({mode})", case["expect"],
                              "?")
            before = checks.snapshot(world.where, full=True)
            result: CallToolResult | None = None
            try:
                result = await client.call_tool(tool, args)
            except MCPError as exc:
                outcome.got, outcome.detail = "error", str(exc)
            except (UnicodeEncodeError, ValueError, RecursionError) as exc:
                # The client library could not serialise the request: it never left.
                outcome.got, outcome.detail = "refused by the client library", str(exc)
            if result is not None:
                outcome.detail = text_of(result)
                outcome.got = "error" if result.is_error else (
                    "stored" if tool == "remember" else "ok")
            _judge_tool(outcome, case, args, before, world, result)
            alive = await client.call_tool("memory_stats", {})
            if alive.is_error:
                outcome.problems.append("the next request failed: " + text_of(alive)[:200])
            outcomes.append(outcome)
    return outcomes


def _judge_tool(outcome: Outcome, case: Mapping[str, Any], args: Any, before: checks.Snapshot,
                world: World, result: CallToolResult | None) -> None:
    problems = outcome.problems
    text = outcome.detail
    if leaks_traceback(text):
        problems.append("traceback text reached the client")
    if GENERIC in text:
        problems.append("an unexpected exception (generic internal error), not a clear error")
    expected = case["expect"]
    if expected == "error":
        if outcome.got not in ("error", "refused by the client library"):
            problems.append("was accepted")
        needle = str(case.get("needle", "")).lower()
        if outcome.got == "error" and needle and needle not in text.lower():
            problems.append(f"message does not name {needle!r}")
        after = checks.snapshot(world.where, full=True)
        if after != before:
            problems.append(f"rejected input changed the database: {before.diff(after)}")
    elif expected == "ok":
        if outcome.got != "ok":
            problems.append("failed")
        if result is not None:
            problems += foreign(result, world.settings.global_namespace)
        after = checks.snapshot(world.where)
        if after != checks.content_part(before):
            problems.append("a read changed stored content")
    elif expected == "stored":
        if outcome.got != "stored" or result is None or result.structured_content is None:
            problems.append("was not stored")
            return
        new_id = result.structured_content["id"]
        rows = checks.row_dump(world.where)
        if new_id not in rows:
            problems.append("reported stored but not in the database")
        elif isinstance(args, dict) and rows[new_id]["content"] != args.get("content"):
            problems.append("stored content differs from what was sent")


# --------------------------------------------------------------------- queries

QUERY_TARGETS = ("recall", "load_context", "inspect", "prompt recall_topic")


async def run_query_cases(world: World) -> list[Outcome]:
    """Every query string through recall, load_context, inspect(query) and the prompt."""
    app = build_server(world.settings, counter=WordEstimate())
    outcomes: list[Outcome] = []
    async with Client(app, mode="legacy", raise_exceptions=True) as client:
        for case in world.cases("queries.jsonl"):
            query = expand(case["query"], world)
            for target in QUERY_TARGETS:
                blank_topic = target.startswith("prompt") and not str(query).strip()
                expected = "error" if blank_topic else "ok"
                outcome = Outcome("queries", case["id"], target, expected, "?", str(query)[:80])
                before = checks.snapshot(world.where)
                try:
                    if target == "prompt recall_topic":
                        prompt = await client.get_prompt("recall_topic", {"topic": query})
                        answer = "\n".join(
                            m.content.text for m in prompt.messages
                            if isinstance(m.content, TextContent))
                        outcome.got = "ok"
                        outcome.problems += foreign(answer, world.settings.global_namespace)
                        outcome.detail = answer
                    else:
                        args: dict[str, Any] = {"query": query}
                        if target == "recall":
                            args["limit"] = 10
                        elif target == "load_context":
                            args["token_budget"] = 400
                        else:
                            args["memory_id"] = world.own[0]
                        result = await client.call_tool(target, args)
                        outcome.got = "error" if result.is_error else "ok"
                        outcome.detail = text_of(result)
                        outcome.problems += foreign(result, world.settings.global_namespace)
                except MCPError as exc:
                    outcome.got, outcome.detail = "error", str(exc)
                if leaks_traceback(outcome.detail):
                    outcome.problems.append("traceback text reached the client")
                if outcome.got != expected:
                    outcome.problems.append(f"{outcome.got} instead of {expected}")
                if checks.snapshot(world.where) != before:
                    outcome.problems.append("a query changed stored content")
                outcomes.append(outcome)
        alive = await client.call_tool("memory_stats", {})
        if alive.is_error:
            outcomes[-1].problems.append("the server stopped answering")
    return outcomes


# ------------------------------------------------------------ stdio (subprocess)


def stdio_cases(world: World) -> list[tuple[str, str, bytes, str, Any, str]]:
    """(corpus, id, line, expectation, answer id, needle) for the real-process run: every
    JSON-RPC line plus the tool cases flagged "stdio"."""
    out: list[tuple[str, str, bytes, str, Any, str]] = []
    for case in world.cases("jsonrpc_lines.jsonl"):
        out.append(("jsonrpc_lines", case["id"], raw_bytes(case, world), case["expect"],
                    case.get("answer_id"), ""))
    for n, case in enumerate(c for c in world.cases("tool_arguments.jsonl") if c.get("stdio")):
        rid = 700_000 + n
        message = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                   "params": {"name": expand(case["tool"], world),
                              "arguments": expand(case["args"], world)}}
        line = json.dumps(message, allow_nan=True).encode("utf-8", "surrogatepass")
        expect = case.get("expect_stdio", case["expect"])
        expect = {"stored": "ok"}.get(expect, expect)
        out.append(("tool_arguments", case["id"], line, expect, rid, case.get("needle", "")))
    return out


def run_stdio_cases(world: World) -> tuple[list[Outcome], int, list[bytes]]:
    """Replay the stdio cases into one real `python -m pma_mcp`, each followed by a ping.

    Returns the outcomes, the server's exit code and any stdout line that was not JSON-RPC.
    """
    env = world.env(world.tmp, PMA_NAMESPACE=PROJECT)
    server = RawServer(env, world.tmp)
    server.initialize()
    outcomes: list[Outcome] = []
    for n, (corpus, case_id, line, expected, answer_id, needle) in enumerate(
            stdio_cases(world)):
        outcome = Outcome(corpus, case_id, "stdio", expected, "?")
        before = checks.snapshot(world.where)
        server.send_raw(line)
        barrier = 900_000 + n  # tool calls run one at a time: earlier ones are answered first
        server.request_with_id(barrier, "tools/call", {"name": "memory_stats", "arguments": {}})
        alive = server.answers({barrier})[barrier]
        if "error" in alive or alive["result"].get("isError"):
            outcome.problems.append(f"the next request failed: {alive}")
        if answer_id is not None and expected in ("error", "ok", "any", "sdk-drops"):
            with contextlib.suppress(queue.Empty):  # a tool call may answer after the ping
                server.answers({answer_id}, timeout=LATE_ANSWER)
        answer = server.answered.get(answer_id) if answer_id is not None else None
        outcome.got = _classify(answer)
        outcome.detail = json.dumps(answer)[:300] if answer is not None else ""
        _judge_stdio(outcome, expected, needle, answer)
        rejected = expected in ("error", "no-answer", "sdk-drops")
        if rejected and checks.snapshot(world.where) != before:
            outcome.problems.append("rejected input changed the database")
        outcomes.append(outcome)
    code = server.close()
    return outcomes, code, server.impure


def _classify(answer: dict[str, Any] | None) -> str:
    if answer is None:
        return "no answer"
    if "error" in answer or answer.get("result", {}).get("isError"):
        return "error"
    return "ok"


def _judge_stdio(outcome: Outcome, expected: str, needle: str,
                 answer: dict[str, Any] | None) -> None:
    text = json.dumps(answer) if answer is not None else ""
    if leaks_traceback(text):
        outcome.problems.append("traceback text reached the client")
    if GENERIC in text:
        outcome.problems.append("an unexpected exception (generic internal error)")
    got = outcome.got
    if expected == "error" and got != "error":
        outcome.problems.append("no error answer")
    elif expected == "ok" and got != "ok":
        outcome.problems.append("not answered with a result")
    elif expected == "no-answer" and got == "ok":
        outcome.problems.append("answered with a result")
    elif expected == "sdk-drops" and got != "no answer":
        outcome.problems.append("now answered: the SDK limitation is gone, update the corpus")
    if needle and got == "error" and needle.lower() not in text.lower():
        outcome.problems.append(f"message does not name {needle!r}")


# ---------------------------------------------------------------------- hooks

HOOK_EVENTS = ("session-start", "user-prompt-submit", "stop", "pre-compact")
ENVELOPE_NAMES = {"session-start": "SessionStart", "user-prompt-submit": "UserPromptSubmit"}


def make_transcripts(tmp: Path) -> dict[str, Path]:
    """Transcript files of every shape the hook corpus names with {"$transcript": kind}."""
    folder = tmp / "transcripts"
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        {"type": "user", "uuid": "u1", "sessionId": "s", "cwd": PROJECT,
         "message": {"role": "user", "content": "Why does the nightly export job hang?"}},
        {"type": "assistant", "uuid": "a1", "sessionId": "s", "cwd": PROJECT,
         "message": {"role": "assistant", "content": [{"type": "text", "text": (
             "Retries were unbounded, so one failing upload never ended. I capped them at 5 "
             "with jitter in config/jobs.toml and added a regression test for the runner.")}]}},
    ]
    paths = {kind: folder / f"{kind}.jsonl" for kind in
             ("valid", "garbage", "binary", "empty", "wrong-shape")}
    paths["valid"].write_text("".join(json.dumps(x) + "\n" for x in lines))
    paths["garbage"].write_text("not json\n{broken\n[1,2]\n\"string\"\n" * 50)
    paths["binary"].write_bytes(bytes(range(256)) * 64)
    paths["empty"].write_bytes(b"")
    paths["wrong-shape"].write_text("".join(json.dumps(x) + "\n" for x in [
        {"type": "user", "message": ["not", "a", "dict"]},
        {"type": "user", "message": {"content": 5}},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": 7}]}},
        {"type": 5, "uuid": ["x"]},
        {"type": "user", "uuid": {"a": 1}, "message": {"content": [{"type": "text"}]}},
    ]))
    paths["missing"] = folder / "does-not-exist.jsonl"
    paths["directory"] = folder / "a-directory.jsonl"
    paths["directory"].mkdir(exist_ok=True)
    paths["fifo"] = folder / "a-fifo.jsonl"
    if not paths["fifo"].exists():
        os.mkfifo(paths["fifo"])
    return paths


@dataclass(frozen=True)
class HookRun:
    case: str
    event: str
    expect: str
    stdin: Path


def hook_runs(world: World) -> list[HookRun]:
    runs: list[HookRun] = []
    folder = world.tmp / "hook-stdin"
    folder.mkdir(exist_ok=True)
    for n, case in enumerate(world.cases("hook_inputs.jsonl")):
        data = raw_bytes(case, world)
        path = folder / f"{n:03d}.bin"
        path.write_bytes(data)
        events = HOOK_EVENTS if case["events"] == "all" else tuple(case["events"])
        by_event = case.get("expect_by_event", {})
        runs += [HookRun(case["id"], event, by_event.get(event, case["expect"]), path)
                 for event in events]
    return runs


def hook_env(world: World) -> dict[str, str]:
    env = world.env(world.tmp / "home")
    (world.tmp / "home").mkdir(exist_ok=True)
    return env


def run_hook_cases(world: World) -> list[Outcome]:
    """Every hook case, each event in its own forked process (tests/reliability/hook_forker)."""
    runs = hook_runs(world)
    plan = world.tmp / "hook-plan.json"
    results = world.tmp / "hook-results.jsonl"
    plan.write_text(json.dumps({
        "db": str(world.db), "database_url": world.store and world.store.database_url,
        "cwd": str(world.tmp), "env": hook_env(world),
        "runs": [{"case": r.case, "event": r.event, "stdin": str(r.stdin)} for r in runs],
    }))
    done = subprocess.run(
        [sys.executable, "-m", "tests.reliability.hook_forker", str(plan), str(results)],
        env=hook_env(world), cwd=REPO, capture_output=True, timeout=900, check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"hook forker failed: {done.stderr.decode()[-2000:]}")
    by_key = {(r.case, r.event): r for r in runs}
    outcomes = []
    for line in results.read_text().splitlines():
        record = json.loads(line)
        run = by_key[(record["case"], record["event"])]
        outcomes.append(judge_hook(run, record["exit"], record["stdout"], record["stderr"],
                                   record["changed"]))
    return outcomes


def judge_hook(run: HookRun, code: int, stdout: str, stderr: str, changed: bool) -> Outcome:
    outcome = Outcome("hook_inputs", run.case, run.event, run.expect, "?", stderr)
    problems = outcome.problems
    if code != 0:
        problems.append(f"exit {code}")
    if leaks_traceback(stderr):
        problems.append("traceback on stderr")
    if len(stderr.strip().splitlines()) > 1:
        problems.append("more than one stderr line")
    printed = bool(stdout.strip())
    if printed:
        name = ENVELOPE_NAMES.get(run.event)
        try:
            envelope = json.loads(stdout)
            inner = envelope["hookSpecificOutput"]
            valid = (set(envelope) == {"hookSpecificOutput"} and name is not None
                     and inner["hookEventName"] == name
                     and 0 < len(inner["additionalContext"]) <= 10_000)
        except (ValueError, KeyError, TypeError):
            valid = False
        if not valid:
            problems.append(f"stdout is not a valid {run.event} envelope: {stdout[:100]!r}")
        if OTHER_MARKER in stdout:
            problems.append("another project's memory was injected")
    if code == 0 and not printed and not changed:
        outcome.got = "silent"
    elif code == 0:
        outcome.got = "context" if printed else "saved"
    else:
        outcome.got = f"exit {code}"
    if run.expect == "silent" and outcome.got != "silent":
        problems.append("rejected input was not silent or changed the database")
    return outcome
