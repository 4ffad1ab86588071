"""Concurrent writers against one PostgreSQL server, with its connections cut under them.

    uv run python -m benchmarks.pg_writers [--processes 8] [--writes 500] [--cuts-every 0.5]
        [--database-url URL]        # default: PMA_TEST_POSTGRES_URL

--processes OS processes, each with its own PostgresStore, write --writes memories into one
project namespace (every tenth a fact all processes write, so dedupe is contended) in shared
sessions. Meanwhile the parent cuts a random pma-mcp connection every --cuts-every seconds
with pg_terminate_backend (what a server restart does to a client). A writer retries a call
that failed with a retryable error (StorageUnavailableError, StorageBusyError) and records a
write as acknowledged only when the call returned. Then: every acknowledged memory must be stored,
each shared fact stored once, and the store's consistency check clean. Prints the figures
and exits 1 on any loss. Runs in a fresh schema, dropped afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path

import asyncpg

from benchmarks.places import place
from pma_mcp.core.errors import StorageBusyError, StorageUnavailableError
from pma_mcp.core.models import Memory, MemoryType, content_hash, to_datetime
from pma_mcp.store.postgres.store import PostgresStore

NAMESPACE = "/bench/team-project"
SHARED_EVERY = 10
RETRIES = 50


def memory(content: str, session: str) -> Memory:
    now = time.time()
    return Memory(id=uuid.uuid4().hex, namespace=NAMESPACE, content=content,
                  memory_type=MemoryType.EPISODIC, importance=0.5,
                  token_count=len(content.split()), created_at=to_datetime(now),
                  accessed_at=to_datetime(now), session_id=session,
                  content_hash=content_hash(content))


async def child(url: str, k: int, writes: int, out: Path) -> tuple[int, int]:
    """Write `writes` memories, one acknowledged id per line in `out`; (retries, opens)."""
    retries = opens = 0
    store: PostgresStore | None = None
    with out.open("w", encoding="utf-8") as acks:
        for i in range(writes):
            content = (f"shared fact {i} every writer stores" if i % SHARED_EVERY == 0
                       else f"writer {k} wrote note {i} about topic {i % 17}")
            for _ in range(RETRIES):
                try:
                    if store is None:
                        store = await PostgresStore.open(url)
                        opens += 1
                    stored, _ = await store.insert(memory(content, f"session-{i % 5}"))
                    break
                except (StorageUnavailableError, StorageBusyError):
                    retries += 1
                    await asyncio.sleep(0.02)
            else:
                raise SystemExit(f"writer {k}: write {i} failed {RETRIES} times")
            acks.write(f"{stored.id}\t{content}\n")
            acks.flush()
    if store is not None:
        await store.close()
    return retries, opens


async def cutter(server: str, label: str, every: float, stop: asyncio.Event) -> int:
    """Terminate a random backend of the writers (application_name `label`) every `every`
    seconds until `stop`; how many."""
    cuts = 0
    conn = await asyncpg.connect(server)
    rng = random.Random(5)
    try:
        while not stop.is_set():
            await asyncio.sleep(every)
            pids = [int(r[0]) for r in await conn.fetch(
                "SELECT pid FROM pg_stat_activity WHERE application_name = $1", label)]
            if pids:
                await conn.execute("SELECT pg_terminate_backend($1)", rng.choice(pids))
                cuts += 1
    finally:
        await conn.close()
    return cuts


async def parent(args: argparse.Namespace) -> int:
    where = place("postgres", args.database_url)
    assert where.server is not None
    with tempfile.TemporaryDirectory(prefix="pma-pgwriters-") as tmp:
        async with where.settings(Path(tmp), "writers", namespace=NAMESPACE) as settings:
            assert settings.database_url is not None
            label = f"pma-bench-writers-{uuid.uuid4().hex[:8]}"
            url = f"{settings.database_url}&application_name={label}"
            await (await PostgresStore.open(url)).close()  # migrate once, before the race
            stop = asyncio.Event()
            cuts = asyncio.create_task(cutter(where.server, label, args.cuts_every, stop))
            started = time.perf_counter()
            procs = [await asyncio.create_subprocess_exec(
                sys.executable, "-m", "benchmarks.pg_writers", "--child", str(k), "--url", url,
                "--writes", str(args.writes), "--out", str(Path(tmp) / f"acks-{k}.tsv"),
                stdout=asyncio.subprocess.PIPE) for k in range(args.processes)]
            outputs = [await p.communicate() for p in procs]
            elapsed = time.perf_counter() - started
            stop.set()
            n_cuts = await cuts
            failed = [k for k, p in enumerate(procs) if p.returncode != 0]
            retries = sum(int(o[0].split()[0]) for o in outputs if o[0].strip())
            acked: dict[str, str] = {}
            for k in range(args.processes):
                path = Path(tmp) / f"acks-{k}.tsv"
                for line in path.read_text(encoding="utf-8").splitlines():
                    memory_id, content = line.split("\t", 1)
                    acked[memory_id] = content
            store = await PostgresStore.open(url)
            try:
                stored = {m.id: m.content for m in await store.namespace_memories(NAMESPACE)}
                consistency = await store.check_consistency()
            finally:
                await store.close()
    lost = [i for i in acked if i not in stored]
    shared = [c for c in stored.values() if c.startswith("shared fact")]
    expected_shared = len(range(0, args.writes, SHARED_EVERY))
    print(f"{args.processes} processes x {args.writes} writes in {elapsed:.1f} s; "
          f"{n_cuts} connections cut, {retries} retried calls")
    print(f"acknowledged {len(acked)} distinct memories, stored {len(stored)}, lost {len(lost)}; "
          f"shared facts stored {len(shared)} (expected {expected_shared}); "
          f"consistency {'ok' if consistency.ok else consistency}; failed writers {failed}")
    ok = (not lost and not failed and consistency.ok and len(shared) == expected_shared
          and len(stored) == len(acked))
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--writes", type=int, default=500)
    parser.add_argument("--cuts-every", type=float, default=0.5, metavar="SECONDS")
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--url", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        retries, opens = asyncio.run(child(args.url, args.child, args.writes, args.out))
        print(retries, opens)
        return 0
    os.environ.setdefault("PMA_LOG_LEVEL", "WARNING")
    return asyncio.run(parent(args))


if __name__ == "__main__":
    sys.exit(main())
