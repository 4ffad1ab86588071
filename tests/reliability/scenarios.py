"""The concurrency and crash scenarios, sized by the caller (CI test or full stress run).

Both run real processes against one store — a new SQLite file, or the PostgreSQL schema of
the `store` Settings a test passes — and then check it from outside (tests/reliability/checks.py):
on SQLite `PRAGMA integrity_check` and FTS5's integrity check, on both `check_consistency()`
(memories vs their index and label rows), every acknowledged write present, a `created`
lineage event for each.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pma_mcp.config import Settings
from tests.backends import store_env
from tests.reliability import checks
from tests.reliability.procs import (
    DEADLINE,
    RawServer,
    child_env,
    pma,
    stop_payload,
    tool_error,
    write_transcript,
)
from tests.reliability.writer import WORDS, content_for, record_for

LOCKED = re.compile(r"database is locked|database table is locked|SQLITE_BUSY|busy", re.I)
CLI_BATCH = 25


def reply_for(label: str, i: int) -> str:
    """A distinct assistant reply of ≥ 120 characters (the stop hook skips shorter ones)."""
    words = " ".join(WORDS[(i * 3 + k) % len(WORDS)] for k in range(10))
    return (f"Reply {label}-{i}: I traced the {words} issue to the job runner, fixed the "
            f"retry loop and added a regression test so it stays fixed (case {label}-{i}).")


def saved_reply(content: str) -> str | None:
    """The assistant part of an auto-saved exchange."""
    _, sep, reply = content.partition("Assistant: ")
    return reply if sep else None


# ----------------------------------------------------------------- concurrency


@dataclass
class Layout:
    """How many of each process kind run at once."""

    servers: int = 3
    hooks: int = 2
    writers: int = 2
    cli: int = 1

    @property
    def processes(self) -> int:
        return self.servers + self.hooks + self.writers + self.cli


@dataclass
class ConcurrencyReport:
    layout: Layout
    per_process: int
    expected: int = 0
    present: int = 0
    launches: int = 0
    missing: list[str] = field(default_factory=list)
    lock_errors: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    lineage_missing: list[str] = field(default_factory=list)
    integrity: str = ""
    consistent: bool = False
    consistency: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return (not self.missing and not self.lock_errors and not self.failures
                and not self.lineage_missing and self.integrity == "ok" and self.consistent
                and self.present == self.expected)


class _Collector:
    """Thread-safe sink for what each worker saw."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ids: set[str] = set()
        self.replies: set[str] = set()
        self.messages: list[str] = []  # everything a caller was shown (errors, stderr)
        self.failures: list[str] = []
        self.launches = 0

    def fail(self, who: str, what: str) -> None:
        with self.lock:
            self.failures.append(f"{who}: {what[:500]}")

    def shown(self, who: str, text: str) -> None:
        if text.strip():
            with self.lock:
                self.messages.append(f"{who}: {text[:500]}")

    def launched(self, n: int = 1) -> None:
        with self.lock:
            self.launches += n


def _server_worker(k: int, n: int, env: dict[str, str], project: Path, out: _Collector) -> None:
    who = f"server{k}"
    out.launched()
    server = RawServer(env, project)
    try:
        server.initialize()
        ids = [server.call_tool("remember", {
            "content": content_for(who, i), "importance": 0.5, "tags": [who],
            "linked_entities": [f"{who}.py"], "session_id": f"{who}-session"})
            for i in range(n)]
        answers = server.answers(set(ids))
        for rid in ids:
            answer = answers[rid]
            error = tool_error(answer)
            if error is not None:
                out.shown(who, error)
                out.fail(who, f"remember {rid} failed: {error}")
                continue
            data = answer["result"]["structuredContent"]
            if data["deduplicated"]:
                out.fail(who, f"remember {rid} was deduplicated")
            with out.lock:
                out.ids.add(data["id"])
    except Exception as exc:
        out.fail(who, f"{type(exc).__name__}: {exc}")
    finally:
        code = server.close()
        stderr = server.stderr
        lines = [ln for ln in stderr.splitlines() if not ln.startswith("pma-mcp ")]
        out.shown(who, "\n".join(lines))
        if code != 0:
            out.fail(who, f"exit {code}: {stderr[-500:]}")
        if lines:
            out.fail(who, f"stderr beyond the banner: {lines[:3]}")
        if server.impure:
            out.fail(who, f"non-JSON-RPC stdout: {server.impure[:2]!r}")


def _hook_worker(k: int, n: int, env: dict[str, str], project: Path, tmp: Path,
                 out: _Collector) -> None:
    who = f"hook{k}"
    session = f"00000000-0000-4000-8000-{k:012d}"
    transcript = tmp / f"{who}.jsonl"
    write_transcript(transcript, session, str(project),
                     f"Why does the nightly {who} export job hang after the upgrade?")
    for i in range(n):
        reply = reply_for(who, i)
        out.launched()
        proc = subprocess.run(
            pma("hook", "stop"), cwd=project, env=env, capture_output=True, timeout=DEADLINE,
            input=json.dumps(stop_payload(session, str(project), transcript, reply)).encode(),
            check=False,
        )
        stderr = proc.stderr.decode("utf-8", "replace")
        out.shown(who, stderr)
        if proc.returncode != 0 or proc.stdout or stderr.strip():
            out.fail(who, f"stop {i}: exit {proc.returncode}, stdout {proc.stdout[:100]!r}, "
                          f"stderr {stderr[:300]!r}")
        with out.lock:
            out.replies.add(reply)


def _writer_worker(k: int, n: int, env: dict[str, str], db: Path, namespace: str,
                   out: _Collector) -> None:
    who = f"writer{k}"
    out.launched()
    proc = subprocess.run(
        [sys.executable, "-m", "tests.reliability.writer", "--db", str(db), "--namespace",
         namespace, "--label", who, "--n", str(n)],
        env=env, capture_output=True, timeout=DEADLINE, check=False,
    )
    lines = proc.stdout.decode().splitlines()
    acks = [ln.split()[1] for ln in lines if ln.startswith("ack ")]
    errors = [ln for ln in lines if ln.startswith("error ")]
    stderr = proc.stderr.decode("utf-8", "replace")
    out.shown(who, "\n".join(errors) + stderr)
    if proc.returncode != 0 or errors or stderr.strip() or "done" not in lines:
        out.fail(who, f"exit {proc.returncode}, {errors[:2]}, stderr {stderr[-300:]!r}")
    with out.lock:
        out.ids.update(acks)


def _cli_worker(k: int, n: int, env: dict[str, str], project: Path, tmp: Path,
                namespace: str, out: _Collector) -> None:
    who = f"cli{k}"
    for start in range(0, n, CLI_BATCH):
        records = [record_for(who, i, namespace) for i in range(start, min(n, start + CLI_BATCH))]
        path = tmp / f"{who}-{start}.json"
        path.write_text(json.dumps({"format": "pma-mcp-export", "version": 1,
                                    "memories": records}))
        out.launched()
        proc = subprocess.run(pma("import", str(path)), cwd=project, env=env,
                              capture_output=True, timeout=DEADLINE, check=False)
        stderr = proc.stderr.decode("utf-8", "replace")
        out.shown(who, stderr)
        if proc.returncode != 0 or stderr.strip():
            out.fail(who, f"import {start}: exit {proc.returncode}, stderr {stderr[-300:]!r}")
            continue
        with out.lock:
            out.ids.update(r["id"] for r in records)


def _place(tmp: Path, name: str, store: Settings | None) -> tuple[Path, checks.Where,
                                                                  dict[str, str]]:
    """(SQLite path the processes are given, what the checks read, the processes' env): a
    new file `name` in `tmp`, or `store` on its backend."""
    if store is None:
        db = tmp / name
        return db, db, child_env(db, tmp)
    return store.db_path, store, child_env(store.db_path, tmp, **store_env(store))


def run_concurrency(tmp: Path, per_process: int, layout: Layout | None = None,
                    store: Settings | None = None) -> ConcurrencyReport:
    """All process kinds write `per_process` memories each into one new database at once.

    Every process resolves the same namespace the way it would in real use: servers and the
    CLI from their working directory, hooks from the input's `cwd`.
    """
    layout = layout or Layout()
    report = ConcurrencyReport(layout, per_process)
    project = tmp / "project"
    project.mkdir(parents=True, exist_ok=True)
    db, where, env = _place(tmp, "store.db", store)
    namespace = str(project)
    out = _Collector()
    workers: list[threading.Thread] = []

    def spawn(target: Callable[..., None], *args: Any) -> None:
        workers.append(threading.Thread(target=target, args=args, daemon=True))

    for k in range(layout.servers):
        spawn(_server_worker, k, per_process, env, project, out)
    for k in range(layout.hooks):
        spawn(_hook_worker, k, per_process, env, project, tmp, out)
    for k in range(layout.writers):
        spawn(_writer_worker, k, per_process, env, db, namespace, out)
    for k in range(layout.cli):
        spawn(_cli_worker, k, per_process, env, project, tmp, namespace, out)
    started = time.monotonic()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(DEADLINE * 4)
        if worker.is_alive():
            out.fail(worker.name, "did not finish")
    report.seconds = time.monotonic() - started

    report.launches = out.launches
    report.failures = out.failures
    report.lock_errors = [m for m in out.messages if LOCKED.search(m)]
    report.expected = layout.processes * per_process
    stored = checks.memory_ids(where)
    contents = checks.contents(where)
    report.present = len(stored)
    report.missing = sorted(out.ids - stored)
    replies = {saved_reply(c) for c in contents}
    report.missing += sorted(r[:40] for r in out.replies - replies)
    report.lineage_missing = sorted(stored - checks.created_ids(where))
    report.integrity = checks.integrity(where)
    result = checks.consistency(where)
    report.consistent = result.ok
    report.consistency = repr(result)
    return report


# ---------------------------------------------------------------------- crashes

VICTIMS = ("writer", "server", "import", "hook")


@dataclass
class CrashReport:
    kills: int = 0
    acknowledged: int = 0
    lost: list[str] = field(default_factory=list)
    corrupt: list[str] = field(default_factory=list)
    inconsistent: list[str] = field(default_factory=list)
    lineage_missing: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    victims: Counter[str] = field(default_factory=Counter)
    killed_before_first_ack: int = 0
    final_memories: int = 0

    @property
    def ok(self) -> bool:
        return not (self.lost or self.corrupt or self.inconsistent or self.lineage_missing
                    or self.failures)


class _Victim:
    """A process (or a chain of hook processes) writing until it is killed."""

    def __init__(self) -> None:
        self.acks: list[str] = []
        self.replies: list[str] = []
        self.first_ack = threading.Event()
        self.finished = threading.Event()
        self.failures: list[str] = []
        self.lock = threading.Lock()

    def ack(self, memory_id: str | None = None, reply: str | None = None) -> None:
        with self.lock:
            if memory_id is not None:
                self.acks.append(memory_id)
            if reply is not None:
                self.replies.append(reply)
        self.first_ack.set()

    def kill(self) -> None:
        raise NotImplementedError

    def collect(self) -> None:
        """After the kill: read whatever the victim acknowledged before it died."""


class _WriterVictim(_Victim):
    def __init__(self, env: dict[str, str], db: Path, namespace: str, label: str,
                 mode: str) -> None:
        super().__init__()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.reliability.writer", "--db", str(db),
             "--namespace", namespace, "--label", label, "--n", "100000", "--mode", mode,
             "--batch", "20"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        assert self.proc.stdout is not None
        self.reader = threading.Thread(target=self._read, args=(self.proc.stdout,),
                                       daemon=True)
        self.reader.start()

    def _read(self, stream: IO[bytes]) -> None:
        for raw in iter(stream.readline, b""):
            line = raw.decode().strip()
            if line.startswith("ack "):
                self.ack(line.split()[1])
            elif line.startswith("error "):
                self.failures.append(line)
        self.finished.set()

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(DEADLINE)

    def collect(self) -> None:
        self.reader.join(DEADLINE)
        assert self.proc.stderr is not None
        stderr = self.proc.stderr.read().decode("utf-8", "replace")
        if stderr.strip():
            self.failures.append(f"stderr: {stderr[-300:]}")


class _ServerVictim(_Victim):
    def __init__(self, env: dict[str, str], project: Path, label: str) -> None:
        super().__init__()
        self.server = RawServer(env, project)
        self.label = label
        self.thread = threading.Thread(target=self._drive, daemon=True)
        self.thread.start()

    def _drive(self) -> None:
        """Keep a window of remember calls in flight; each answer is an acknowledgement."""
        try:
            self.server.initialize()
            pending: set[int] = set()
            i = 0
            while True:
                while len(pending) < 8:
                    pending.add(self.server.call_tool("remember", {
                        "content": content_for(self.label, i), "tags": [self.label],
                        "linked_entities": [f"{self.label}.py"]}))
                    i += 1
                message = self.server.read()
                if message is None:
                    break
                rid = message.get("id")
                if rid in pending and "method" not in message:
                    pending.discard(rid)
                    error = tool_error(message)
                    if error is not None:
                        self.failures.append(error)
                    else:
                        self.ack(message["result"]["structuredContent"]["id"])
        except (OSError, EOFError, ValueError):
            pass  # the kill closed the pipes
        finally:
            self.finished.set()

    def kill(self) -> None:
        self.server.kill()

    def collect(self) -> None:
        self.thread.join(DEADLINE)
        text = self.server.stderr
        if "Traceback" in text or LOCKED.search(text):
            self.failures.append(f"stderr: {text[-300:]}")


class _HookVictim(_Victim):
    """Stop hooks one after another; a hook that exited 0 and quiet has acknowledged."""

    def __init__(self, env: dict[str, str], project: Path, tmp: Path, label: str) -> None:
        super().__init__()
        self.env, self.project, self.label = env, project, label
        self.session = f"{label}-session"
        self.transcript = tmp / f"{label}.jsonl"
        write_transcript(self.transcript, self.session, str(project),
                         f"What did we change in the {label} export job?")
        self.current: subprocess.Popen[bytes] | None = None
        self.stopping = False
        self.thread = threading.Thread(target=self._drive, daemon=True)
        self.thread.start()

    def _drive(self) -> None:
        i = 0
        while True:
            reply = reply_for(self.label, i)
            payload = stop_payload(self.session, str(self.project), self.transcript, reply)
            with self.lock:
                if self.stopping:
                    break
                self.current = subprocess.Popen(
                    pma("hook", "stop"), cwd=self.project, env=self.env,
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            proc = self.current
            try:
                out, err = proc.communicate(json.dumps(payload).encode(), timeout=DEADLINE)
            except (OSError, ValueError):
                break
            if proc.returncode == 0 and not out and not err.strip():
                self.ack(reply=reply)
            elif proc.returncode != -9:
                self.failures.append(f"hook {i}: exit {proc.returncode} {err[-200:]!r}")
            i += 1
        self.finished.set()

    def kill(self) -> None:
        with self.lock:
            self.stopping = True
            if self.current is not None and self.current.poll() is None:
                self.current.kill()

    def collect(self) -> None:
        self.thread.join(DEADLINE)


def run_crashes(tmp: Path, kills: int, seed: int,
                progress: Callable[[str], None] | None = None,
                store: Settings | None = None) -> CrashReport:
    """Start a writer, SIGKILL it at a random moment, check the file; `kills` times.

    The database accumulates across rounds, so every later round also re-checks what earlier
    rounds acknowledged. Victims rotate: a MemoryService writer, a stdio server with calls in
    flight, a bulk importer (one transaction per batch) and a chain of stop hooks (whose
    auto-GC also runs once the namespace is large).
    """
    rng = random.Random(seed)
    report = CrashReport()
    project = tmp / "project"
    project.mkdir(parents=True, exist_ok=True)
    db, where, env = _place(tmp, "crash.db", store)
    namespace = str(project)
    acknowledged: set[str] = set()
    replies: set[str] = set()
    for round_no in range(kills):
        kind = VICTIMS[round_no % len(VICTIMS)]
        label = f"r{round_no}{kind}"
        victim: _Victim
        if kind in ("writer", "import"):
            victim = _WriterVictim(env, db, namespace, label, "add" if kind == "writer"
                                   else "import")
        elif kind == "server":
            victim = _ServerVictim(env, project, label)
        else:
            victim = _HookVictim(env, project, tmp, label)
        early = rng.random() < 0.15
        if early:  # anywhere from interpreter start to the first writes (open, migrate)
            time.sleep(rng.uniform(0.0, 0.8))
        else:
            victim.first_ack.wait(DEADLINE)
            time.sleep(rng.uniform(0.0, 0.4))
        if not victim.first_ack.is_set():
            report.killed_before_first_ack += 1
        victim.kill()
        victim.collect()
        report.kills += 1
        report.victims[kind] += 1
        report.failures += [f"round {round_no} {kind}: {f}" for f in victim.failures]
        acknowledged.update(victim.acks)
        replies.update(victim.replies)

        verdict = checks.integrity(where) if checks.exists(where) else "ok"
        if verdict != "ok":
            report.corrupt.append(f"round {round_no}: {verdict[:300]}")
            break
        if checks.has_schema(where):
            stored = checks.memory_ids(where)
            lost = sorted(acknowledged - stored)
            saved = {saved_reply(c) for c in checks.contents(where)}
            lost += sorted(r[:40] for r in replies - saved)
            report.lost += [f"round {round_no}: {x}" for x in lost]
            result = checks.consistency(where)
            if not result.ok:
                report.inconsistent.append(f"round {round_no}: {result!r}"[:500])
            report.lineage_missing += sorted(stored - checks.created_ids(where))
            report.final_memories = len(stored)
        elif acknowledged or replies:
            report.lost.append(f"round {round_no}: the schema itself is gone")
        if progress is not None:
            progress(f"kill {round_no + 1}/{kills} ({kind}{', early' if early else ''}): "
                     f"{len(victim.acks) + len(victim.replies)} acknowledged this round, "
                     f"{len(acknowledged) + len(replies)} in total")
        if report.lost or report.inconsistent or report.lineage_missing:
            break
    report.acknowledged = len(acknowledged) + len(replies)
    return report
