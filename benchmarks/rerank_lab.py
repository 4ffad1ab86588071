"""Offline re-ranking lab: recall's first-pass pool for every LoCoMo question, dumped once, then
re-rankers evaluated over it in seconds (no store, no server).

    uv run python -m benchmarks.rerank_lab --data locomo10.json --dump pool.json   # once
    uv run python -m benchmarks.rerank_lab --pool pool.json                        # seconds

The dump stores every conversation as benchmarks/locomo.py does (one store, in process), then
asks each question with `search(limit=POOL, touch=False)` and keeps, per candidate, what a
re-ranker above the store can see: content, session id, speaker, semantic_similarity and the
first-pass order. The pool file is derived from LoCoMo (CC BY-NC 4.0): keep it out of the
repository. Evaluation prints R@1/R@5/R@10 overall and per category for each variant, and for
anything with a chosen constant the figure with that constant chosen by leave-one-conversation-
out (chosen on four conversations, scored on the fifth), so the gain shown is not the fit.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.locomo import CATEGORIES, KS, ServiceBackend, load
from pma_mcp.config import Settings
from pma_mcp.core.scoring import Weights, relevance_rank
from pma_mcp.service import MemoryService

POOL = 50


# ------------------------------------------------------------------ dump


async def dump(data: Path, out: Path) -> None:
    convs = load(data)
    weights = Weights()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="pma-lab-") as tmp:
        settings = Settings(db_path=Path(tmp) / "lab.db", namespace="locomo")
        async with await MemoryService.open(settings) as service:
            backend = ServiceBackend(service)
            for conv in convs:
                for turn in conv.turns:
                    await backend.remember(conv, turn)
            for conv in convs:
                for q in conv.questions:
                    found = await service.search(q.text, namespace=conv.namespace, limit=POOL,
                                                 include_global=False, touch=False)
                    rows.append({
                        "conv": conv.sample_id, "question": q.text, "category": q.category,
                        "evidence": sorted(q.evidence),
                        "pool": [{"dia_id": str(r.memory.metadata.get("dia_id")),
                                  "session": r.memory.session_id,
                                  "content": r.memory.content,
                                  "seq": r.memory.seq,
                                  "semantic": r.breakdown.semantic_similarity,
                                  "order": relevance_rank(r.breakdown, weights)}
                                 for r in found],
                    })
    out.write_text(json.dumps(rows), encoding="utf-8")
    print(f"dumped {len(rows)} questions, pool {POOL}, to {out}")


# ------------------------------------------------------------------ evaluate


@dataclass(frozen=True)
class Item:
    conv: str
    question: str
    category: int
    evidence: frozenset[str]
    pool: list[dict[str, Any]]


Reranker = Callable[[Item], list[str]]
"""An item → dia_ids, best first."""


def recall_at(item: Item, ranked: Sequence[str]) -> tuple[float, ...]:
    return tuple(len(item.evidence & set(ranked[:k])) / len(item.evidence) for k in KS)


def evaluate(items: Sequence[Item], rerank: Reranker) -> dict[int | None, tuple[float, ...]]:
    per: dict[int | None, list[tuple[float, ...]]] = {}
    for item in items:
        r = recall_at(item, rerank(item))
        per.setdefault(None, []).append(r)
        per.setdefault(item.category, []).append(r)
    return {c: tuple(statistics.fmean(col) for col in zip(*rs, strict=True))
            for c, rs in per.items()}


def fmt(scores: dict[int | None, tuple[float, ...]]) -> str:
    parts = [" ".join(f"{v:.3f}" for v in scores[None])]
    parts += [" ".join(f"{v:.3f}" for v in scores.get(c, ())) for c in CATEGORIES]
    return " | ".join(parts)


HEADER = ("overall R@1 R@5 R@10 | " + " | ".join(f"{c} {n}" for c, n in CATEGORIES.items()))


def cross_validated(
    items: Sequence[Item], family: Callable[[Any], Reranker], grid: Sequence[Any]
) -> tuple[dict[int | None, tuple[float, ...]], list[Any]]:
    """Leave one conversation out: per fold the grid point with the best R@5 on the other
    conversations, scored on the held-out one; the held-out rankings pooled."""
    convs = sorted({i.conv for i in items})
    chosen: list[Any] = []
    held: dict[str, Any] = {}
    for conv in convs:
        train = [i for i in items if i.conv != conv]
        best = max(grid, key=lambda p: evaluate(train, family(p))[None][1])
        chosen.append(best)
        held[conv] = best
    per: dict[int | None, list[tuple[float, ...]]] = {}
    rerankers = {conv: family(p) for conv, p in held.items()}
    for item in items:
        r = recall_at(item, rerankers[item.conv](item))
        per.setdefault(None, []).append(r)
        per.setdefault(item.category, []).append(r)
    return ({c: tuple(statistics.fmean(col) for col in zip(*rs, strict=True))
             for c, rs in per.items()}, chosen)


def read_pool(path: Path) -> list[Item]:
    rows = json.loads(path.read_text(encoding="utf-8"))
    return [Item(r["conv"], r["question"], int(r["category"]), frozenset(r["evidence"]),
                 r["pool"]) for r in rows]


def first_pass(item: Item) -> list[str]:
    return [c["dia_id"] for c in item.pool]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, help="LoCoMo JSON, to dump a pool")
    parser.add_argument("--dump", type=Path, help="where to write the pool")
    parser.add_argument("--pool", type=Path, help="a dumped pool to evaluate re-rankers on")
    args = parser.parse_args()
    if args.dump:
        if not args.data:
            parser.error("--dump needs --data")
        asyncio.run(dump(args.data, args.dump))
    if args.pool:
        items = read_pool(args.pool)
        print(HEADER)
        print(f"{'first pass':<28} {fmt(evaluate(items, first_pass))}")


if __name__ == "__main__":
    main()
