"""Server-side time per page of `pma-mcp ui` on a large store (default 100k memories).

Builds a corpus (benchmarks/corpus.py; every 10th memory tagged auto-saved, as the hooks do),
starts the real `pma-mcp ui` process on it, requests each page several times and reads the
server's own `Server-Timing` header (time inside the app, without the network and the
browser). Baselines in the same run, same store: what the overview would cost by the
full-namespace path (`memory_stats`, every memory loaded and planned) and a full, unbounded
GC preview.

    uv run python benchmarks/bench_ui.py [--size 100000] [--repeat 7] [--keep DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import http.client
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

from benchmarks.corpus import Corpus
from pma_mcp.config import Settings
from pma_mcp.core.budget import WordEstimate
from pma_mcp.core.models import Browse
from pma_mcp.service import MemoryService

NAMESPACE = "/bench/project"
BATCH = 5_000


async def build(db: Path, size: int) -> tuple[str, str]:
    """The store (reused when it is there), and (a memory id from its middle, a query of
    words that memory holds) for the one-memory and search pages."""
    async with await MemoryService.open(Settings(db_path=db, namespace=NAMESPACE),
                                        counter=WordEstimate()) as svc:
        if await svc.count() == 0:
            now = time.time()
            memories = [
                made if i % 10 else dataclasses.replace(
                    made, tags=["session", "auto-saved"], metadata={"source": "hook:stop"})
                for i, made in enumerate(Corpus(seed=size).memories(size, NAMESPACE, now))
            ]
            for start in range(0, size, BATCH):
                await svc.store.insert_many(memories[start:start + BATCH], skip_existing=False)
        middle = (await svc.browse(Browse(namespace=NAMESPACE), before=size // 2,
                                   limit=1)).memories[0]
    return middle.id, " ".join(middle.content.split()[:3])


async def baselines(db: Path, repeat: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"memory_stats (full pass)": [], "gc_preview (full)": []}
    async with await MemoryService.open(Settings(db_path=db, namespace=NAMESPACE),
                                        counter=WordEstimate()) as svc:
        for _ in range(repeat):
            started = time.perf_counter()
            await svc.stats()
            out["memory_stats (full pass)"].append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            await svc.gc_preview()
            out["gc_preview (full)"].append((time.perf_counter() - started) * 1000)
    return out


def server_ms(port: int, token: str, path: str) -> float:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        conn.request("GET", path, headers={"Host": f"127.0.0.1:{port}",
                                           "Cookie": f"pma_ui_{port}={token}"})
        resp = conn.getresponse()
        resp.read()
        if resp.status != 200:
            raise RuntimeError(f"{path}: HTTP {resp.status}")
        timing = resp.getheader("server-timing") or ""
    finally:
        conn.close()
    found = re.search(r"dur=([0-9.]+)", timing)
    if found is None:
        raise RuntimeError(f"{path}: no Server-Timing header")
    return float(found[1])


def pages(memory_id: str, query: str, deep_before: int) -> dict[str, str]:
    """The pages to time; "no match" filters read the whole namespace's index or rows."""
    ns = {"ns": NAMESPACE}
    day = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 30 * 86_400))
    return {
        "overview": "/?" + urlencode(ns),
        "memories, first page": "/memories?" + urlencode(ns),
        "memories, page ~1000": "/memories?" + urlencode({**ns, "before": deep_before}),
        "memories, tag filter": "/memories?" + urlencode({**ns, "tag": "auto-saved"}),
        "memories, tier+date filter": "/memories?" + urlencode(
            {**ns, "tier": "semantic", "since": "2020-01-01"}),
        "memories, one-day range": "/memories?" + urlencode(
            {**ns, "since": day, "until": day}),
        "memories, source: no match": "/memories?" + urlencode({**ns, "source": "nowhere"}),
        "search (50 results)": "/memories?" + urlencode({**ns, "q": query}),
        "one memory (inspect)": f"/memory/{memory_id}?" + urlencode(ns),
        "GC preview (bounded window)": "/gc?" + urlencode(ns),
    }


def report(name: str, samples: list[float]) -> None:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    print(f"  {name:<30} p50 {statistics.median(samples):9.1f} ms   p95 {p95:9.1f} ms   "
          f"(n={len(samples)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="build/reuse the store in this folder")
    args = parser.parse_args()
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="bench-ui-"))
    workdir.mkdir(parents=True, exist_ok=True)
    db = workdir / f"ui-{args.size}.db"
    started = time.perf_counter()
    memory_id, query = asyncio.run(build(db, args.size))
    print(f"store: {args.size:,} memories in {db} (ready in {time.perf_counter() - started:.0f} s)")
    env = {"PMA_DB_PATH": str(db), "PMA_NAMESPACE": NAMESPACE, "PATH": "/usr/bin:/bin"}
    proc = subprocess.Popen([sys.executable, "-m", "pma_mcp", "ui", "--port", "0"], env=env,
                            stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        found = re.search(r"127\.0\.0\.1:(\d+)/\?token=([\w-]+)", proc.stderr.readline())
        assert found, "pma-mcp ui printed no URL"
        port, token = int(found[1]), found[2]
        print(f"pma-mcp ui: server-side time per page (Server-Timing), {args.repeat} requests "
              "each after one warm-up request")
        for name, path in pages(memory_id, query, deep_before=args.size - 50 * 1000).items():
            server_ms(port, token, path)  # warm-up: first-use imports, page cache
            report(name, [server_ms(port, token, path) for _ in range(args.repeat)])
    finally:
        proc.terminate()
        proc.wait(10)
    print("baselines, same store, in-process service calls:")
    for name, samples in asyncio.run(baselines(db, max(1, args.repeat // 3))).items():
        report(name, samples)


if __name__ == "__main__":
    main()
