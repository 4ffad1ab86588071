"""Lexical retrieval: sanitised queries, stemming, stopwords, and the similarity map."""

from __future__ import annotations

import math

import pytest

from pma_mcp.config import Settings
from pma_mcp.core.text import bm25, lexicon, relevance
from pma_mcp.service import MemoryService
from pma_mcp.store.sqlite.store import match_expression


@pytest.fixture
def settings(store_settings: Settings) -> Settings:
    """Every test here that opens a store runs on each backend (tests/backends.py)."""
    return store_settings

FTS_SYNTAX = [
    '"', '""', "NEAR(", "NEAR(a b)", "*", "a*", "-", "-foo", "OR", "AND", "NOT", "^start",
    "content:", "labels:x", "'; DROP TABLE memories; --", "(", ")", "{a b}:c", "a + b",
    "col:*", "\\", "%", "_", "\u0000", "🙂 emoji", "a\nb", "NEAR(\"x\" \"y\", 3)",
]


@pytest.mark.parametrize("query", FTS_SYNTAX)
async def test_fts_syntax_in_queries_never_errors(service: MemoryService, query: str) -> None:
    await service.add("drop table memories near the start content")
    query = query.replace("\u0000", "")
    results = await service.search(query)
    assert isinstance(results, list)
    assert await service.store.count() == 1


def test_query_words_drop_stopwords_and_punctuation() -> None:
    assert lexicon.query_words("What is the export job's TIMEOUT? (see: jobs.toml)") == [
        "export", "job", "timeout", "see", "jobs", "toml"]
    assert lexicon.query_words("the and of") == []
    assert lexicon.query_words("snake_case-name") == ["snake", "case", "name"]


@pytest.mark.parametrize(
    ("content", "speaker"),
    [
        ("Caroline: I went to the support group yesterday.", "Caroline"),
        ("Dr. Ana Lee: take two a day", "Dr. Ana Lee"),
        ("Note: the cache is warm", "Note"),
        ("The ratio is 3:1 in favour", None),
        ("one two three four five: too many words", None),
        ("no colon here", None),
        ("payments-service (service): owned by billing", None),
        ("[INFO] build: done", None),
        (": empty name", None),
    ],
)
def test_speaker_of_a_conversation_turn(content: str, speaker: str | None) -> None:
    assert lexicon.speaker_of(content) == speaker


def test_match_expression_quotes_every_word() -> None:
    assert match_expression(["near", "or"]) == '"near" OR "or"'
    assert match_expression(["a", "b"], ["b"]) == '"a" OR {content labels}: "b"'


async def test_porter_stemming_matches_word_forms(service: MemoryService) -> None:
    await service.add("The exporter was configured to run nightly")
    for query in ("exporting", "configuration", "runs", "configure exports"):
        assert len(await service.search(query)) == 1, query


def test_stems_are_deduplicated_in_the_query() -> None:
    assert relevance.query_terms("run running runs") == {"run": "run"}


async def test_non_matching_memories_are_not_returned_for_a_query(
    service: MemoryService,
) -> None:
    await service.add("Important but unrelated", importance=1.0)
    await service.add("The cache uses Redis")
    results = await service.search("redis cache")
    assert [r.memory.content for r in results] == ["The cache uses Redis"]


async def test_similarity_is_in_unit_interval_and_ordered_like_bm25(
    service: MemoryService,
) -> None:
    await service.add("kafka consumer lag alert thresholds")
    await service.add("kafka")
    await service.add("the consumer of the kafka topic lags when the broker restarts often")
    results = await service.search("kafka consumer lag")
    sims = [r.breakdown.semantic_similarity for r in results]
    assert all(0.0 < s < 1.0 for s in sims)
    assert results[0].memory.content == "kafka consumer lag alert thresholds"


def test_similarity_map() -> None:
    assert relevance.similarity(0.0, 5.0) == 0.0
    assert relevance.similarity(5.0, 0.0) == 0.0
    assert relevance.similarity(5.0, 5.0) == pytest.approx(0.9)
    assert relevance.similarity(2.5, 5.0) == pytest.approx(1 - 0.1**0.5)
    assert relevance.similarity(1e9, 1.0) <= 1.0


def test_idf_formula() -> None:
    prior = bm25.PRIOR_DOCS
    assert bm25.idf(100, 1) == pytest.approx(math.log(1 + (100 + prior - 1 + 0.5) / 1.5))
    # A word in every memory still counts (FTS5's idf floors it at 1e-6), and rarer counts more.
    assert bm25.idf(1, 1) > 1.0
    assert bm25.idf(10, 10) > 0.5
    assert bm25.idf(1000, 1) > bm25.idf(1000, 10) > bm25.idf(1000, 1000) > 0


async def test_ideal_match_scores_exactly_the_documented_similarity(
    service: MemoryService,
) -> None:
    """Each query term once, at average length: BM25 = Σ idf, so similarity is 0.9."""
    for text in ("alpha beta", "gamma delta", "epsilon zeta", "eta theta"):
        await service.add(text)
    (hit,) = await service.search("alpha beta")
    assert hit.breakdown.semantic_similarity == pytest.approx(0.9, abs=1e-9)


async def test_breakdown_is_truthful(service: MemoryService) -> None:
    await service.add("grafana dashboards for latency", importance=0.6)
    (result,) = await service.search("grafana latency")
    b = result.breakdown
    assert result.score == b.composite == pytest.approx(
        0.4 * b.semantic_similarity + 0.3 * b.importance + 0.2 * b.recency
        + 0.1 * b.access_frequency)
    inspected = await service.inspect(result.memory.id, query="grafana latency")
    assert inspected.breakdown.semantic_similarity == pytest.approx(b.semantic_similarity)


def test_common_terms_leave_the_match_only_while_rarer_ones_exist() -> None:
    from pma_mcp.core.text.relevance import TermStats

    stats = TermStats(
        total_docs=100_000,
        doc_freq={"rare": 30, "mid": 5_000, "wide": 6_000, "common": 40_000},
        content_freq={"rare": 10, "mid": 1_000, "wide": 1_500, "common": 9_000},
    )
    # rare and mid fit everywhere; wide only in own text; common not at all
    assert relevance.within_budget(["common", "rare", "wide", "mid"], stats) == (
        ["rare", "mid"], ["wide"])
    assert relevance.within_budget(["common"], stats) == ([], ["common"])
    small = TermStats(total_docs=500, doc_freq={"a": 400, "b": 300})
    assert relevance.within_budget(["a", "b"], small) == (["a", "b"], [])


async def test_similarity_counts_every_query_term_even_when_one_is_not_searched(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    await service.add("zebra crossing near the station")
    for i in range(5):
        await service.add(f"station announcement number {i}")
    full = (await service.search("zebra station"))[0].breakdown.semantic_similarity
    monkeypatch.setattr(relevance, "ROW_BUDGET", 1)
    terms = relevance.query_terms("zebra station")
    index = relevance.term_stats(6, {"zebra": 1, "station": 6})
    assert relevance.within_budget(list(terms), index) == ([], ["zebra"])
    pruned = (await service.search("zebra station"))[0]
    assert pruned.memory.content == "zebra crossing near the station"
    assert pruned.breakdown.semantic_similarity < full


async def test_session_neighbours_lend_context(service: MemoryService) -> None:
    """A turn that only says "yes, the blue one" is found for a question about the car."""
    turns = ["Ana: I finally bought a new car last week", "Ben: which colour did you pick?",
             "Ana: yes, the blue one", "Ben: nice", "Ana: tomorrow I fly to Lisbon",
             "Ben: have a good trip", "Ana: thanks", "Ben: bye"]
    ids = [(await service.add(t, session_id="s1")).memory.id for t in turns]
    await service.add("Unrelated: the weekly report is due", session_id="s2")
    hits = [r.memory.id for r in await service.search("what colour car", limit=8)]
    assert ids[2] in hits  # no query word of its own; its neighbours carry them
    assert ids[6] not in hits  # too far from the car turns
    assert hits.index(ids[1]) < hits.index(ids[2])  # own words still count most


async def test_context_follows_deletes_and_stays_consistent(service: MemoryService) -> None:
    a = (await service.add("first turn about zebras", session_id="s")).memory
    b = (await service.add("second turn", session_id="s")).memory
    await service.add("third turn", session_id="s")
    assert b.id in [r.memory.id for r in await service.search("zebras")]
    await service.delete(a.id)
    assert b.id not in [r.memory.id for r in await service.search("zebras")]
    assert (await service.store.check_consistency()).ok


async def test_naming_the_speaker_boosts_their_turns(service: MemoryService) -> None:
    await service.add("Ana: I love hiking in the mountains")
    await service.add("Ben: I love hiking in the mountains too")
    first = (await service.search("does Ben like hiking"))[0]
    assert first.memory.content.startswith("Ben:")
    first = (await service.search("does Ana like hiking"))[0]
    assert first.memory.content.startswith("Ana:")


async def test_another_namespace_never_moves_this_ones_similarity(
    service: MemoryService,
) -> None:
    """Term statistics are per namespace: BM25 document counts used to be the whole file's,
    so a project's scores moved when another project stored a word (0.9000 → 0.9151)."""
    for text in ("alpha beta", "gamma delta", "epsilon zeta"):
        await service.add(text)
    before = [r.breakdown.semantic_similarity for r in await service.search("alpha delta")]
    for i in range(40):
        await service.add(f"alpha note {i} with delta and more words", namespace="/other")
    after = [r.breakdown.semantic_similarity for r in await service.search("alpha delta")]
    assert after == before
    assert (await service.search("alpha delta", namespace="/other", include_global=False))


@pytest.mark.parametrize("stored", [1, 2, 3])
async def test_a_first_store_finds_its_memory_for_a_follow_up(
    service: MemoryService, stored: int
) -> None:
    """With one to three memories, a follow-up holding words the memory lacks still finds it
    above the prompt hook's floor (FTS5's idf gave every shared word ~0 in such a store)."""
    first = await service.add("User: why does the nightly export job time out?\nAssistant: "
                              "retries were unbounded; I capped export retries at 5.")
    others = ["User: how do I run the linter?\nAssistant: use uv run ruff check .",
              "User: where is the changelog?\nAssistant: it lives in CHANGELOG.md."]
    for text in others[: stored - 1]:
        await service.add(text)
    found = await service.search("what did we change about the export retries again?")
    assert found and found[0].memory.id == first.memory.id
    assert found[0].breakdown.semantic_similarity >= Settings().hook_min_similarity
