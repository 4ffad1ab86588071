"""PostgreSQL driver: asyncpg (the store's) beside psycopg 3 + psycopg_pool, in the same run.

    uv run --group bench python -m benchmarks.bench_drivers [--runs 15] [--queries 2000]

Against a real server: PMA_TEST_POSTGRES_URL's, else the tests' throwaway cluster
(tests/postgres.py), in a fresh schema that is dropped at the end.

- import: wall time of a fresh `python -c "import …"` minus that of `python -c pass` (median of
  --runs, the drivers alternating so noise hits both), and `-X importtime`'s cumulative figure
  for the driver's top modules. This is what every hook process pays.
- connect: open and close one connection (async API of both, as the store uses), median.
- SELECT by primary key over a 10k-row table: p50 / p95 of --queries single-row lookups on one
  connection, random ids; both drivers prepare the statement (asyncpg's statement cache,
  psycopg's prepare_threshold=0).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import asyncpg

from tests import postgres

ROWS = 10_000
IMPORTS = {
    "asyncpg": ["asyncpg"],
    "psycopg+pool": ["psycopg", "psycopg_pool"],
}


@dataclass
class Figures:
    import_ms: float = float("nan")
    importtime_ms: float = float("nan")
    connect_ms: float = float("nan")
    select_p50_ms: float = float("nan")
    select_p95_ms: float = float("nan")


def wall_ms(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return (time.perf_counter() - start) * 1000


def importtime_ms(modules: list[str]) -> float:
    """Sum of `-X importtime`'s cumulative microseconds for the top-level `modules`."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c",
                           "; ".join(f"import {m}" for m in modules)],
                          capture_output=True, text=True, check=True)
    total = 0
    for line in done.stderr.splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+(\d+) \| (\S+)$", line)
        if match and match.group(2) in modules:
            total += int(match.group(1))
    return total / 1000


def measure_imports(runs: int, available: list[str]) -> dict[str, tuple[float, float]]:
    samples: dict[str, list[float]] = {name: [] for name in available}
    base: list[float] = []
    for _ in range(runs):
        base.append(wall_ms("pass"))
        for name in available:
            samples[name].append(wall_ms("; ".join(f"import {m}" for m in IMPORTS[name])))
    baseline = statistics.median(base)
    return {name: (statistics.median(values) - baseline,
                   statistics.median(importtime_ms(IMPORTS[name]) for _ in range(5)))
            for name, values in samples.items()}


async def median_ms(work: Callable[[], Awaitable[Any]], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        await work()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def percentiles(times: list[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(times, n=100)
    return statistics.median(times), cuts[94]


async def fill(url: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("CREATE TABLE bench_memories (id bigint PRIMARY KEY, "
                           "namespace text NOT NULL, content text NOT NULL)")
        await conn.copy_records_to_table(
            "bench_memories", columns=["id", "namespace", "content"],
            records=[(i, "/home/dev/acme-api", f"memory {i}: capped retries at five")
                     for i in range(ROWS)])
        await conn.execute("ANALYZE bench_memories")
    finally:
        await conn.close()


async def bench_asyncpg(url: str, runs: int, ids: list[int]) -> tuple[float, float, float]:
    async def connect() -> None:
        conn = await asyncpg.connect(url)
        await conn.close()

    connect_ms = await median_ms(connect, runs)
    conn = await asyncpg.connect(url)
    try:
        sql = "SELECT id, content FROM bench_memories WHERE id = $1"
        for i in ids[:50]:  # warm the statement cache and the buffers
            await conn.fetchrow(sql, i)
        times = []
        for i in ids:
            start = time.perf_counter()
            row = await conn.fetchrow(sql, i)
            times.append((time.perf_counter() - start) * 1000)
            assert row is not None and row["id"] == i
    finally:
        await conn.close()
    return (connect_ms, *percentiles(times))


async def bench_psycopg(url: str, runs: int, ids: list[int]) -> tuple[float, float, float]:
    import psycopg

    async def connect() -> None:
        conn = await psycopg.AsyncConnection.connect(url)
        await conn.close()

    connect_ms = await median_ms(connect, runs)
    conn = await psycopg.AsyncConnection.connect(url, prepare_threshold=0, autocommit=True)
    try:
        sql = "SELECT id, content FROM bench_memories WHERE id = %s"
        for i in ids[:50]:
            await (await conn.execute(sql, (i,))).fetchone()
        times = []
        for i in ids:
            start = time.perf_counter()
            row = await (await conn.execute(sql, (i,))).fetchone()
            times.append((time.perf_counter() - start) * 1000)
            assert row is not None and row[0] == i
    finally:
        await conn.close()
    return (connect_ms, *percentiles(times))


def psycopg_available() -> bool:
    return subprocess.run([sys.executable, "-c", "import psycopg, psycopg_pool"],
                          capture_output=True, check=False).returncode == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="process starts / connects each")
    parser.add_argument("--queries", type=int, default=2000, help="primary-key lookups each")
    args = parser.parse_args()
    reason = postgres.skip_reason()
    if reason:
        sys.exit(reason.replace("PostgreSQL tests skipped", "no PostgreSQL server"))
    available = ["asyncpg"] + (["psycopg+pool"] if psycopg_available() else [])
    figures = {name: Figures() for name in IMPORTS}
    for name, (wall, cumulative) in measure_imports(args.runs, available).items():
        figures[name].import_ms, figures[name].importtime_ms = wall, cumulative
    rng = random.Random(7)
    ids = [rng.randrange(ROWS) for _ in range(args.queries)]
    with postgres.server_url("pma_bench") as server, postgres.fresh_schema(server) as url:
        asyncio.run(fill(url))
        runners = {"asyncpg": bench_asyncpg, "psycopg+pool": bench_psycopg}
        for name in available:
            f = figures[name]
            f.connect_ms, f.select_p50_ms, f.select_p95_ms = asyncio.run(
                runners[name](url, args.runs, ids))
    if "psycopg+pool" not in available:
        print("(psycopg not installed: `uv sync --group bench` for the comparison)")
    print(f"PostgreSQL driver, {ROWS:,} rows, {args.queries} lookups, {args.runs} runs "
          f"(Python {sys.version.split()[0]}, asyncpg {asyncpg.__version__})")
    print(f"  {'':<32}" + "".join(f"{name:>14}" for name in IMPORTS))
    rows = [("import, process wall − baseline", "import_ms"),
            ("import, -X importtime cumulative", "importtime_ms"),
            ("connect + close", "connect_ms"),
            ("SELECT by primary key, p50", "select_p50_ms"),
            ("SELECT by primary key, p95", "select_p95_ms")]
    for label, attr in rows:
        print(f"  {label:<32}" + "".join(f"{getattr(figures[n], attr):>11.2f} ms"
                                         for n in IMPORTS))


if __name__ == "__main__":
    main()
