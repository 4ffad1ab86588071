"""Whole-process latency of the Claude Code hooks, beside a seed-style hook in the same run.

    uv run python benchmarks/bench_hooks.py [--sizes 10000 100000] [--runs 40]
        [--backend sqlite|postgres|both] [--database-url URL]

With --backend postgres (or both) our hooks run against a PostgreSQL store holding the same
memories (a fresh schema, see benchmarks/places.py); the seed-style baseline always reads its
SQLite copy, as the seed did.

For each store size it builds one database of realistic developer-conversation memories (bulk
insert through the repository, so the FTS index and labels are real), copies it for the
baseline, then times `pma-mcp hook user-prompt-submit` and `pma-mcp hook stop` as Claude Code
runs them: a fresh process, hook JSON on stdin, a transcript JSONL file on disk.

The baseline is what the seed's scripts/memory_hook.py and save_hook.py did: import
scikit-learn, load every memory of the namespace (project, then "default"), fit a TfidfVectorizer
and rank by cosine + composite score; on save, insert and run a full GC pass over the namespace.
Runs alternate between the two so machine noise hits both alike. Timings are wall-clock
milliseconds from spawn to exit; the ratio is baseline p50 / pma-mcp p50.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import places
from benchmarks.corpus import store, store_in
from pma_mcp.core.budget import WordEstimate
from pma_mcp.core.models import Memory, MemoryType, content_hash

PROJECT = "/home/dev/acme-api"
GLOBAL = "default"
BATCH = 5_000
WARMUP = 2
TARGETS_MS = {("user-prompt-submit", 10_000): 120, ("user-prompt-submit", 100_000): 250,
              ("stop", 10_000): 250}

# ------------------------------------------------------------------ corpus

COMPONENTS = """export job, billing API, auth service, session store, payment webhook, search
index, upload worker, email queue, rate limiter, feature flags, admin dashboard, metrics
pipeline, cache layer, migration runner, CSV importer, PDF renderer, notification service,
audit log, GraphQL gateway, websocket server, cron scheduler, retry policy, connection pool,
invoice generator, user profile page, S3 bucket policy, Docker build, CI pipeline, Terraform
module, Kubernetes deployment, nginx config, Postgres replica, Redis cluster, Kafka consumer,
OAuth callback, password reset flow, onboarding wizard, dark mode toggle, i18n bundle, sitemap
generator""".replace("\n", " ").split(", ")
PROBLEMS = """times out, leaks memory, returns 500, deadlocks under load, drops messages, double
charges customers, logs secrets, blocks the event loop, ignores the retry budget, serialises
dates in local time, breaks on unicode names, runs twice after deploys, exhausts file
descriptors, reads stale config, loses the trace id, fails the health check, overflows the
queue, rejects valid tokens, caches errors, sorts by the wrong column""".replace(
    "\n", " ").split(", ")
FIXES = """capped retries at five with jitter, moved the call behind a circuit breaker, added an
index on (tenant_id, created_at), switched to a streaming parser, pinned the client library,
made the job idempotent with a dedupe key, wrapped the writes in one transaction, moved the
secret to the vault, added a timeout of 30 seconds, replaced the global with dependency
injection, converted timestamps to UTC at the boundary, batched the inserts by 500, raised the
pool size to 20, added a regression test, split the handler into two functions, used a
read-through cache with a 60 second TTL""".replace("\n", " ").split(", ")
RULES = """always run the linter before committing, never call the payment API from tests, prefer
dataclasses over dicts for records, use UTC everywhere, keep handlers under 50 lines, write the
migration and its rollback together, tag releases with semver, review SQL by EXPLAIN first,
log with structured fields only, keep secrets out of the repository""".replace(
    "\n", " ").split(", ")
FILLER = """we looked at the logs and the trace and the config in staging before touching prod;
the root cause was subtle; tests now cover the edge case; the metrics dashboard confirms the
change; a follow-up ticket tracks the cleanup; the team agreed in standup; performance
improved noticeably; the old code path is deprecated; documentation updated in the wiki;
rollout behind a flag to ten percent first""".replace("\n", " ").split("; ")


def _identifier(rng: random.Random) -> str:
    stem = rng.choice(["parse", "load", "sync", "render", "validate", "fetch", "flush", "build"])
    noun = rng.choice(["invoice", "order", "user", "report", "token", "batch", "event", "row"])
    return f"{stem}_{noun}_{rng.randint(1, 9_999)}"


def exchange_text(rng: random.Random) -> str:
    """One saved exchange: a question about a component, an answer with a cause and a fix."""
    comp, problem, fix = rng.choice(COMPONENTS), rng.choice(PROBLEMS), rng.choice(FIXES)
    ident, path = _identifier(rng), f"src/{rng.choice(COMPONENTS).split()[0].lower()}.py"
    kind = rng.random()
    if kind < 0.15:
        return f"Rule for this project: {rng.choice(RULES)}; see {path} ({ident})."
    extra = " ".join(rng.sample(FILLER, k=rng.randint(1, 3)))
    return (
        f"User: why does the {comp} {problem}? It started after ticket {rng.randint(100, 9999)}.\n"
        f"Assistant: The {comp} {problem} because {ident} in {path} "
        f"{rng.choice(PROBLEMS)} when the {rng.choice(COMPONENTS)} is slow. I {fix}; {extra}."
    )


def prompt_text(rng: random.Random) -> str:
    comp, problem = rng.choice(COMPONENTS), rng.choice(PROBLEMS)
    return rng.choice([
        f"The {comp} {problem} again in production, what did we change last time?",
        f"Can you check why the {comp} {problem}? Users are complaining.",
        f"Refactor the {comp} so it no longer {problem} and add a test.",
        f"What is our convention for the {comp}?",
    ])


def memories(n: int, rng: random.Random, now: float) -> Iterator[Memory]:
    counter = WordEstimate()
    tiers = (MemoryType.WORKING, MemoryType.EPISODIC, MemoryType.EPISODIC, MemoryType.SEMANTIC,
             MemoryType.SEMANTIC, MemoryType.ARCHIVED)
    for i in range(n):
        text = f"{exchange_text(rng)} [{i}]"
        when = datetime.fromtimestamp(now - rng.uniform(0, 60 * 86_400), tz=UTC)
        yield Memory(
            id=uuid.UUID(int=rng.getrandbits(128)).hex,
            namespace=GLOBAL if i % 20 == 0 else PROJECT,
            content=text, memory_type=rng.choice(tiers), importance=round(rng.random(), 2),
            tags=["session", "auto-saved"] if text.startswith("User:") else ["rule"],
            token_count=counter.count(text), access_count=rng.randint(0, 6),
            created_at=when, accessed_at=when, session_id=f"s{i // 40}",
            content_hash=content_hash(text),
        )


async def build(path: Path, n: int) -> None:
    await store(str(path), memories(n, random.Random(n), time.time()), BATCH)


# ------------------------------------------------------------ seed-style hooks

SEED_COMMON = r'''
import json, math, sqlite3, sys, time
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics.pairwise import cosine_similarity

W = (0.4, 0.3, 0.2, 0.1)

def composite(row, now, sem=0.0):
    age = max(0.0, (now - row["created_at"]) / 3600.0)
    acc = min(math.log1p(row["access_count"]) / 10.0, 1.0)
    return W[0] * sem + W[1] * row["importance"] + W[2] * math.exp(-0.1 * age) + W[3] * acc

def namespace_rows(conn, ns):
    return conn.execute("SELECT id, content, importance, created_at, accessed_at, "
                        "access_count, memory_type, token_count FROM memories "
                        "WHERE namespace = ?", (ns,)).fetchall()

payload = json.loads(sys.stdin.read())
conn = sqlite3.connect(sys.argv[1])
conn.row_factory = sqlite3.Row
now = time.time()
ns = payload.get("cwd") or "default"
'''

SEED_PROMPT = SEED_COMMON + r'''
def search(query, rows, limit=5):
    if not rows:
        return []
    vec = TfidfVectorizer()
    matrix = vec.fit_transform([r["content"] for r in rows])
    sims = cosine_similarity(vec.transform([query]), matrix)[0]
    scored = sorted(((composite(r, now, float(s)), r) for r, s in zip(rows, sims)),
                    key=lambda t: t[0], reverse=True)
    return scored[:limit]

lines = []
for space, budget in ((ns, 1400), ("default", 600)):
    used = 0
    for score, row in search(payload["prompt"], namespace_rows(conn, space)):
        if used + row["token_count"] <= budget:
            used += row["token_count"]
            lines.append(f"- [{row['memory_type']}] {row['content']}")
if lines:
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                             "additionalContext": "\n".join(lines)[:10000]}}))
'''

SEED_STOP = SEED_COMMON + r'''
import uuid, hashlib
text = payload.get("last_assistant_message") or ""
if len(text) >= 120:
    conn.execute("INSERT INTO memories (id, namespace, content, memory_type, importance, "
                 "token_count, created_at, accessed_at, content_hash, session_id) "
                 "VALUES (?, ?, ?, 'episodic', 0.5, ?, ?, ?, ?, ?)",
                 (uuid.uuid4().hex, ns, text, math.ceil(len(text.split()) * 1.3), now, now,
                  hashlib.sha256(text.encode()).hexdigest(), payload.get("session_id")))
    conn.commit()
    rows = namespace_rows(conn, ns)
    if len(rows) > 80:  # the seed's GC: a full pass on every auto-save
        order = ["working", "episodic", "semantic", "archived"]
        max_idle = {"working": 4.0, "episodic": 72.0, "semantic": 720.0}
        updates = []
        for r in rows:
            s, tier = composite(r, now), r["memory_type"]
            idle = (now - r["accessed_at"]) / 3600.0
            i = order.index(tier)
            if tier in max_idle and idle > max_idle[tier] and s <= 0.25:
                updates.append((order[i + 1], r["id"]))
            elif s >= 0.45 and i > 0:
                updates.append((order[i - 1], r["id"]))
            elif s < 0.10 and tier != "archived":
                updates.append(("archived", r["id"]))
        conn.executemany("UPDATE memories SET memory_type = ? WHERE id = ?", updates)
        conn.commit()
'''


# --------------------------------------------------------------------- timing


@dataclass
class Timing:
    """Wall-clock and CPU (user + system of the child) milliseconds per run."""

    wall: list[float]
    cpu: list[float]

    @property
    def p50(self) -> float:
        return statistics.median(self.wall)

    @property
    def p95(self) -> float:
        ordered = sorted(self.wall)
        return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]

    @property
    def cpu50(self) -> float:
        return statistics.median(self.cpu)


def timed(cmd: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, float, bytes]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, input=stdin, capture_output=True, env=env, check=False)
    elapsed = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[-1]} exited {proc.returncode}: {proc.stderr.decode()[-500:]}")
    return elapsed, cpu, proc.stdout


def write_transcript(path: Path, session: str, prompt: str, reply: str) -> None:
    base = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": PROJECT,
            "sessionId": session, "version": "2.1.250", "gitBranch": "main"}
    lines = [
        {"type": "file-history-snapshot", "messageId": str(uuid.uuid4()), "snapshot": {}},
        {**base, "type": "user", "message": {"role": "user", "content": prompt},
         "uuid": str(uuid.uuid4()), "timestamp": "2026-09-14T08:30:05.002Z"},
        {**base, "type": "assistant", "uuid": str(uuid.uuid4()),
         "message": {"id": "msg_x", "role": "assistant", "type": "message",
                     "content": [{"type": "text", "text": reply}]}},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")


def hook_command(python: str = sys.executable) -> list[str]:
    """`pma-mcp` of the venv `python` belongs to."""
    script = Path(python).with_name("pma-mcp")
    return [str(script)] if script.exists() else [python, "-m", "pma_mcp"]


async def build_in(place: places.Place, work: Path, n: int) -> tuple[Path, str | None]:
    """Our store of `n` memories at `place` (its SQLite file, and the PostgreSQL URL if the
    store lives there), and the seed's SQLite copy of the same memories."""
    seed_db = work / f"seed-{n}.db"
    await build(seed_db, n)
    if place.backend == "sqlite":
        ours_db = work / f"ours-{n}.db"
        shutil.copy(seed_db, ours_db)
        return ours_db, None
    settings = await place.keep(work, f"hooks_{n}")
    await store_in(settings, memories(n, random.Random(n), time.time()), BATCH)
    return settings.db_path, settings.database_url


def bench_size(
    n: int, runs: int, work: Path, place: places.Place
) -> list[tuple[str, int, Timing, Timing, str]]:
    seed_db = work / f"seed-{n}.db"
    started = time.perf_counter()
    ours_db, url = asyncio.run(build_in(place, work, n))
    print(f"[{place.label}] built {n:,} memories in {time.perf_counter() - started:.1f} s",
          flush=True)
    seed_prompt, seed_stop = work / "seed_prompt.py", work / "seed_stop.py"
    seed_prompt.write_text(SEED_PROMPT)
    seed_stop.write_text(SEED_STOP)
    # As on a user's machine: no PMA_/CLAUDE_ overrides, and bytecode caching on (a
    # PYTHONDONTWRITEBYTECODE environment would recompile every module on every run).
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PMA_", "CLAUDE_")) and k != "PYTHONDONTWRITEBYTECODE"}
    env["PMA_DB_PATH"] = str(ours_db)
    if url:
        env["PMA_DATABASE_URL"] = url
    rng = random.Random(1)
    results = []
    seed_runs = max(5, runs // 4) if n >= 100_000 else runs
    for event in ("user-prompt-submit", "stop"):
        ours, seed = Timing([], []), Timing([], [])
        injected = 0
        for i in range(-WARMUP, runs):
            session = str(uuid.uuid4())
            prompt = prompt_text(rng)
            transcript = work / f"{session}.jsonl"
            reply = exchange_text(rng).split("Assistant: ", 1)[-1] + f" (run {i}, {session})"
            write_transcript(transcript, session, prompt, reply)
            payload: dict[str, Any] = {
                "session_id": session, "transcript_path": str(transcript), "cwd": PROJECT,
                       "permission_mode": "default", "hook_event_name": "UserPromptSubmit"}
            if event == "user-prompt-submit":
                payload |= {"prompt": prompt}
            else:
                payload |= {"hook_event_name": "Stop", "stop_hook_active": False,
                            "last_assistant_message": reply, "background_tasks": []}
            stdin = json.dumps(payload).encode()
            wall, cpu, out = timed([*hook_command(), "hook", event], stdin, env)
            if i >= 0:
                ours.wall.append(wall)
                ours.cpu.append(cpu)
                injected += bool(out.strip())
            if i < seed_runs:
                script = seed_prompt if event == "user-prompt-submit" else seed_stop
                wall, cpu, _ = timed([sys.executable, str(script), str(seed_db)], stdin, env)
                if i >= 0:
                    seed.wall.append(wall)
                    seed.cpu.append(cpu)
            transcript.unlink()
        note = f"injected in {injected}/{runs} runs" if event == "user-prompt-submit" else (
            f"stdout empty in {runs - injected}/{runs} runs")
        results.append((event, n, ours, seed, note))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--runs", type=int, default=40)
    places.add_arguments(parser)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="pma-bench-hooks-") as tmp:
        try:
            for place in places.places(args):
                for n in args.sizes:
                    for event, size, ours, seed, note in bench_size(n, args.runs, Path(tmp),
                                                                    place):
                        rows.append((f"{event} [{place.backend}]", size, ours, seed, note))
        finally:
            asyncio.run(places.drop_kept())
    print(f"\n{'hook':<31}{'memories':>9}{'p50':>6}{'p95':>6}{'cpu50':>7}  |{'seed p50':>9}"
          f"{'p95':>6}{'cpu50':>7}  |{'ratio p50':>10}  target (wall ms)")
    for event, n, ours, seed, note in rows:
        target = TARGETS_MS.get((event.split(" [")[0], n))
        verdict = "" if target is None else (
            f"p50 ≤ {target}: {'met' if ours.p50 <= target else 'MISSED'}")
        print(f"{event:<31}{n:>9,}{ours.p50:>6.0f}{ours.p95:>6.0f}{ours.cpu50:>7.0f}  |"
              f"{seed.p50:>9.0f}{seed.p95:>6.0f}{seed.cpu50:>7.0f}  |{seed.p50 / ours.p50:>9.1f}x"
              f"  {verdict}")
        print(f"{'':<31}{note}; {len(ours.wall)} runs, seed-style {len(seed.wall)} runs")
    load = os.getloadavg()
    print(f"\nwall/cpu in ms; {os.cpu_count()} CPUs, load average {load[0]:.1f} {load[1]:.1f} "
          f"{load[2]:.1f} at the end (other processes inflate wall time, not cpu)")

if __name__ == "__main__":
    main()
