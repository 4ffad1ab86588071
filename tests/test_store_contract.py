"""The Store contract, checked on every backend: the same calls, the same observable results.

Each test runs against a real SQLite file and a real PostgreSQL schema (skipped without
PMA_TEST_POSTGRES_URL, see tests/postgres.py), and the store's own consistency check must
pass after every write. `test_backends_rank_alike` stores one corpus in both and compares
the lexical scores themselves.
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
import uuid
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import pytest

from pma_mcp.config import Settings
from pma_mcp.core import collector, scoring
from pma_mcp.core.errors import ConflictError, InvalidInputError, NotFoundError, StorageError
from pma_mcp.core.models import (
    Browse,
    GCDecision,
    Memory,
    MemoryKind,
    MemoryType,
    Scope,
    ScoreBreakdown,
    content_hash,
    to_datetime,
)
from pma_mcp.core.scoring import Weights
from pma_mcp.core.text import analysis
from pma_mcp.store import Store, open_store
from tests.backends import BACKENDS

NOW = 1_800_000_000.0
NS = "/home/dev/acme"
OTHER = "/home/dev/other"
NAMES = ["sqlite", "postgres"]


def mem(
    content: str,
    *,
    namespace: str = NS,
    session: str | None = None,
    at: float = NOW,
    tags: tuple[str, ...] = (),
    entities: tuple[str, ...] = (),
    tier: MemoryType = MemoryType.EPISODIC,
    importance: float = 0.5,
    access_count: int = 0,
    metadata: dict[str, str] | None = None,
    kind: MemoryKind = MemoryKind.NOTE,
) -> Memory:
    return Memory(
        id=uuid.uuid4().hex, namespace=namespace, content=content, memory_type=tier,
        importance=importance, tags=list(tags), linked_entities=list(entities),
        token_count=len(content.split()), access_count=access_count,
        created_at=to_datetime(at), accessed_at=to_datetime(at), metadata=metadata or {},
        session_id=session, content_hash=content_hash(content), kind=kind)


async def _open(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Store:
    if backend == "sqlite":
        return await open_store(Settings(db_path=tmp_path / "store.db"))
    url = request.getfixturevalue("postgres_url")
    return await open_store(Settings(db_path=tmp_path / "unused.db", database_url=url))


@pytest.fixture(params=BACKENDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    opened = await _open(request.param, tmp_path, request)
    try:
        yield opened
    finally:
        await opened.close()


async def consistent(store: Store) -> None:
    report = await store.check_consistency()
    assert report.ok, report
    assert report.fts_rows == report.memories


def decision(m: Memory, action: str, to: MemoryType | None = None,
             merge_into: str | None = None) -> GCDecision:
    breakdown = ScoreBreakdown(semantic_similarity=0, importance=m.importance, recency=0,
                               access_frequency=0, composite=0.1, age_hours=1)
    return GCDecision(memory_id=m.id, action=action,  # type: ignore[arg-type]
                      from_tier=m.memory_type, to_tier=to, reason="test",
                      breakdown=breakdown, token_count=m.token_count, content_preview="",
                      merge_into=merge_into)


async def test_backend_and_location(store: Store) -> None:
    assert store.backend in ("sqlite", "postgresql")
    assert await store.schema_version() >= 1
    assert await store.integrity_check() == "ok"
    assert store.location


async def test_insert_dedupe_and_reinforce(store: Store) -> None:
    first, dup = await store.insert(mem("we deploy with blue green releases"))
    assert not dup and first.seq > 0
    again, dup = await store.insert(mem("we deploy with blue green releases", at=NOW + 60))
    assert dup and again.id == first.id and again.access_count == 1
    assert await store.count(NS) == 1
    assert await store.has_content(NS, first.content_hash)
    assert not await store.has_content(OTHER, first.content_hash)
    elsewhere, dup = await store.insert(mem("we deploy with blue green releases",
                                            namespace=OTHER))
    assert not dup and elsewhere.id != first.id
    assert await store.namespaces() == sorted([NS, OTHER])
    assert [e.event for e in await store.lineage(first.id)] == ["created", "accessed"]
    await consistent(store)


async def test_supersede_and_current_again(store: Store) -> None:
    old, _ = await store.insert(mem("the api port is 8080"))
    new, _ = await store.insert(mem("the api port is 9090"), supersedes=old, reason="fix")
    archived = await store.get(old.id)
    assert archived is not None and archived.superseded_by == new.id
    assert archived.memory_type == MemoryType.ARCHIVED
    hits = await store.lexical_candidates("api port", Scope(namespaces=(NS,)), 10)
    assert [h.seq for h in hits] == [new.seq]
    archived_scope = Scope(namespaces=(NS,), memory_type=MemoryType.ARCHIVED)
    assert [h.seq for h in await store.lexical_candidates("api port", archived_scope, 10)] == [
        old.seq]
    back, dup = await store.insert(mem("the api port is 8080"))
    assert dup and back.superseded_by is None and back.memory_type == MemoryType.EPISODIC
    assert "promote" in [e.event for e in await store.lineage(old.id)]
    await consistent(store)


async def test_kinds_are_kept_filtered_and_edited(store: Store) -> None:
    chosen, _ = await store.insert(mem("we pin the api port to 9090", kind=MemoryKind.DECISION),
                                   supersedes=None, reason="stored")
    other, _ = await store.insert(mem("the api port is read from PORT"), supersedes=None,
                                  reason="stored")
    assert (await store.get(chosen.id)).kind is MemoryKind.DECISION  # type: ignore[union-attr]
    scope = Scope(namespaces=(NS,), kind=MemoryKind.DECISION)
    found = await store.lexical_candidates("api port", scope, 10)
    assert [c.seq for c in found] == [chosen.seq]
    page = await store.browse(Browse(namespace=NS, kind=MemoryKind.NOTE), None, 10)
    assert [m.id for m in page] == [other.id]
    edited = await store.edit(other, dataclasses.replace(other, kind=MemoryKind.FACT),
                              NOW + 1, "edited: kind note → fact")
    assert edited.kind is MemoryKind.FACT
    await consistent(store)


async def test_superseding_a_superseded_memory_is_refused_naming_the_newest(
    store: Store,
) -> None:
    first, _ = await store.insert(mem("deploys at 09:00"), supersedes=None, reason="stored")
    second, _ = await store.insert(mem("deploys at 10:00"), supersedes=first, reason="fix")
    third, _ = await store.insert(mem("deploys at 11:00"), supersedes=second, reason="fix")
    count = await store.count(NS)
    with pytest.raises(ConflictError, match=f"chain is {third.id}"):
        await store.insert(mem("deploys at 12:00"), supersedes=first, reason="fix")
    assert await store.count(NS) == count
    current = [m.id for m in await store.namespace_memories(NS) if m.superseded_by is None]
    assert current == [third.id]
    await consistent(store)


async def test_edit_keeps_id_and_refuses_stale_or_clashing(store: Store) -> None:
    a, _ = await store.insert(mem("we chose the zeppelin queue", session="s1", tags=("q",)))
    b, _ = await store.insert(mem("deployment finished fine", session="s1"))
    edited = await store.edit(a, mem("we chose the kestrel queue", tags=("queue",)),
                              NOW + 1, "typo")
    assert edited.id == a.id and edited.content == "we chose the kestrel queue"
    assert edited.tags == ["queue"]
    await consistent(store)
    # b's context now holds the new word: searching it finds both session neighbours.
    hits = await store.lexical_candidates("kestrel", Scope(namespaces=(NS,)), 10)
    assert {h.seq for h in hits} == {a.seq, b.seq}
    assert not await store.lexical_candidates("zeppelin", Scope(namespaces=(NS,)), 10)
    with pytest.raises(StorageError, match="changed by another writer"):
        await store.edit(a, mem("something else"), NOW + 2, "stale")
    with pytest.raises(InvalidInputError, match="already stored"):
        await store.edit(edited, mem("deployment finished fine"), NOW + 2, "clash")
    await store.delete(b, NOW + 3, "gone")
    with pytest.raises(NotFoundError):
        await store.edit(b, mem("x y z"), NOW + 4, "deleted")
    assert "edited" in [e.event for e in await store.lineage(a.id)]
    await consistent(store)


async def test_delete_keeps_lineage_and_refreshes_neighbours(store: Store) -> None:
    seqs = [(await store.insert(mem(f"turn {w}", session="s")))[0]
            for w in ("alpha", "bravo", "charlie", "delta")]
    await store.delete(seqs[1], NOW + 5, "forget")
    assert await store.get(seqs[1].id) is None
    assert [e.event for e in await store.lineage(seqs[1].id)][-1] == "deleted"
    assert await store.lineage_namespace(seqs[1].id) == NS
    assert [m.id for m in await store.session_memories(NS, "s")] == [
        seqs[0].id, seqs[2].id, seqs[3].id]
    hits = await store.lexical_candidates("bravo", Scope(namespaces=(NS,)), 10)
    assert hits == []
    await consistent(store)


async def test_touch_coalesces_accesses(store: Store) -> None:
    a, _ = await store.insert(mem("coffee is brewed at nine"))
    await store.touch([a], NOW + 10)
    await store.touch([a], NOW + 20)
    got = await store.get(a.id)
    assert got is not None and got.access_count == 2
    assert got.accessed_at.timestamp() == NOW + 20
    events = await store.lineage(a.id)
    assert [(e.event, e.count) for e in events] == [("created", 1), ("accessed", 2)]
    await consistent(store)


async def test_apply_gc_promote_delete_merge_and_cursor(store: Store) -> None:
    a, _ = await store.insert(mem("alpha notes about caching", tags=("x",)))
    b, _ = await store.insert(mem("bravo notes about caching", tags=("y",), access_count=3))
    c, _ = await store.insert(mem("charlie notes about logging"))
    d, _ = await store.insert(mem("delta notes about tracing"))
    plan = [decision(a, "merge", merge_into=b.id), decision(c, "delete"),
            decision(d, "promote", MemoryType.WORKING),
            decision(d, "promote", MemoryType.WORKING)]  # the repeat is stale: skipped
    n = await store.apply_gc(plan, {m.id: m for m in (a, b, c, d)}, NOW + 30,
                             cursor=(NS, d.seq))
    assert n >= 1
    assert await store.get(a.id) is None and await store.get(c.id) is None
    kept = await store.get(b.id)
    assert kept is not None and set(kept.tags) == {"x", "y"} and kept.access_count == 3
    promoted = await store.get(d.id)
    assert promoted is not None and promoted.memory_type == MemoryType.WORKING
    assert [e.event for e in await store.lineage(d.id)] == ["created", "promote"]
    assert await store.tagged_count(NS, "x") == 1
    assert [m.id for m in await store.labelled("x", [NS], 10)] == [b.id]
    assert [m.id for m in await store.gc_window(NS, 10)] == [b.id, d.id]  # wrapped round
    await consistent(store)


async def test_injections_and_context_resets(store: Store) -> None:
    a, _ = await store.insert(mem("first injected memory"))
    b, _ = await store.insert(mem("second injected memory"))
    await store.record_injections("sess", [a, b], NOW + 1, forget_before=NOW - 10)
    assert await store.injected_ids("sess") == {a.id, b.id}
    got = await store.get(a.id)
    assert got is not None and got.access_count == 1
    assert await store.clear_injections("sess", NOW + 2, forget_before=NOW - 10) == 2
    assert await store.injected_ids("sess") == set()
    assert await store.context_reset_at("sess") == NOW + 2
    assert await store.context_reset_at("other") is None
    await consistent(store)


async def test_browse_pages_and_filters(store: Store) -> None:
    made = [(await store.insert(mem(f"memory number {i} here", at=NOW + i,
                                    tags=("even",) if i % 2 == 0 else (),
                                    metadata={"source": "hook" if i < 3 else "cli"})))[0]
            for i in range(7)]
    page1 = await store.browse(Browse(namespace=NS), None, 3)
    assert [m.id for m in page1] == [m.id for m in reversed(made)][:3]
    page2 = await store.browse(Browse(namespace=NS), page1[-1].seq, 3)
    assert [m.id for m in page2] == [m.id for m in reversed(made)][3:6]
    tagged = await store.lexical_candidates("memory number", Scope(namespaces=(NS,),
                                                                   tags=("even",)), 10)
    assert sorted(h.seq for h in tagged) == sorted(made[i].seq for i in (0, 2, 4, 6))
    even = await store.browse(Browse(namespace=NS, tag="even"), None, 10)
    assert [m.id for m in even] == [made[i].id for i in (6, 4, 2, 0)]
    hooked = await store.browse(Browse(namespace=NS, source="hook", since=NOW + 1), None, 10)
    assert [m.id for m in hooked] == [made[2].id, made[1].id]
    assert await store.created_range(NS) == (NOW, NOW + 6)
    assert await store.created_counts(NS, [NOW, NOW + 3], 3.0) == [3, 3]
    assert await store.created_range(OTHER) is None
    tiers = await store.tier_tokens(NS)
    assert tiers[MemoryType.EPISODIC][0] == 7
    assert [m.id for m in await store.find_by_prefix(made[0].id[:6], [NS])] == [made[0].id]
    assert await store.find_by_prefix(made[0].id[:6], [OTHER]) == []
    assert len(await store.namespace_memories(NS, limit=4)) == 4


async def test_tier_facts_by_score_is_the_brute_force_order(store: Store) -> None:
    rng = random.Random(7)
    batch = []
    for i in range(1_300):  # more than one page of the bounded read
        age = rng.choice([0.0, 5.0, 47.9, 48.1, 100.0, rng.uniform(0, 500)])
        batch.append(mem(f"note {i} {uuid.UUID(int=rng.getrandbits(128)).hex}",
                         at=NOW - age * 3600.0, importance=rng.choice([0.1, 0.5, rng.random()]),
                         tier=rng.choice(list(MemoryType)),
                         access_count=rng.choice([0, 1, 40, rng.randrange(5_000)])))
    assert await store.insert_many(batch, skip_existing=False) == len(batch)
    stored = await store.namespace_memories(NS)
    for at_least, archived in ((0.0, 0.0), (0.2, 0.45), (0.35, 0.45), (0.55, 0.6)):
        read = [m.seq async for m in store.tier_facts_by_score(
            NS, NOW, collector.WEIGHTS, at_least=at_least, archived_at_least=archived)]
        scored = sorted(
            ((v, m.seq) for m in stored
             if (v := scoring.breakdown(m, NOW, collector.WEIGHTS).composite) >= at_least
             and (m.memory_type != MemoryType.ARCHIVED or v >= archived)), reverse=True)
        assert read == [seq for _, seq in scored]
    static = await store.static_candidates(Scope(namespaces=(NS,)), 5, NOW, Weights())
    assert len(static) == 5
    await consistent(store)


async def test_tier_facts_by_score_reads_past_a_page_of_excluded_rows(store: Store) -> None:
    """A full page of important but excluded (archived) memories must not end the read:
    less important, much used memories below it still reach the threshold."""
    old = NOW - 500 * 3600.0
    excluded = [mem(f"archived {i}", at=old, importance=0.9, tier=MemoryType.ARCHIVED)
                for i in range(1_100)]
    wanted = [mem(f"used {i}", at=old, importance=0.5, access_count=5_000) for i in range(20)]
    await store.insert_many([*excluded, *wanted], skip_existing=False)
    seq_of = {m.id: m.seq for m in await store.namespace_memories(NS)}
    read = [m.seq async for m in store.tier_facts_by_score(
        NS, NOW, collector.WEIGHTS, at_least=0.2, archived_at_least=0.9)]
    assert sorted(read) == sorted(seq_of[m.id] for m in wanted)


async def test_insert_many_skips_or_refuses_existing(store: Store) -> None:
    a = mem("imported one")
    assert await store.insert_many([a, mem("imported two")], skip_existing=False) == 2
    assert await store.insert_many([a, mem("imported three")], skip_existing=True) == 1
    # a record stored as it is (same id, namespace, content) is already present: no clash
    assert await store.insert_many([a], skip_existing=False) == 0
    with pytest.raises(StorageError, match="already exists"):  # the same text, another id
        await store.insert_many([mem("imported four"), mem("imported one")], skip_existing=False)
    with pytest.raises(StorageError, match="already exists"):  # the same id, another text
        await store.insert_many([mem("imported five"), dataclasses.replace(
            mem("imported six"), id=a.id)], skip_existing=False)
    assert await store.count() == 3  # the refused imports left nothing half-done
    await consistent(store)


async def test_insert_many_joins_stored_sessions(store: Store) -> None:
    """An import into sessions that already hold memories gives every memory the context it
    would have had stored one by one (the consistency check recomputes it from scratch)."""
    for i in range(5):
        await store.insert(mem(f"stored turn {i} about walrus{i}", session="s", at=NOW + i))
    batch = [mem(f"imported turn {i} about narwhal{i}", session=("s", "t", None)[i % 3],
                 at=NOW + 10 + i, tags=("imp",) if i % 2 else ())
             for i in range(12)]
    batch.append(mem("stored turn 0 about walrus0", session="s"))  # already stored: skipped
    batch.append(batch[0])  # twice in the batch: the second is skipped
    assert await store.insert_many(batch, skip_existing=True) == 12
    await consistent(store)
    hits = await store.lexical_candidates("walrus4", Scope(namespaces=(NS,)), 10)
    assert len(hits) == 5  # its own text; its two earlier and two new neighbours
    assert len(await store.session_memories(NS, "s")) == 9


async def test_namespaces_never_see_each_other(store: Store) -> None:
    mine, _ = await store.insert(mem("the staging password rotates weekly"))
    await store.insert(mem("the staging password rotates daily", namespace=OTHER))
    await store.insert(mem("kumquat kumquat kumquat", namespace=OTHER))
    hits = await store.lexical_candidates("staging password", Scope(namespaces=(NS,)), 10)
    assert [h.seq for h in hits] == [mine.seq]
    assert await store.lexical_candidates("kumquat", Scope(namespaces=(NS,)), 10) == []
    docs, freq = await store.namespace_doc_freq(NS)
    assert docs == 1 and "kumquat" not in freq
    assert await store.memories_matching_all(NS, [["staging", "rotates"]]) == [mine]
    assert await store.memories_matching_all(NS, [["staging", "daily"]]) == []
    assert await store.count() == 3 and await store.count(NS) == 1


async def test_move_namespace_folds_statistics(store: Store) -> None:
    await store.insert(mem("shared text", namespace=OTHER, session="s"))
    await store.insert(mem("shared text"))
    await store.insert(mem("only in the old spelling", namespace=OTHER, session="s"))
    assert await store.move_namespace(OTHER, NS, NOW) == 2
    assert await store.namespaces() == [NS]
    assert await store.count(NS) == 2
    hits = await store.lexical_candidates("spelling", Scope(namespaces=(NS,)), 10)
    assert len(hits) == 1
    await consistent(store)


CORPUS = [
    ("Alice: I adopted a rescue greyhound named Pepper last spring", "c1"),
    ("Bob: nice, my sister has a greyhound too", "c1"),
    ("Alice: we went hiking at Mount Tam on Saturday", "c1"),
    ("Bob: the deploy pipeline uses blue green releases", "c2"),
    ("Alice: Pepper hates thunderstorms and hides under the bed", "c2"),
    ("Bob: the database migration runs before the deploy", "c2"),
    ("Alice: I started pottery classes on Tuesdays", None),
    ("Bob: pottery sounds fun, my greyhound would break the pots", None),
]
QUERIES = ["what is the name of Alice's greyhound", "when does the deploy run migration",
           "pottery classes", "Bob hiking", "thunderstorms"]


@pytest.mark.postgres
async def test_backends_rank_alike(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """One corpus in both stores: the same candidates with the same semantic_similarity."""
    stores = [await _open(b, tmp_path, request) for b in NAMES]
    try:
        ids: list[dict[int, str]] = []
        for s in stores:
            seen = {}
            for i, (text, session) in enumerate(CORPUS):
                m, _ = await s.insert(mem(text, session=session, at=NOW + i,
                                          tags=("pets",) if "greyhound" in text else ()))
                seen[m.seq] = text
            await s.insert(mem("Alice: greyhound", namespace=OTHER))  # other namespace
            ids.append(seen)
        for query in QUERIES:
            ranked = []
            for s, seen in zip(stores, ids, strict=True):
                hits = await s.lexical_candidates(query, Scope(namespaces=(NS,)), 50)
                assert hits, query
                # Each backend orders its candidates its own way; the scores are the same.
                ranked.append(sorted((seen[h.seq], round(h.semantic, 9)) for h in hits))
                one = await s.similarity_of(query, (await s.memories_by_seq(
                    [hits[0].seq]))[hits[0].seq], [NS])
                assert (seen[hits[0].seq], round(one, 9)) in ranked[-1]
            assert ranked[0] == ranked[1], query
    finally:
        for s in stores:
            await s.close()


async def test_term_sequences_are_the_contents_terms_in_order(store: Store) -> None:
    """What GC's near-duplicate pass reads instead of re-tokenising (consolidate)."""
    first = mem("Running tests runs the runner again")
    second = mem("the payments service")
    await store.insert_many([first, second], skip_existing=False)
    rows = await store.namespace_memories(NS)
    seq = {m.id: m.seq for m in rows}
    expected = {seq[m.id]: analysis.packed_ids(analysis.term_sequences([m.content])[0])
                for m in (first, second)}
    assert await store.term_sequences(list(expected)) == expected
    assert await store.namespace_term_sequences(NS) == expected
    _, together = await store.gc_facts_and_sequences(NS)
    assert together == expected
    assert expected[seq[first.id]] == b"".join(  # BLAKE2b-64 of each stem, in order
        hashlib.blake2b(t.encode(), digest_size=8).digest()
        for t in ["run", "test", "run", "the", "runner", "again"])
    await consistent(store)


async def test_restored_lineage_keeps_the_rows_that_fit(store: Store) -> None:
    """A page with one row the table refuses (no memory id) keeps the others."""
    def row(memory_id: str | None, at: float) -> tuple[object, ...]:
        return (memory_id, NS, "created", at, None, "episodic", 0.5, "copied", 1, at)

    assert await store.restore_lineage([row("a" * 32, NOW), row("b" * 32, NOW + 1)]) == 2
    page = [row("c" * 32, NOW + 2), row(None, NOW + 3), row("d" * 32, NOW + 4)]
    assert await store.restore_lineage(page) == 2
    kept = {e.memory_id for m in "abcd" for e in await store.lineage(m * 32)}
    assert kept == {"a" * 32, "b" * 32, "c" * 32, "d" * 32}


async def test_most_of_the_store_in_scope_ranks_as_a_filtered_search(store: Store) -> None:
    """A scope holding most of the store may be searched index first and checked after
    (store/sqlite/backend.py): the same candidates, in the same order, as the search that
    filters every match (a tag filter every memory passes forces that one)."""
    ours = [(await store.insert(mem(f"export job note {i}: " + "retries stay capped " * (i % 7),
                                    tags=("t",), kind=KINDS[i % 2])))[0] for i in range(40)]
    for i in range(10):  # the best matches lie outside the scope
        await store.insert(mem(f"export job {i}", namespace=OTHER, tags=("t",)))
    for old in ours[:3]:  # and among the scope's, superseded ones
        await store.insert(mem(f"{old.content} (corrected)", tags=("t",)), supersedes=old)
    for limit in (5, 20, 60):
        plain = await store.lexical_candidates("export job", Scope(namespaces=(NS,)), limit)
        tagged = await store.lexical_candidates(
            "export job", Scope(namespaces=(NS,), tags=("t",)), limit)
        assert plain == tagged
        assert len(plain) == min(limit, 40)
        assert not {h.seq for h in plain} & {m.seq for m in ours[:3]}
        decided = Scope(namespaces=(NS,), kind=MemoryKind.DECISION)
        filtered = dataclasses.replace(decided, tags=("t",))
        found = await store.lexical_candidates("export job", decided, limit)
        assert found == await store.lexical_candidates("export job", filtered, limit)
        assert {h.seq for h in found} <= {m.seq for m in ours[::2]}
    await consistent(store)


KINDS = (MemoryKind.DECISION, MemoryKind.NOTE)


async def test_a_subnormal_importance_ranks_as_zero_without_an_underflow(store: Store) -> None:
    """PostgreSQL raises on a float8 product that underflows (0.3 × 5e-324); the query-less
    composite counts such an importance as 0 on both backends."""
    tiny, _ = await store.insert(mem("export export", importance=5e-324))
    zero, _ = await store.insert(mem("export plan", importance=0.0))
    found = await store.static_candidates(Scope(namespaces=(NS,)), 5, NOW, Weights())
    assert {c.seq for c in found} == {tiny.seq, zero.seq}
    assert (await store.get(tiny.id)).importance == 5e-324  # type: ignore[union-attr]


async def test_sharing_candidates_look_up_the_terms_chosen_in_own_text_only(
    store: Store,
) -> None:
    """What `remember` reads to say what a new memory repeats (core/similar.py): memories of
    the scope holding a chosen term in their own text, best first, never through a
    neighbour's context, with their content terms."""
    kestrel, _ = await store.insert(mem("kestrel runs the nightly export job", session="s1"))
    await store.insert(mem("the export job writes parquet files", session="s1"))
    other_kind, _ = await store.insert(mem("kestrel also owns billing", kind=MemoryKind.FACT))
    await store.insert(mem("kestrel notes elsewhere", namespace=OTHER))
    seen: list[dict[str, int]] = []

    def choose(doc_freq: Mapping[str, int]) -> list[str]:
        seen.append(dict(doc_freq))
        return ["kestrel"]

    notes = Scope(namespaces=(NS,), kind=MemoryKind.NOTE)
    found = await store.sharing_candidates("kestrel exports parquet", notes, 10, choose)
    assert [c.seq for c in found] == [kestrel.seq]  # not the neighbour, not other kinds
    assert found[0].semantic == 0.0 and "kestrel" in found[0].terms
    assert seen and seen[0]["kestrel"] == 3  # store-wide own-text counts
    facts = Scope(namespaces=(NS,), kind=MemoryKind.FACT)
    assert [c.seq for c in await store.sharing_candidates(
        "kestrel", facts, 10, choose)] == [other_kind.seq]
    assert await store.sharing_candidates("kestrel", notes, 10, lambda _: []) == []
    assert await store.sharing_candidates("the and of", notes, 10, choose) == []
