"""LoCoMo turn recall: pma-mcp `recall` beside the seed's TF-IDF and BM25, in one run.

    uv run --group bench python -m benchmarks.locomo --data locomo10.json [--via-stdio]
        [--limit-conversations N] [--time-true] [--weights S,I,R,A]
        [--backend sqlite|postgres|both] [--database-url URL]

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

--time-true also replays the conversations as the product lives them: each session is stored at
its own `session_N_date_time` (turns 30 s apart) through the service's clock, the collector runs
over the namespace after every session (as the hooks' auto-GC does, no near-duplicate merges),
and every question is asked at +1 minute, +1 hour, +1 day and +30 days after its conversation's
last turn, each offset on its own copy of that store. One row per offset; the baselines do not
depend on time, so their one-instant figures stand beside every row.

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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from mcp import Client, StdioServerParameters

from benchmarks.places import Place, add_arguments, places
from pma_mcp.config import Settings, parse_weights
from pma_mcp.core.scoring import Weights
from pma_mcp.service import MemoryService

LIMIT = 10
SQLITE = Place("sqlite")
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

    @property
    def session_start(self) -> float:
        """Epoch seconds of the session's `session_N_date_time` ("1:56 pm on 8 May, 2023")."""
        when = datetime.strptime(self.date.strip(), "%I:%M %p on %d %B, %Y")
        return when.replace(tzinfo=UTC).timestamp()


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
async def open_backend(
    via_stdio: bool, workdir: Path, where: Place
) -> AsyncIterator[Backend]:
    async with where.settings(workdir, "locomo", namespace="locomo") as settings, \
            _open_backend(via_stdio, workdir, settings) as backend:
        yield backend


@asynccontextmanager
async def _open_backend(
    via_stdio: bool, workdir: Path, settings: Settings
) -> AsyncIterator[Backend]:
    if via_stdio:
        env = {"PMA_DB_PATH": str(settings.db_path), "PMA_NAMESPACE": "locomo",
               "HOME": str(workdir),
               "PMA_READ_NAMESPACES": "locomo/*",  # one namespace per conversation
               "PMA_LOG_LEVEL": "WARNING", "PATH": os.environ.get("PATH", "")}
        if settings.database_url:
            env["PMA_DATABASE_URL"] = settings.database_url
        params = StdioServerParameters(command=sys.executable, args=["-m", "pma_mcp"],
                                       env=env, cwd=str(workdir))
        async with Client(params, mode="legacy") as client:
            yield StdioBackend(client)
    else:
        async with await MemoryService.open(settings) as service:
            yield ServiceBackend(service)


@dataclass
class OursRun:
    rankings: dict[str, list[list[str]]]
    store_seconds: float
    recall_ms: list[float]


async def run_ours(
    convs: Sequence[Conversation], via_stdio: bool, where: Place = SQLITE
) -> OursRun:
    """Store every conversation, then ask every question (FTS statistics are store-wide)."""
    with tempfile.TemporaryDirectory(prefix="pma-locomo-") as tmp:
        async with open_backend(via_stdio, Path(tmp), where) as backend:
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


TURN_SECONDS = 30.0
OFFSETS: tuple[tuple[str, float], ...] = (
    ("+1 minute", 60.0), ("+1 hour", 3_600.0), ("+1 day", 86_400.0),
    ("+30 days", 30 * 86_400.0),
)


class Clock:
    """The service's clock, moved by the replay."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def turn_times(conv: Conversation) -> list[float]:
    """When each turn is stored: its session's date, then TURN_SECONDS apart."""
    times: list[float] = []
    index_in_session = 0
    for i, turn in enumerate(conv.turns):
        first = i == 0 or conv.turns[i - 1].session != turn.session
        index_in_session = 0 if first else index_in_session + 1
        times.append(turn.session_start + index_in_session * TURN_SECONDS)
    return times


async def store_time_true(
    service: MemoryService, clock: Clock, conv: Conversation
) -> dict[str, int]:
    """Store `conv` session by session at its own dates, GC after each session.

    Returns how many memories the collector changed, by action, over the replay.
    """
    backend = ServiceBackend(service)
    actions: dict[str, int] = {}
    times = turn_times(conv)
    for i, (turn, at) in enumerate(zip(conv.turns, times, strict=True)):
        clock.now = at
        await backend.remember(conv, turn)
        last_of_session = i + 1 == len(conv.turns) or conv.turns[i + 1].session != turn.session
        if last_of_session:
            clock.now = at + 1.0
            result = await service.gc_run(namespace=conv.namespace)
            for decision in result.decisions:
                actions[decision.action] = actions.get(decision.action, 0) + 1
    return actions


@dataclass
class TimeTrueRun:
    rankings: dict[str, dict[str, list[list[str]]]]
    """offset label → sample_id → ranked dia_ids per question."""
    gc_actions: dict[str, int]
    surviving_evidence: int
    evidence: int


async def run_time_true(
    convs: Sequence[Conversation], weights: Weights | None = None, where: Place = SQLITE
) -> TimeTrueRun:
    """Replay at real dates into one store, then ask at each offset on a copy of it."""
    weights = weights or Weights()
    with tempfile.TemporaryDirectory(prefix="pma-locomo-tt-") as tmp:
        async with where.settings(Path(tmp), "replay", namespace="locomo",
                                  weights=weights) as settings:
            return await _time_true(convs, where, settings, Path(tmp))


async def _time_true(
    convs: Sequence[Conversation], where: Place, settings: Settings, tmp: Path
) -> TimeTrueRun:
    """The replay into `settings`' store, then one copy per offset asked there."""
    clock = Clock()
    actions: dict[str, int] = {}
    surviving: set[str] = set()
    async with await MemoryService.open(settings, clock=clock,
                                        merge_near_duplicates=False) as service:
        for conv in convs:
            for action, n in (await store_time_true(service, clock, conv)).items():
                actions[action] = actions.get(action, 0) + n
        for conv in convs:
            kept = await service.store.namespace_memories(conv.namespace)
            surviving |= {f"{conv.sample_id}/{m.metadata.get('dia_id')}" for m in kept}
    evidence = {f"{c.sample_id}/{e}" for c in convs for q in c.questions for e in q.evidence}
    rankings: dict[str, dict[str, list[list[str]]]] = {}
    for label, offset in OFFSETS:
        per_conv = rankings.setdefault(label, {})
        async with where.settings(tmp, f"ask-{offset:.0f}", namespace="locomo",
                                  weights=settings.weights) as copy:
            await where.copy(settings, copy)
            async with await MemoryService.open(copy, clock=clock) as service:
                backend = ServiceBackend(service)
                for conv in convs:
                    clock.now = turn_times(conv)[-1] + offset
                    per_conv[conv.sample_id] = [await backend.recall(conv, q.text)
                                                for q in conv.questions]
            if not copy.database_url:
                Path(copy.database).unlink()
    return TimeTrueRun(rankings, actions, len(evidence & surviving), len(evidence))


def time_true_report(run: TimeTrueRun, convs: Sequence[Conversation],
                     baselines: Mapping[str, Scores]) -> list[str]:
    """One row per offset: ours beside the (time-independent) baselines."""
    names = list(baselines)
    lines = [f"{'asked':<12}| {OURS:<19} | " + " | ".join(f"{m:<19}" for m in names)
             + " | ours - best baseline R@5",
             f"{'':<12}| " + " | ".join(f"{'R@1   R@5   R@10':<19}" for _ in range(1 + len(names)))]
    best = max(baselines[m].mean()[1] for m in names)
    for label, _ in OFFSETS:
        ours = score(convs, run.rankings[label]).mean()
        lines.append(f"{label:<12}| {_fmt(ours):<19} | "
                     + " | ".join(f"{_fmt(baselines[m].mean()):<19}" for m in names)
                     + f" | {ours[1] - best:+.3f}")
    moved = ", ".join(f"{a} {n}" for a, n in sorted(run.gc_actions.items())) or "nothing"
    lines.append(f"GC during the replay: {moved}; evidence turns still stored "
                 f"{run.surviving_evidence}/{run.evidence}")
    return lines


FLOORS = (0.35, 0.45, 0.55)


@asynccontextmanager
async def stored(convs: Sequence[Conversation], name: str) -> AsyncIterator[MemoryService]:
    """An in-process service over a temporary SQLite store holding every turn of `convs`."""
    with tempfile.TemporaryDirectory(prefix=f"pma-locomo-{name}-") as tmp:
        settings = Settings(db_path=Path(tmp) / f"{name}.db", namespace="locomo")
        async with await MemoryService.open(settings) as service:
            backend = ServiceBackend(service)
            for conv in convs:
                for turn in conv.turns:
                    await backend.remember(conv, turn)
            yield service


async def floor_report(convs: Sequence[Conversation]) -> list[str]:
    """The prompt hook's relevance floor (PMA_HOOK_MIN_SIMILARITY), measured: of the evidence
    turns recall finds in its top 10, the share at or above each floor; and the share of
    questions that would inject something if asked in another conversation's namespace."""
    async with stored(convs, "floor") as service:
        found: list[float] = []
        foreign: list[float] = []
        for i, conv in enumerate(convs):
            other = convs[(i + 1) % len(convs)]
            for q in conv.questions:
                hits = await service.search(q.text, namespace=conv.namespace, limit=LIMIT,
                                            include_global=False, touch=False)
                found += [r.breakdown.semantic_similarity for r in hits
                          if str(r.memory.metadata.get("dia_id")) in q.evidence]
                if other is not conv:
                    # Something injects when any candidate clears the floor, whatever its place.
                    top = await service.search(q.text, namespace=other.namespace, limit=LIMIT,
                                               include_global=False, touch=False)
                    foreign.append(max((r.breakdown.semantic_similarity for r in top),
                                       default=0.0))
    lines = [f"{'floor':<7}| evidence found in top 10 kept | questions of another "
             "conversation that inject"]
    for floor in FLOORS:
        kept = sum(s >= floor for s in found) / len(found) if found else 0.0
        leak = sum(s >= floor for s in foreign) / len(foreign) if foreign else 0.0
        lines.append(f"{floor:<7.2f}| {kept:>28.1%} | {leak:>6.1%}")
    return lines


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
    parser.add_argument("--time-true", action="store_true",
                        help="also replay sessions at their own dates and ask at offsets")
    parser.add_argument("--floors", action="store_true",
                        help="also measure the prompt hook's relevance floor")
    add_arguments(parser)
    parser.add_argument("--weights", default=None, metavar="S,I,R,A",
                        help="score weights for the time-true replay (as PMA_WEIGHTS)")
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

    wheres = places(args)
    names = [OURS if i == 0 else f"{OURS} on {w.label}" for i, w in enumerate(wheres)]
    if len(wheres) > 1:
        print("backends: " + ", ".join(f"{n} = {w.label}" for n, w in zip(names, wheres,
                                                                          strict=True)))
    runs = [await run_ours(convs, args.via_stdio, w) for w in wheres]
    t = time.perf_counter()
    seed = run_baseline(convs, seed_ranker)
    bm25 = run_baseline(convs, bm25_ranker)
    baselines = time.perf_counter() - t
    results = {name: score(convs, run.rankings) for name, run in zip(names, runs, strict=True)}
    results |= {SEED: score(convs, seed), BM25: score(convs, bm25)}
    print("one instant (every turn stored as fast as it goes, questions asked at once):")
    for line in report(results):
        print(line.rstrip())
    if args.time_true:
        t = time.perf_counter()
        weights = parse_weights(args.weights) if args.weights else None
        for where in wheres:
            t = time.perf_counter()
            replay = await run_time_true(convs, weights, where)
            print(f"time-true on {where.label} (sessions at their own dates, GC after each "
                  f"session, in-process, {time.perf_counter() - t:.1f} s):")
            for line in time_true_report(replay, convs, {SEED: results[SEED],
                                                         BM25: results[BM25]}):
                print(line.rstrip())
    if args.floors:
        print("prompt hook relevance floor (semantic_similarity):")
        for line in await floor_report(convs):
            print(line)
    for where, run in zip(wheres, runs, strict=True):
        print(f"time on {where.label}: store {run.store_seconds:.1f} s "
              f"({run.store_seconds / n_turns * 1000:.2f} ms/turn), recall p50 "
              f"{statistics.median(run.recall_ms):.2f} ms p95 "
              f"{percentile(run.recall_ms, 0.95):.2f} ms")
    print(f"baselines {baselines:.1f} s, wall {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    asyncio.run(main())
