"""Core latency: search p50/p95 at 1k/10k/100k memories beside the seed's method, add p50.

The seed's method (measured in the same run, over the same texts): fit a fresh scikit-learn
TfidfVectorizer over every candidate on each query, cosine against the query, composite score,
top-k. Ours: MemoryService.search (FTS5 BM25 candidates + composite + access bump).

    uv run python benchmarks/bench_core.py [--sizes 1000,10000,100000] [--queries 200]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.corpus import Corpus
from pma_mcp.config import Settings
from pma_mcp.core.budget import WordEstimate
from pma_mcp.core.models import Memory
from pma_mcp.core.scoring import Weights, breakdown
from pma_mcp.service import MemoryService

NAMESPACE = "/bench/project"
BATCH = 5_000


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def seed_search(memories: list[Memory], query: str, now: float, k: int = 5) -> list[str]:
    """The seed's Retriever: fresh TF-IDF matrix per query, then composite re-rank."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import cosine_similarity

    vectorizer = TfidfVectorizer()
    matrix = vectorizer.fit_transform([m.content for m in memories])
    sims = cosine_similarity(vectorizer.transform([query]), matrix)[0]
    weights = Weights()
    scored = sorted(
        ((breakdown(m, now, weights, float(s)).composite, m.id)
         for m, s in zip(memories, sims, strict=True)),
        reverse=True,
    )
    return [memory_id for _, memory_id in scored[:k]]


async def run_size(size: int, queries: int, seed_queries: int, workdir: Path) -> None:
    corpus = Corpus(seed=size)
    settings = Settings(db_path=workdir / f"bench-{size}.db", namespace=NAMESPACE)
    now = time.time()
    async with await MemoryService.open(settings, counter=WordEstimate()) as svc:
        memories = list(corpus.memories(size, NAMESPACE, now))
        for start in range(0, size, BATCH):
            await svc.store.insert_many(memories[start:start + BATCH], skip_existing=False)
        texts = [corpus.query() for _ in range(queries)]
        for q in texts[:10]:  # warm the page cache and statement cache
            await svc.search(q, limit=5)
        ours = []
        for q in texts:
            t = time.perf_counter()
            await svc.search(q, limit=5)
            ours.append((time.perf_counter() - t) * 1000)

        seed = []
        for q in texts[:seed_queries]:
            t = time.perf_counter()
            seed_search(memories, q, now)
            seed.append((time.perf_counter() - t) * 1000)

        adds = []
        for i in range(200):
            text = f"{corpus.sentence()} fresh {i}"
            t = time.perf_counter()
            await svc.add(text, importance=0.5, tags=["bench"])
            adds.append((time.perf_counter() - t) * 1000)

    o50, o95 = statistics.median(ours), percentile(ours, 0.95)
    s50, s95 = statistics.median(seed), percentile(seed, 0.95)
    print(f"{size:>7,} memories | search p50 {o50:7.2f} ms  p95 {o95:7.2f} ms | "
          f"seed TF-IDF p50 {s50:8.1f} ms  p95 {s95:8.1f} ms | "
          f"speed-up p50 {s50 / o50:6.1f}x | add p50 {statistics.median(adds):5.2f} ms "
          f"p95 {percentile(adds, 0.95):5.2f} ms")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed-queries", type=int, default=20)
    args = parser.parse_args()
    import sklearn  # import cost kept out of the seed's per-query timing

    print(f"scikit-learn {sklearn.__version__}; queries per size: {args.queries} "
          f"(seed method: {args.seed_queries}); top-k 5")
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            await run_size(size, args.queries, args.seed_queries, Path(tmp))


if __name__ == "__main__":
    asyncio.run(main())
