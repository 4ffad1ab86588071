"""Namespace isolation, property-based (hypothesis): a memory stored in project A can never be
recalled, inspected, forgotten, superseded, merged by GC, or listed as related by a caller
whose namespace is project B — not by id, id prefix, query, tag, graph label or GC.

Both projects share one store, as they do in real use (one ~/.pma_store.db, or a team's
PostgreSQL database): each backend in turn, a fresh store per example. B's memories
are drawn from the same small vocabulary, tags and entities as A's (often the very same text),
so every lookup has something in A to wrongly find. Neither namespace is "default": the global
namespace is visible from every project by design.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client, MCPError
from mcp.types import TextContent

from pma_mcp.config import Settings
from pma_mcp.core.budget import WordEstimate
from pma_mcp.core.errors import InvalidInputError, NotFoundError, PmaError
from pma_mcp.core.namespaces import GLOBAL_NAMESPACE, canonical_namespace
from pma_mcp.core.validation import namespace_name
from pma_mcp.server import build_server
from pma_mcp.service import MemoryService
from tests import postgres
from tests.backends import Backend
from tests.conftest import FakeClock
from tests.reliability import checks

Stores = Callable[[], contextlib.AbstractContextManager[Settings]]
"""A fresh, empty store per call (one per hypothesis example): its Settings, without namespace."""

VOCAB = ("export retries webhook billing cache migration schema deploy rollback token queue "
         "worker timeout jitter replica index vacuum latency").split()
LABELS = ("ops", "db", "billing", "api.py", "jobs.toml", "alice", "%", "_", "ops ")

namespaces = st.one_of(
    st.sampled_from(["/home/dev/a", "/home/dev/a/", "/home/dev/A", "/home/dev/b", "%", "_",
                     "a%", "default-ish", "Default", "ns'; DROP TABLE memories; --", "é", "a b"]),
    st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=20),
).filter(lambda s: s.strip() not in ("", GLOBAL_NAMESPACE)
          and namespace_name(canonical_namespace(s)))  # PMA_NAMESPACE refuses the rest
contents = st.lists(st.sampled_from(VOCAB), min_size=2, max_size=10).map(" ".join)
labels = st.lists(st.sampled_from(LABELS), max_size=3)


@dataclass(frozen=True)
class Spec:
    content: str
    tags: list[str]
    entities: list[str]
    importance: float
    tier: str


specs = st.builds(
    Spec, contents, labels, labels, st.floats(0.0, 1.0),
    st.sampled_from(["working", "episodic", "semantic", "archived"]),
)


def settings_for(store: Settings, namespace: str) -> Settings:
    """Settings as a process resolves them (PMA_NAMESPACE is trimmed there)."""
    env = {"PMA_DB_PATH": str(store.db_path), "PMA_NAMESPACE": namespace}
    if store.database_url:
        env["PMA_DATABASE_URL"] = store.database_url
    return Settings.from_env(env)


@pytest.fixture
def stores(backend: Backend, request: pytest.FixtureRequest) -> Stores:
    """New stores on the test's backend: a SQLite file in a temporary folder, or a schema of
    its own on the session's PostgreSQL server."""
    server: str | None = (request.getfixturevalue("postgres_server")
                          if backend == "postgres" else None)

    @contextlib.contextmanager
    def fresh() -> Iterator[Settings]:
        with tempfile.TemporaryDirectory(prefix="pma-isolation-") as folder:
            db = Path(folder) / "shared.db"
            if server is None:
                yield Settings(db_path=db)
                return
            with postgres.fresh_schema(server) as url:
                yield Settings(db_path=db, database_url=url)

    return fresh


async def expect_hidden(call: Awaitable[Any], a_ids: set[str]) -> None:
    """The call must fail as not-found/invalid, or succeed on something that is not A's."""
    try:
        result = await call
    except (NotFoundError, InvalidInputError):
        return
    found = getattr(result, "id", None) or getattr(getattr(result, "memory", None), "id", None)
    found = found or getattr(result, "deleted_id", None)
    assert found not in a_ids, f"B reached A's memory {found}"


async def check_isolation(store: Settings, a_ns: str, b_ns: str, a_specs: list[Spec],
                          b_specs: list[Spec], b_copies_a: bool, prefix_len: int,
                          hours: float) -> None:
    clock = FakeClock()
    a = await MemoryService.open(settings_for(store, a_ns), clock=clock,
                                 counter=WordEstimate())
    b = await MemoryService.open(settings_for(store, b_ns), clock=clock,
                                 counter=WordEstimate())
    try:
        a_ids: set[str] = set()
        for s in a_specs:
            added = await a.add(s.content, importance=s.importance, memory_type=s.tier,
                                tags=s.tags, linked_entities=s.entities, session_id="s1")
            a_ids.add(added.memory.id)
        # B stores the same text (must be a new memory of B's, not a reinforcement of A's).
        for s in (a_specs if b_copies_a else []) + b_specs:
            added = await b.add(s.content, importance=s.importance, memory_type=s.tier,
                                tags=s.tags, linked_entities=s.entities, session_id="s1")
            assert added.memory.id not in a_ids
            assert added.memory.namespace == b.namespace
        before = {k: v for k, v in checks.row_dump(store).items() if k in a_ids}
        lineage_before = [await a.store.lineage(i) for i in sorted(a_ids)]

        for memory_id in a_ids:
            for key in (memory_id, memory_id[:prefix_len], memory_id.upper()):
                await expect_hidden(b.get(key), a_ids)
                await expect_hidden(b.inspect(key, query="export"), a_ids)
                await expect_hidden(b.delete(key), a_ids)
                await expect_hidden(b.add("a correction", supersedes=key), a_ids)
            with pytest.raises(PmaError):
                await b.lineage_of(memory_id)
        for s in a_specs:
            for query in (s.content, s.content.split()[0], ""):
                found = await b.search(query, limit=50)
                assert not {r.memory.id for r in found} & a_ids
                pack = await b.get_context(query, token_budget=100_000)
                assert not {r.memory.id for r in pack.memories} & a_ids
                packs = await b.get_contexts(query, {
                    b.namespace: 50_000, b.settings.global_namespace: 50_000})
                assert not {r.memory.id for p in packs.values() for r in p.memories} & a_ids
            for label in [*s.tags, *s.entities]:
                if label.strip():
                    related = await b.related(label)
                    assert not {m.id for m in related.memories} & a_ids
            if s.tags:
                found = await b.search("", tags=s.tags, limit=50)
                assert not {r.memory.id for r in found} & a_ids
        assert (await b.stats()).total == await b.count()
        exported = await b.export()
        assert not {r["id"] for r in exported["memories"]} & a_ids

        clock.advance(hours)  # old enough for GC to demote, archive, delete and merge in B
        preview = await b.gc_preview()
        result = await b.gc_run()
        touched = {d.memory_id for d in result.decisions} | {
            d.merge_into for d in result.decisions if d.merge_into}
        assert not touched & a_ids
        assert not {d.memory_id for d in preview.to_merge + preview.to_delete} & a_ids

        after = {k: v for k, v in checks.row_dump(store).items() if k in a_ids}
        assert after == before, "a call from B changed A's memories"
        assert [await a.store.lineage(i) for i in sorted(a_ids)] == lineage_before
        assert (await a.store.check_consistency()).ok
    finally:
        await a.close()
        await b.close()


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(
    pair=st.tuples(namespaces, namespaces).filter(
        lambda p: canonical_namespace(p[0]) != canonical_namespace(p[1])),
    a_specs=st.lists(specs, min_size=1, max_size=4),
    b_specs=st.lists(specs, max_size=4),
    b_copies_a=st.booleans(),
    prefix_len=st.integers(6, 31),
    hours=st.sampled_from([0.0, 5.0, 80.0, 24.0 * 40]),
)
def test_another_namespace_never_sees_or_changes_a_memory(
    stores: Stores, pair: tuple[str, str], a_specs: list[Spec], b_specs: list[Spec],
    b_copies_a: bool, prefix_len: int, hours: float,
) -> None:
    with stores() as store:
        asyncio.run(check_isolation(store, pair[0], pair[1], a_specs, b_specs, b_copies_a,
                                    prefix_len, hours))


# ------------------------------------------------------------ through the MCP tools


def texts(content: list[Any]) -> str:
    return "\n".join(c.text for c in content if isinstance(c, TextContent))


async def check_tools(store: Settings, a_ns: str, b_ns: str, spec: Spec,
                      prefix_len: int) -> None:
    async with await MemoryService.open(settings_for(store, a_ns),
                                        counter=WordEstimate()) as a:
        added = await a.add(spec.content, tags=spec.tags, linked_entities=spec.entities)
    secret = added.memory.id
    before = checks.snapshot(store, full=True)
    app = build_server(settings_for(store, b_ns), counter=WordEstimate())
    async with Client(app, mode="legacy", raise_exceptions=True) as client:
        for key in (secret, secret[:prefix_len]):
            for tool in ("forget", "inspect"):
                result = await client.call_tool(tool, {"memory_id": key})
                assert result.is_error, (tool, key)
            with pytest.raises(MCPError):
                await client.read_resource(f"memory://{key}")
        calls: list[tuple[str, dict[str, Any]]] = [
            ("recall", {"query": spec.content, "limit": 50}),
            ("load_context", {"query": spec.content, "token_budget": 50_000}),
            ("memory_stats", {}), ("gc_preview", {}), ("gc_run", {}),
            *[("related", {"entity": label}) for label in spec.tags + spec.entities
              if label.strip()],
        ]
        for tool, args in calls:
            result = await client.call_tool(tool, args)
            assert not result.is_error, texts(result.content)
            assert secret not in texts(result.content), tool
        for tool, args in [*calls, ("remember", {"content": spec.content})]:
            named = await client.call_tool(tool, {**args, "namespace": a_ns})  # by name
            assert named.is_error and "PMA_READ_NAMESPACES" in texts(named.content), tool
    assert checks.snapshot(store, full=True) == before


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(
    pair=st.tuples(namespaces, namespaces).filter(
        lambda p: canonical_namespace(p[0]) != canonical_namespace(p[1])),
    spec=specs,
    prefix_len=st.integers(6, 31),
)
def test_tools_of_a_server_in_another_namespace_never_reach_a_memory(
    stores: Stores, pair: tuple[str, str], spec: Spec, prefix_len: int
) -> None:
    with stores() as store:
        asyncio.run(check_tools(store, pair[0], pair[1], spec, prefix_len))
