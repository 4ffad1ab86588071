"""Garbage-collector cost at a large store: `inspect` latency, `gc_preview` time, and how long
a concurrent `remember` waits while `gc_run` applies ~2,500 merges.

    uv run python -m benchmarks.bench_gc [--sizes 10000,100000] [--baseline-max 10000]
        [--samples 50] [--merges 2500] [--db-dir DIR] [--backend sqlite|postgres|both]

The store is one project namespace of the synthetic Zipf corpus (benchmarks.corpus, tiers
round-robin as imported, ages up to 90 days) with a near-duplicate rewording of every 20th
memory, bulk-inserted through the store's insert_many (on PostgreSQL, --backend, a fresh
schema per size, built each run). Printed per size:

- `inspect` p50/p95 over --samples random memories, as imported and after one `gc_run`
  (the steady state: tiers within capacity, most memories archived);
- `gc_preview` (merges included), once as imported;
- up to --baseline-max, the old method in the same run (`baseline_plan`: the namespace's
  whole plan with all-pairs TF-IDF over the newest 5,000 memories, which the old `inspect`
  computed for one memory too), and how many of its merges the lexical-neighbour rule finds.

Then the lock line (SQLite): `gc_run` applying --merges merges, while another connection stores a
memory every 20 ms; the longest `remember` wait with the plan in one transaction (before)
and in batches (now). Targets: inspect p50 ≤ 50 ms and gc_preview ≤ 2 s at 100k; no write
waits more than ~0.5 s behind GC.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from benchmarks import places
from benchmarks.corpus import Corpus, store, store_in
from benchmarks.locomo import machine, percentile
from pma_mcp.config import Settings
from pma_mcp.core import collector
from pma_mcp.core.budget import WordEstimate
from pma_mcp.core.models import GCPreview, Memory, MemoryType, MergePair, content_hash, to_datetime
from pma_mcp.service import MemoryService
from pma_mcp.store.base import GCBatching
from pma_mcp.store.sqlite.store import SQLiteStore

NAMESPACE = "/bench/gc"
DUPLICATE_EVERY = 20
OLD_WINDOW = 5_000
OLD_COSINE = 0.85


# ------------------------------------------------------------------ the store


def corpus_memories(size: int, now: float) -> Iterator[Memory]:
    """The corpus, with a reworded copy (one word dropped, one added) of every 20th memory."""
    rng = random.Random(size)
    source = Corpus(seed=size).memories(sys.maxsize, NAMESPACE, now)
    made = 0
    while made < size:
        memory = next(source)
        yield memory
        made += 1
        if made % DUPLICATE_EVERY == 0 and made < size:
            words = memory.content.split()
            words.pop(rng.randrange(len(words) - 1))
            words.insert(rng.randrange(len(words)), rng.choice(words))
            text = " ".join(words) + " again"
            yield replace(memory, id=uuid.UUID(int=rng.getrandbits(128)).hex, content=text,
                          content_hash=content_hash(text), importance=round(rng.random(), 3))
            made += 1


async def build(db: Path, size: int) -> None:
    await store(str(db), corpus_memories(size, time.time()))


# ------------------------------------------------------------------ the old method


def baseline_near_duplicates(
    memories: Sequence[Memory], scores: Mapping[str, float]
) -> list[MergePair]:
    """The old merge detection, for comparison only: all-pairs TF-IDF (sklearn, fitted on the
    newest 5,000 current memories), then a Python loop over every non-zero pair."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    current = [m for m in memories if m.superseded_by is None]
    window = sorted(current, key=lambda m: m.seq)[-OLD_WINDOW:]
    if len(window) < 2:
        return []
    vectorizer = TfidfVectorizer(sublinear_tf=True, ngram_range=(1, 2),
                                 token_pattern=r"(?u)\b\w+\b")
    matrix = vectorizer.fit_transform([m.content for m in window])
    similarity = (matrix @ matrix.T).tocoo()
    candidates = sorted(
        ((float(v), int(i), int(j))
         for i, j, v in zip(similarity.row, similarity.col, similarity.data, strict=True)
         if i < j and v >= OLD_COSINE),
        reverse=True,
    )
    gone: set[str] = set()
    keepers: set[str] = set()
    pairs = []
    for value, i, j in candidates:
        a, b = window[i], window[j]
        if a.id in gone or b.id in gone:
            continue
        keep, drop = (a, b) if (scores[a.id], a.seq) >= (scores[b.id], b.seq) else (b, a)
        if drop.id in keepers:
            continue
        pairs.append(MergePair(gone=drop, keep=keep, similarity=min(value, 1.0)))
        gone.add(drop.id)
        keepers.add(keep.id)
    return pairs


async def baseline_plan(service: MemoryService, now: float) -> GCPreview:
    """The old gc_preview, and the old inspect's cost for any one memory: the whole plan."""
    weights = service.settings.weights
    memories = await service.store.namespace_memories(NAMESPACE)
    scores = {m.id: collector.gc_score(m, now, weights).composite for m in memories}
    merges = baseline_near_duplicates(memories, scores)
    return collector.plan(NAMESPACE, memories, now, weights, merges=merges)


# ------------------------------------------------------------------ measurements


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f} ms"


async def plan_only(service: MemoryService) -> float:
    """collector.plan alone over the namespace's facts (target at 100k: 0.3 s)."""
    facts, _ = await service.store.gc_facts_and_sequences(NAMESPACE)
    gc.disable()
    try:
        start = time.perf_counter()
        plan = collector.plan(NAMESPACE, facts, time.time(), collector.WEIGHTS)
        took = time.perf_counter() - start
        del plan  # freed untimed, as the caller's
        return took
    finally:
        gc.enable()


async def time_inspect(service: MemoryService, ids: Sequence[str]) -> str:
    for memory_id in ids[:3]:
        await service.inspect(memory_id)
    times, cpu = [], []
    for memory_id in ids:
        t, c = time.perf_counter(), time.process_time()
        await service.inspect(memory_id)
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return (f"p50 {ms(statistics.median(times))}, p95 {ms(percentile(times, 0.95))} "
            f"(CPU p50 {ms(statistics.median(cpu))}) over {len(ids)}")


async def measure_size(settings: Settings, size: int, samples: int, baseline_max: int) -> None:
    async with await MemoryService.open(settings, counter=WordEstimate()) as service:
        total = await service.store.count(NAMESPACE)
        memories = {m.id: m for m in await service.store.namespace_memories(NAMESPACE)}
        ids = list(memories)
        sample = random.Random(3).sample(ids, min(samples, len(ids)))
        where = (f"PostgreSQL, {service.store.location}" if settings.database_url else
                 f"{settings.db_path.stat().st_size / 1e6:.0f} MB")
        print(f"\n{total:,} memories in one namespace ({where})")
        print(f"  inspect, as imported:     {await time_inspect(service, sample)}")
        t, c = time.perf_counter(), time.process_time()
        preview = await service.gc_preview()
        took, cpu = time.perf_counter() - t, time.process_time() - c
        print(f"  gc_preview:               {ms(took)} (CPU {ms(cpu)}; {preview.summary})")
        print(f"  collector.plan alone:     {ms(await plan_only(service))} (cyclic GC paused)")
        print(f"  merges of a reworded copy into its original: {planted(preview, memories)} "
              f"of {len(preview.to_merge)} (~{total // DUPLICATE_EVERY:,} planted)")
        if size <= baseline_max:
            t, c = time.perf_counter(), time.process_time()
            old = await baseline_plan(service, time.time())
            print(f"  baseline (old) gc_preview and per-inspect cost: "
                  f"{ms(time.perf_counter() - t)} (CPU {ms(time.process_time() - c)}; "
                  f"{len(old.to_merge)} merges)")
            new = {(d.memory_id, d.merge_into) for d in preview.to_merge}
            found = {frozenset((d.memory_id, d.merge_into)) for d in preview.to_merge}
            shared = sum(frozenset((d.memory_id, d.merge_into)) in found for d in old.to_merge)
            print(f"  merges: {len(new)} now, {len(old.to_merge)} old (newest {OLD_WINDOW:,} "
                  f"only), {shared} of the old pairs found now")
        await service.gc_run()
        ids = [m.id for m in await service.store.namespace_memories(NAMESPACE)]
        sample = random.Random(4).sample(ids, min(samples, len(ids)))
        print(f"  inspect, after one gc_run: {await time_inspect(service, sample)}")


def planted(preview: GCPreview, memories: Mapping[str, Memory]) -> int:
    """How many merges fold one of `corpus_memories`' reworded copies into its original (the
    two share the original's "#N"; any two other corpus memories never do)."""
    def number(memory_id: str | None) -> set[str]:
        return {w for w in memories[memory_id or ""].content.split() if w.startswith("#")}

    return sum(number(d.memory_id) == number(d.merge_into) for d in preview.to_merge)


# ------------------------------------------------------------------ lock waits


def duplicate_pairs(n: int, now: float) -> list[Memory]:
    out = []
    for i in range(n):
        text = f"deploy note {i}: service alpha{i} talks to beta{i * 7} over port {9000 + i}"
        for copy, importance in ((text, 0.6), (text + ".", 0.5)):
            out.append(Memory(
                id=uuid.uuid4().hex, namespace=NAMESPACE, content=copy,
                memory_type=MemoryType.EPISODIC, importance=importance,
                token_count=len(copy.split()), created_at=to_datetime(now),
                accessed_at=to_datetime(now), content_hash=content_hash(copy)))
    return out


async def longest_wait(db: Path, merges: int, batch: GCBatching) -> tuple[float, float, int]:
    """(longest remember wait, gc_run time, remembers) while gc_run applies `merges` merges."""
    repo = await SQLiteStore.open(str(db))
    try:
        await repo.insert_many(duplicate_pairs(merges, time.time()), skip_existing=False)
    finally:
        await repo.close()
    settings = Settings(db_path=db, namespace=NAMESPACE)
    async with (
        await MemoryService.open(settings, counter=WordEstimate()) as gc,
        await MemoryService.open(settings, counter=WordEstimate(),
                                 merge_near_duplicates=False) as writer,
    ):
        memories = await gc.store.namespace_memories(NAMESPACE)
        plan = await gc.gc_preview()
        by_id = {m.id: m for m in memories}
        done = asyncio.Event()
        waits: list[float] = []

        async def remember() -> None:
            i = 0
            while not done.is_set():
                t = time.perf_counter()
                await writer.add(f"concurrent remember {i} {uuid.uuid4().hex}",
                                 namespace="/bench/other")
                waits.append(time.perf_counter() - t)
                i += 1
                await asyncio.sleep(0.02)

        task = asyncio.create_task(remember())
        await asyncio.sleep(0.1)
        t = time.perf_counter()
        await gc.store.apply_gc(plan.changes(), by_id, time.time(), batch=batch)
        took = time.perf_counter() - t
        done.set()
        await task
    return max(waits), took, len(waits)


async def measure_locks(tmp: Path, merges: int) -> None:
    print(f"\nconcurrent remember while gc_run applies {merges:,} merges:")
    once = GCBatching(changes=sys.maxsize, seconds=float("inf"))
    for label, batch in (("one transaction (before)", once), ("batched (now)", GCBatching())):
        db = tmp / f"locks-{label[:3]}.db"
        wait, took, n = await longest_wait(db, merges, batch)
        print(f"  {label:<25} longest remember wait {ms(wait)} ({n} remembers), "
              f"gc applied in {took:.1f} s")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--baseline-max", type=int, default=10_000,
                        help="measure the old all-pairs method up to this size")
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--merges", type=int, default=2_500, help="0: skip the lock line")
    parser.add_argument("--db-dir", type=Path, default=None,
                        help="keep the built stores here and reuse them (each run copies them, "
                        "as gc_run changes the store)")
    places.add_arguments(parser)
    args = parser.parse_args()
    print(machine())
    with tempfile.TemporaryDirectory(prefix="pma-gc-") as tmp:
        where = args.db_dir or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        sizes = [int(s) for s in args.sizes.split(",") if s]
        for place in places.places(args):
            if place.backend == "sqlite":
                await measure_sqlite(where, sizes, args)
                continue
            for size in sizes:  # built afresh each run (no file to keep)
                async with place.settings(Path(tmp), f"gc{size}", namespace=NAMESPACE) as at:
                    t = time.perf_counter()
                    await store_in(at, corpus_memories(size, time.time()))
                    await places.analyze(at)
                    print(f"\nPostgreSQL: built {size:,} in {time.perf_counter() - t:.0f} s")
                    await measure_size(at, size, args.samples, args.baseline_max)
        if args.merges:
            await measure_locks(Path(tmp), args.merges)


async def measure_sqlite(where: Path, sizes: Sequence[int], args: argparse.Namespace) -> None:
    """The SQLite stores, reused from --db-dir when an earlier run kept them."""
    for size in sizes:
        db = where / f"gc-{size}.db"
        pristine = where / f"gc-{size}.pristine.db"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        if pristine.exists():  # kept by an earlier run with --db-dir
            shutil.copyfile(pristine, db)
            print(f"\nstore of {size:,} reused from {pristine}")
        else:
            t = time.perf_counter()
            await build(db, size)
            print(f"\nbuilt {size:,} in {time.perf_counter() - t:.0f} s")
            if args.db_dir:
                shutil.copyfile(db, pristine)
        await measure_size(Settings(db_path=db, namespace=NAMESPACE), size, args.samples,
                           args.baseline_max)


if __name__ == "__main__":
    asyncio.run(main())
