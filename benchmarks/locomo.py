"""LoCoMo turn recall: pma-mcp `recall` beside the seed's TF-IDF and BM25, in one run.

    uv run --group bench python -m benchmarks.locomo --data locomo10.json [--via-stdio]
        [--limit-conversations N]

Every turn of every conversation is stored through the public path, in order: content
"<speaker>: <text>", one session id per LoCoMo session, metadata {dia_id, session_date}, one
namespace per conversation, all in one temporary store (in-process MemoryService, or the real
server over stdio with --via-stdio). Then each question of categories 1–4 with evidence is asked
through recall(limit=10) in its conversation's namespace, and scored

    recall@k = |evidence ∩ top-k dia_ids| / |evidence|,  averaged over questions.

Recall counts an access for what it returns, which feeds the composite score: that is the
product's behaviour and is kept. The baselines rank the same turns for the same questions, one
fresh index per conversation: the seed's method (scikit-learn TfidfVectorizer, cosine) and BM25
(bm25s, PyStemmer English stemming, English stopwords).

LoCoMo (Maharana et al., ACL 2024; Snap Research) is CC BY-NC 4.0: download data/locomo10.json
from the public LoCoMo repository; never commit it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from mcp import Client, StdioServerParameters

from pma_mcp.config import Settings
from pma_mcp.service import MemoryService

LIMIT = 10
KS = (1, 5, 10)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
OURS = "pma-mcp recall"
SEED = "seed TF-IDF"
BM25 = "BM25 (bm25s)"

Ranker = Callable[[str], list[str]]
"""A question → dia_ids, best first."""


# ------------------------------------------------------------------ data


@dataclass(frozen=True)
class Turn:
    dia_id: str
    session: int
    date: str
    speaker: str
    text: str

    @property
    def content(self) -> str:
        return f"{self.speaker}: {self.text}"


@dataclass(frozen=True)
class Question:
    text: str
    evidence: frozenset[str]
    category: int


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]

    @property
    def namespace(self) -> str:
        return f"locomo/{self.sample_id}"

    def session_id(self, turn: Turn) -> str:
        return f"{self.sample_id}/session_{turn.session}"


def load(path: Path, limit: int | None = None) -> list[Conversation]:
    """The samples of a LoCoMo file; only questions of categories 1–4 with evidence."""
    samples: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return [_conversation(s) for s in samples[:limit]]


def _conversation(sample: dict[str, Any]) -> Conversation:
    conv: dict[str, Any] = sample["conversation"]
    sessions = sorted(
        (int(key.removeprefix("session_")), turns)
        for key, turns in conv.items()
        if key.startswith("session_") and isinstance(turns, list)
    )
    turns = tuple(
        Turn(dia_id=str(t["dia_id"]), session=n, date=str(conv.get(f"session_{n}_date_time", "")),
             speaker=str(t["speaker"]), text=str(t["text"]))
        for n, session in sessions
        for t in session
    )
    questions = tuple(
        Question(text=str(q["question"]), evidence=frozenset(str(e) for e in q["evidence"]),
                 category=int(q["category"]))
        for q in sample["qa"]
        if q.get("category") in CATEGORIES and q.get("evidence")
    )
    return Conversation(str(sample["sample_id"]), turns, questions)


# ---------------------------------------------------------------- metric


@dataclass
class Scores:
    """recall@k per question, grouped by category."""

    by_category: dict[int, list[tuple[float, ...]]] = field(default_factory=dict)

    def add(self, question: Question, ranked: Sequence[str]) -> None:
        hits = tuple(len(question.evidence & set(ranked[:k])) / len(question.evidence)
                     for k in KS)
        self.by_category.setdefault(question.category, []).append(hits)

    def rows(self, category: int | None = None) -> list[tuple[float, ...]]:
        if category is not None:
            return self.by_category.get(category, [])
        return [r for rows in self.by_category.values() for r in rows]

    def mean(self, category: int | None = None) -> tuple[float, ...]:
        rows = self.rows(category)
        return tuple(statistics.fmean(col) for col in zip(*rows, strict=True)) if rows else ()


def score(
    convs: Sequence[Conversation], rankings: Mapping[str, Sequence[Sequence[str]]]
) -> Scores:
    """Scores for rankings given per conversation, in question order."""
    scores = Scores()
    for conv in convs:
        for question, ranked in zip(conv.questions, rankings[conv.sample_id], strict=True):
            scores.add(question, ranked)
    return scores


# ------------------------------------------------------------- baselines


def seed_ranker(conv: Conversation) -> Ranker:
    """The seed's method: per query, a fresh TfidfVectorizer() fitted over the turns and the
    query, cosine of the query's row against the turns' rows.
    """
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import cosine_similarity

    docs = [t.content for t in conv.turns]

    def rank(query: str) -> list[str]:
        matrix = TfidfVectorizer().fit_transform([*docs, query])
        sims = cosine_similarity(matrix[len(docs):], matrix[:len(docs)])[0]
        order = np.argsort(-sims, kind="stable")[:LIMIT]
        return [conv.turns[int(i)].dia_id for i in order]

    return rank


def bm25_ranker(conv: Conversation) -> Ranker:
    """bm25s (Lucene BM25, k1 1.5, b 0.75) with Snowball English stemming and stopwords."""
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    index = bm25s.BM25()
    index.index(bm25s.tokenize([t.content for t in conv.turns], stopwords="en",
                               stemmer=stemmer, show_progress=False), show_progress=False)
    k = min(LIMIT, len(conv.turns))

    def rank(query: str) -> list[str]:
        tokens = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, show_progress=False)
        docs, _ = index.retrieve(tokens, k=k, show_progress=False)
        return [conv.turns[int(i)].dia_id for i in docs[0]]

    return rank


def run_baseline(
    convs: Sequence[Conversation], make: Callable[[Conversation], Ranker]
) -> dict[str, list[list[str]]]:
    out = {}
    for conv in convs:
        rank = make(conv)
        out[conv.sample_id] = [rank(q.text) for q in conv.questions]
    return out


# ------------------------------------------------------------------ ours


class Backend(Protocol):
    async def remember(self, conv: Conversation, turn: Turn) -> None: ...

    async def recall(self, conv: Conversation, query: str) -> list[str]: ...


class ServiceBackend:
    """In-process: MemoryService.add / MemoryService.search."""

    def __init__(self, service: MemoryService) -> None:
        self.service = service

    async def remember(self, conv: Conversation, turn: Turn) -> None:
        await self.service.add(
            content=turn.content, session_id=conv.session_id(turn),
            metadata={"dia_id": turn.dia_id, "session_date": turn.date},
            namespace=conv.namespace, importance=0.5, memory_type="episodic",
        )

    async def recall(self, conv: Conversation, query: str) -> list[str]:
        found = await self.service.search(query, namespace=conv.namespace, limit=LIMIT,
                                          include_global=False)
        return [str(r.memory.metadata.get("dia_id")) for r in found]


class StdioBackend:
    """The real server in a subprocess: the `remember` and `recall` tools over stdio."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def _call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await self.client.call_tool(tool, arguments)
        if result.is_error or result.structured_content is None:
            raise RuntimeError(f"{tool} failed: {result.content}")
        content: dict[str, Any] = result.structured_content
        return content

    async def remember(self, conv: Conversation, turn: Turn) -> None:
        await self._call("remember", {
            "content": turn.content, "session_id": conv.session_id(turn),
            "metadata": {"dia_id": turn.dia_id, "session_date": turn.date},
            "namespace": conv.namespace, "importance": 0.5, "memory_type": "episodic",
        })

    async def recall(self, conv: Conversation, query: str) -> list[str]:
        found = await self._call("recall", {"query": query, "limit": LIMIT,
                                            "namespace": conv.namespace,
                                            "include_global": False})
        return [str(r["metadata"].get("dia_id")) for r in found["results"]]


@asynccontextmanager
async def open_backend(via_stdio: bool, workdir: Path) -> AsyncIterator[Backend]:
    db_path = workdir / "locomo.db"
    if via_stdio:
        env = {"PMA_DB_PATH": str(db_path), "PMA_NAMESPACE": "locomo", "HOME": str(workdir),
               "PMA_READ_NAMESPACES": "locomo/*",  # one namespace per conversation
               "PMA_LOG_LEVEL": "WARNING", "PATH": os.environ.get("PATH", "")}
        params = StdioServerParameters(command=sys.executable, args=["-m", "pma_mcp"],
                                       env=env, cwd=str(workdir))
        async with Client(params, mode="legacy") as client:
            yield StdioBackend(client)
    else:
        settings = Settings(db_path=db_path, namespace="locomo")
        async with await MemoryService.open(settings) as service:
            yield ServiceBackend(service)


@dataclass
class OursRun:
    rankings: dict[str, list[list[str]]]
    store_seconds: float
    recall_ms: list[float]


async def run_ours(convs: Sequence[Conversation], via_stdio: bool) -> OursRun:
    """Store every conversation, then ask every question (FTS statistics are store-wide)."""
    with tempfile.TemporaryDirectory(prefix="pma-locomo-") as tmp:
        async with open_backend(via_stdio, Path(tmp)) as backend:
            start = time.perf_counter()
            for conv in convs:
                for turn in conv.turns:
                    await backend.remember(conv, turn)
            stored = time.perf_counter() - start
            rankings: dict[str, list[list[str]]] = {}
            latencies: list[float] = []
            for conv in convs:
                ranked = rankings.setdefault(conv.sample_id, [])
                for question in conv.questions:
                    t = time.perf_counter()
                    ranked.append(await backend.recall(conv, question.text))
                    latencies.append((time.perf_counter() - t) * 1000)
    return OursRun(rankings, stored, latencies)


# ---------------------------------------------------------------- report


def machine() -> str:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"machine: {os.cpu_count()} CPUs{f' ({cpu})' if cpu else ''}, load {load}; "
            f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}")


def _fmt(values: Iterable[float]) -> str:
    return " ".join(f"{v:.3f}" for v in values)


def report(results: dict[str, Scores]) -> list[str]:
    """Methods side by side per scope, then ours against each baseline."""
    methods = list(results)
    width = 19
    lines = [f"{'scope':<16}{'n':>5}  | " + " | ".join(f"{m:<{width}}" for m in methods),
             " " * 23 + "| " + " | ".join(f"{'R@1   R@5   R@10':<{width}}" for _ in methods)]
    scopes: list[tuple[str, int | None]] = [("overall", None)]
    scopes += [(f"{c} {name}", c) for c, name in CATEGORIES.items()]
    for label, cat in scopes:
        n = len(results[OURS].rows(cat))
        lines.append(f"{label:<16}{n:>5}  | "
                     + " | ".join(f"{_fmt(results[m].mean(cat)):<{width}}" for m in methods))
    ours = results[OURS].mean()
    for base in methods[1:]:
        other = results[base].mean()
        parts = [f"R@{k} ×{o / b:.2f} ({o - b:+.3f})" if b else f"R@{k} {o - b:+.3f}"
                 for k, o, b in zip(KS, ours, other, strict=True)]
        lines.append(f"ours vs {base}: " + "  ".join(parts))
    return lines


def percentile(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="LoCoMo JSON (locomo10.json)")
    parser.add_argument("--via-stdio", action="store_true",
                        help="store and recall through the real server over stdio")
    parser.add_argument("--limit-conversations", type=int, default=None, metavar="N")
    args = parser.parse_args()
    try:
        import bm25s  # noqa: F401
        import sklearn  # noqa: F401
        import Stemmer  # noqa: F401
    except ImportError as exc:
        parser.error(f"the baselines need the bench group ({exc}): uv run --group bench ...")
    started = time.perf_counter()
    convs = load(args.data, args.limit_conversations)
    n_turns = sum(len(c.turns) for c in convs)
    n_questions = sum(len(c.questions) for c in convs)
    path = "the server over stdio (remember/recall tools)" if args.via_stdio else \
        "in-process MemoryService.add/search"
    print(f"LoCoMo {args.data.name}: {len(convs)} conversations, {n_turns} turns, "
          f"{n_questions} questions (categories 1-4); ours via {path}, limit {LIMIT}")
    print(machine())

    ours = await run_ours(convs, args.via_stdio)
    t = time.perf_counter()
    seed = run_baseline(convs, seed_ranker)
    bm25 = run_baseline(convs, bm25_ranker)
    baselines = time.perf_counter() - t
    results = {OURS: score(convs, ours.rankings), SEED: score(convs, seed),
               BM25: score(convs, bm25)}
    for line in report(results):
        print(line.rstrip())
    print(f"time: store {ours.store_seconds:.1f} s ({ours.store_seconds / n_turns * 1000:.2f} "
          f"ms/turn), recall p50 {statistics.median(ours.recall_ms):.2f} ms "
          f"p95 {percentile(ours.recall_ms, 0.95):.2f} ms, baselines {baselines:.1f} s, "
          f"wall {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    asyncio.run(main())
