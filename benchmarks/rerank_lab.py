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
import math
import re
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.locomo import CATEGORIES, KS, load, stored
from pma_mcp.core import rerank
from pma_mcp.core.models import ScoredMemory
from pma_mcp.core.scoring import Weights, relevance_rank
from pma_mcp.core.text import analysis, bm25, lexicon, relevance

POOL = 50


# ------------------------------------------------------------------ dump


def first_pass_key(r: ScoredMemory) -> tuple[float, float, int]:
    """The first pass's order (retrieval.search before its second pass): recall returns the
    top POOL in the second pass's order, which holds the same memories."""
    return (relevance_rank(r.breakdown, Weights()), r.breakdown.composite, r.memory.seq)


async def dump(data: Path, out: Path) -> None:
    convs = load(data)
    weights = Weights()
    rows: list[dict[str, Any]] = []
    async with stored(convs, "lab") as service:
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
                             for r in sorted(found, key=first_pass_key, reverse=True)],
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


def entries(item: Item) -> list[rerank.Entry]:
    """The pool as core/rerank.py sees it in the product (service/retrieval.py builds the same
    from the store's rows: the content's own index terms, the speaker, the session)."""
    out = []
    for c in item.pool:
        counts: dict[str, int] = {}
        for term, doc in analysis.tokens([c["content"], ""]):
            if doc == 0:
                counts[term] = counts.get(term, 0) + 1
        sem = c["semantic"]
        match = relevance.match_share(sem) * (c["order"] / sem if sem > 0 else 1.0)
        out.append(rerank.entry(c["seq"], match, c["session"], lexicon.speaker_of(c["content"]),
                                bm25.encode(counts)))
    return out


def second_pass(item: Item) -> list[str]:
    """The shipped second pass (core/rerank.order) over the dumped pool."""
    q = rerank.question(item.question, list(relevance.query_terms(item.question)))
    return [item.pool[i]["dia_id"] for i in rerank.order(entries(item), q)]


def depth_line(items: Sequence[Item]) -> str:
    """First-pass recall at the pool's depths: how much the second pass could still reach."""
    depths = [k for k in (5, 10, 20, 50, 100) if k <= max(len(i.pool) for i in items)]

    def at(k: int) -> float:
        return statistics.fmean(len(i.evidence & set(first_pass(i)[:k])) / len(i.evidence)
                                for i in items)

    return ("first-pass R@" + " / ".join(map(str, depths)) + " = "
            + " / ".join(f"{at(k):.3f}" for k in depths))


# ------------------------------------------------------------------ features


TIME_WORDS = re.compile(
    r"\b(yesterday|today|tonight|tomorrow|ago|last|next|recently|weekend|week|month|year|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march|april|"
    r"may|june|july|august|september|october|november|december|summer|winter|spring|fall|"
    r"autumn|(?:19|20)\d\d)\b", re.IGNORECASE)
WHEN = re.compile(r"\b(when|what (?:year|month|day|date|time)|how long ago)\b", re.IGNORECASE)


@dataclass
class Features:
    """Per question: query terms; per candidate: its own terms in order, speaker, session."""

    query: list[str]
    terms: list[list[str]]
    speakers: list[str | None]
    sessions: list[str | None]
    mentions: list[set[str]]
    names: set[str]
    when: bool


_features: dict[int, Features] = {}


def features(item: Item) -> Features:
    key = id(item)
    if key in _features:
        return _features[key]
    q = list(relevance.query_terms(item.question))
    texts = [c["content"] for c in item.pool]
    bodies = [t.split(":", 1)[1] if lexicon.speaker_of(t) else t for t in texts]
    speakers = [lexicon.speaker_of(t) for t in texts]
    people = {w for s in speakers if s for w in lexicon.words(s)}
    qwords = set(lexicon.words(item.question))
    names = people & qwords
    f = Features(q, analysis.term_sequences(bodies), speakers, [c["session"] for c in item.pool],
                 [set(lexicon.words(b)) & people for b in bodies], names,
                 bool(WHEN.search(item.question)))
    _features[key] = f
    return f


def proximity(qterms: Sequence[str], seq: Sequence[str]) -> float:
    """1 / (1 + shortest span holding two distinct query terms) over the turn's own terms."""
    wanted = set(qterms)
    last: dict[str, int] = {}
    best = None
    for pos, t in enumerate(seq):
        if t in wanted:
            for other, at in last.items():
                if other != t:
                    gap = pos - at
                    best = gap if best is None or gap < best else best
            last[t] = pos
    return 0.0 if best is None else 1.0 / best


def coverage(qterms: Sequence[str], seq: Sequence[str]) -> float:
    return len(set(qterms) & set(seq)) / len(qterms) if qterms else 0.0


def raw(c: dict[str, Any]) -> float:
    """The first-pass order unsaturated: BM25 / ideal (semantic = 1 − 10^−x), times the
    order's lift (order / semantic)."""
    sem = min(c["semantic"], 1 - 1e-12)
    x = -math.log10(1.0 - sem) if sem > 0 else 1e-9
    lift = c["order"] / sem if sem > 0 else 1.0
    return max(x * lift, 1e-9)


RM3_DOCS = 10
RM3_TERMS = 10


def rm3(item: Item, f: Features) -> list[float]:
    """Relevance-model feedback over the pool: the expansion terms' weight p(t|R) from the
    first-pass top RM3_DOCS (weighted by their order score), summed over each candidate's
    own terms, divided by the best candidate's sum."""
    cache = f.__dict__.setdefault("_rm3", {})
    if "v" in cache:
        return list(cache["v"])
    qset = set(f.query)
    weight: dict[str, float] = {}
    for i, c in enumerate(item.pool[:RM3_DOCS]):
        seq = [t for t in f.terms[i] if t not in qset and t not in lexicon.STOPWORDS]
        for t in seq:
            weight[t] = weight.get(t, 0.0) + c["order"] / len(seq)
    top = dict(sorted(weight.items(), key=lambda kv: -kv[1])[:RM3_TERMS])
    sums = [sum(top.get(t, 0.0) for t in set(seq)) for seq in f.terms]
    best = max(sums, default=0.0)
    v = [x / best if best > 0 else 0.0 for x in sums]
    cache["v"] = v
    return list(v)


def session_mass(item: Item, f: Features) -> list[float]:
    """Share of the pool's order mass in the candidate's session (sessions about the topic)."""
    mass: dict[str | None, float] = {}
    for c in item.pool:
        mass[c["session"]] = mass.get(c["session"], 0.0) + c["order"]
    total = sum(mass.values()) or 1.0
    return [mass[s] / total for s in f.sessions]


def neighbours(item: Item) -> list[tuple[float, float]]:
    """Per candidate, the unsaturated score of the turn before and after it in its session
    (0 when that turn is not in the pool), relative to the pool's best."""
    by_place = {}
    for c in item.pool:
        session, _, turn = c["dia_id"].partition(":")
        if turn.isdigit():
            by_place[(session, int(turn))] = raw(c)
    best = max(by_place.values(), default=1.0)
    out = []
    for c in item.pool:
        session, _, turn = c["dia_id"].partition(":")
        n = int(turn) if turn.isdigit() else -10
        out.append((by_place.get((session, n - 1), 0.0) / best,
                    by_place.get((session, n + 1), 0.0) / best))
    return out


def linear(w: dict[str, float], diversify: float = 0.0, depth: int = POOL) -> Reranker:
    """log(first-pass order) + Σ w_f·f, then greedy session diversification: each further turn
    of a session already chosen is multiplied by (1 − diversify)^n."""

    def rerank(item: Item) -> list[str]:
        f = features(item)
        pool = item.pool[:depth]
        scores = []
        near = neighbours(item) if "prev" in w or "next" in w else []
        mass = session_mass(item, f) if "session" in w else []
        for i, c in enumerate(pool):
            s = math.log(raw(c))
            if w:
                seq = f.terms[i]
                if "prox" in w:
                    s += w["prox"] * proximity(f.query, seq)
                if "cov" in w:
                    s += w["cov"] * coverage(f.query, seq)
                if "time" in w and f.when:
                    body = item.pool[i]["content"]
                    s += w["time"] * (1.0 if TIME_WORDS.search(body) else 0.0)
                if "both" in w and len(f.names) >= 2:
                    spk = set(lexicon.words(f.speakers[i] or ""))
                    s += w["both"] * (1.0 if len((spk | f.mentions[i]) & f.names) >= 2 else 0.0)
                if "rm3" in w:
                    s += w["rm3"] * rm3(item, f)[i]
                if "session" in w:
                    s += w["session"] * mass[i]
                if "prev" in w or "next" in w:
                    s += w.get("prev", 0.0) * near[i][0] + w.get("next", 0.0) * near[i][1]
                if "mention" in w and f.names:
                    s += w["mention"] * (1.0 if f.mentions[i] & f.names else 0.0)
            scores.append(s)
        order = sorted(range(len(pool)), key=lambda i: -scores[i])
        if diversify <= 0:
            return [pool[i]["dia_id"] for i in order] + first_pass(item)[depth:]
        penalty = math.log(1.0 - diversify)
        chosen: list[int] = []
        seen: dict[str | None, int] = {}
        left = set(order)
        while left and len(chosen) < 10:
            best = max(left, key=lambda i: (scores[i] + penalty * seen.get(f.sessions[i], 0),
                                            -i))
            chosen.append(best)
            left.discard(best)
            seen[f.sessions[best]] = seen.get(f.sessions[best], 0) + 1
        rest = [i for i in order if i not in chosen]
        return [pool[i]["dia_id"] for i in chosen + rest]

    return rerank


FEATURES = ("prev", "next", "time", "both", "session", "prox", "cov")
STEPS = (0.0, 0.1, 0.2, 0.4, 0.6)


def fit(items: Sequence[Item], rounds: int = 1) -> dict[str, float]:
    """Coordinate ascent on R@5 over FEATURES' weights (each from STEPS)."""
    w: dict[str, float] = {}
    best = evaluate(items, linear(w))[None][1]
    for _ in range(rounds):
        for name in FEATURES:
            for v in STEPS:
                trial = {**w, name: v}
                got = evaluate(items, linear(trial))[None][1]
                if got > best + 1e-9:
                    best, w = got, trial
    return {k: v for k, v in w.items() if v}


def fitted_cv(items: Sequence[Item]) -> None:
    """The linear combination fitted on all five conversations, then held out per fold."""
    print(f"{'fit on all':<28} {fmt(evaluate(items, linear(fit(items))))}  {fit(items)}")
    convs = sorted({i.conv for i in items})
    rerankers = {}
    for conv in convs:
        w = fit([i for i in items if i.conv != conv])
        print(f"  fold {conv}: {w}")
        rerankers[conv] = linear(w)
    held = evaluate(items, lambda it: rerankers[it.conv](it))
    print(f"{'held out (LOCO)':<28} {fmt(held)}")


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
        print(f"{'second pass (core/rerank)':<28} {fmt(evaluate(items, second_pass))}")
        print(depth_line(items))


if __name__ == "__main__":
    main()
