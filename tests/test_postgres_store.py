"""What only a shared server brings: passwords in URLs, concurrent openers and writers, cut
connections, lock waits. Real server only (PMA_TEST_POSTGRES_URL, see tests/postgres.py)."""

from __future__ import annotations

import asyncio
import logging
import traceback
import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest

from pma_mcp.core.errors import StorageBusyError, StorageError, StorageUnavailableError
from pma_mcp.core.models import Scope
from pma_mcp.store.postgres import url as urls
from pma_mcp.store.postgres.backend import WRITE_LOCK_CLASS
from pma_mcp.store.postgres.schema import SCHEMA_VERSION
from pma_mcp.store.postgres.store import PostgresStore
from tests import postgres
from tests.test_store_contract import NS, consistent, mem

pytestmark = pytest.mark.postgres


SECRET = "Sup3r-S3cret%21pw"
"""A password as it sits in a URL (percent-encoded "!")."""


def with_password(url: str) -> str:
    scheme, rest = url.split("://", 1)
    userinfo, _, host = rest.rpartition("@")
    user = userinfo.partition(":")[0] or "postgres"
    return f"{scheme}://{user}:{SECRET}@{host or rest}"


def base_of(url: str) -> str:
    """`url` without its query (the test schema's options)."""
    return url.partition("?")[0]


LABEL = f"pma-test-{uuid.uuid4().hex[:8]}"
"""application_name of the `pg` store's connections: the tests that cut connections cut
only these, never another client's of the same server."""


@pytest.fixture
async def pg(postgres_url: str) -> AsyncIterator[PostgresStore]:
    store = await PostgresStore.open(f"{postgres_url}&application_name={LABEL}")
    try:
        yield store
    finally:
        await store.close()


def test_location_and_redaction_never_show_a_password() -> None:
    url = f"postgresql://alice:{SECRET}@db.example:5433/team?sslmode=require&password=x2"
    assert urls.location(url) == "postgresql://alice@db.example:5433/team"
    text = urls.redact(f"could not open {url}: pw {SECRET} / Sup3r-S3cret!pw password=x2", url)
    assert SECRET not in text and "Sup3r-S3cret!pw" not in text and "x2" not in text
    assert "postgresql://alice@db.example:5433/team" in text


async def test_password_url_is_shown_without_its_password(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    url = with_password(base_of(postgres_url)) + "?" + postgres_url.partition("?")[2]
    store = await PostgresStore.open(url)  # trust auth on the test server: any password
    try:
        assert SECRET not in store.location and "@" in store.location
        await store.insert(mem("a memory on a password URL"))
    finally:
        await store.close()
    unreachable = with_password("postgresql://postgres@127.0.0.1:1/pma")
    with pytest.raises(StorageUnavailableError) as caught:
        await PostgresStore.open(unreachable)
    shown = "".join(traceback.format_exception(caught.value))
    assert SECRET not in shown and "could not be reached" in shown
    assert "retry" in str(caught.value)
    assert SECRET not in caplog.text


async def test_tables_land_in_the_urls_schema(
    postgres_url: str, pg: PostgresStore, postgres_server: str
) -> None:
    schema = postgres_url.rpartition("%3D")[2]
    conn = await asyncpg.connect(postgres_server)
    try:
        tables = {r[0] for r in await conn.fetch(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = $1",
            schema)}
    finally:
        await conn.close()
    assert {"memories", "postings", "term_df", "schema_version"} <= tables


async def test_concurrent_openers_migrate_once(postgres_url: str) -> None:
    stores = await asyncio.gather(*(PostgresStore.open(postgres_url) for _ in range(4)))
    try:
        assert [await s.schema_version() for s in stores] == [SCHEMA_VERSION] * 4
        (count,) = await postgres.fetch(postgres_url, "SELECT count(*) FROM schema_version")
        assert count[0] == 1
        await postgres.execute(postgres_url, "UPDATE schema_version SET version = 99")
    finally:
        for s in stores:
            await s.close()
    with pytest.raises(StorageError, match="newer than this pma-mcp"):
        await PostgresStore.open(postgres_url)


async def test_a_v1_schema_gains_each_memorys_term_sequence(postgres_url: str) -> None:
    """v2 fills `term_seq` from the rows, in this process (the analyzer is Python's)."""
    store = await PostgresStore.open(postgres_url)
    try:
        stored = [mem(f"Deploy note {i}: the payments service talks to ledger {i}")
                  for i in range(5)]
        await store.insert_many(stored, skip_existing=False)
        await postgres.execute(postgres_url, "ALTER TABLE memories DROP COLUMN term_seq")
        await postgres.execute(postgres_url, "ALTER TABLE memories DROP COLUMN kind")  # v4's
        await postgres.execute(postgres_url, "UPDATE schema_version SET version = 1")
    finally:
        await store.close()
    store = await PostgresStore.open(postgres_url)
    try:
        assert await store.schema_version() == SCHEMA_VERSION
        seqs = [m.seq for m in await store.namespace_memories(NS)]
        sequences = await store.term_sequences(seqs)
        assert all(sequences[s] for s in seqs)
        await consistent(store)  # which recomputes every term sequence
    finally:
        await store.close()


async def test_a_v3_schema_gains_kinds_inferred_from_the_rows(postgres_url: str) -> None:
    """v4 adds `kind`: a hook-saved exchange becomes an event, the rest as core/kinds.py says."""
    store = await PostgresStore.open(postgres_url)
    try:
        saved = mem("User: why?\nAssistant: because", tags=("session", "auto-saved"),
                    metadata={"source": "hook:stop"})
        chose = mem("We decided to pin the api port")
        plain = mem("The api port is 9090")
        await store.insert_many([saved, chose, plain], skip_existing=False)
        await postgres.execute(postgres_url, "ALTER TABLE memories DROP COLUMN kind")
        await postgres.execute(postgres_url, "UPDATE schema_version SET version = 3")
    finally:
        await store.close()
    store = await PostgresStore.open(postgres_url)
    try:
        assert await store.schema_version() == SCHEMA_VERSION
        kinds = {m.id: m.kind.value for m in await store.namespace_memories(NS)}
        assert kinds == {saved.id: "event", chose.id: "decision", plain.id: "note"}
        await consistent(store)
    finally:
        await store.close()


async def _waiting_backends(conn: asyncpg.Connection) -> list[int]:
    rows = await conn.fetch(
        "SELECT pid FROM pg_stat_activity WHERE application_name = $1 "
        "AND wait_event_type = 'Lock' AND query LIKE '%pg_advisory_xact_lock%'", LABEL)
    return [int(r[0]) for r in rows]


async def _hold_namespace_lock(base: str, namespace: str) -> asyncpg.Connection:
    holder = await asyncpg.connect(base)
    await holder.execute("SELECT pg_advisory_lock($1, hashtext($2))", WRITE_LOCK_CLASS,
                         namespace)
    return holder


async def test_connection_cut_mid_call_is_retryable_and_loses_nothing_acknowledged(
    pg: PostgresStore, postgres_server: str
) -> None:
    base = postgres_server
    assert base is not None
    kept, _ = await pg.insert(mem("acknowledged before the cut"))
    holder = await _hold_namespace_lock(base, NS)
    try:
        pending = asyncio.create_task(pg.insert(mem("never acknowledged")))
        for _ in range(200):
            if pids := await _waiting_backends(holder):
                break
            await asyncio.sleep(0.05)
        assert pids, "the insert never waited for the lock"
        for pid in pids:  # what a server restart does to the connection
            await holder.execute("SELECT pg_terminate_backend($1)", pid)
        with pytest.raises(StorageUnavailableError, match="could not be reached"):
            await pending
    finally:
        await holder.close()
    _, dup = await pg.insert(mem("stored after the cut"))
    assert not dup
    contents = {m.content for m in await pg.namespace_memories(NS)}
    assert contents == {"acknowledged before the cut", "stored after the cut"}
    assert await pg.get(kept.id) is not None
    await consistent(pg)


async def test_idle_connections_cut_by_a_restart_are_replaced(
    pg: PostgresStore, postgres_server: str
) -> None:
    """Connections idle in the pool when the server restarts are replaced without an error:
    nothing had been sent on them, so the store runs the call again on a new one."""
    for round_ in range(3):
        await pg.insert(mem(f"before restart {round_}"))
        conn = await asyncpg.connect(postgres_server)
        try:
            cut = await conn.fetchval(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE application_name = $1", LABEL)
        finally:
            await conn.close()
        assert cut >= 1
        await asyncio.sleep(0.1)
        if round_ % 2:
            await pg.insert(mem(f"after restart {round_}"))  # a write first
        else:
            assert await pg.count(NS) >= 1  # a read first
    assert {m.content for m in await pg.namespace_memories(NS)} == {
        "before restart 0", "before restart 1", "after restart 1", "before restart 2"}
    await consistent(pg)


async def test_lock_wait_past_the_timeout_is_busy(postgres_url: str, postgres_server: str) -> None:
    base = postgres_server
    assert base is not None
    store = await PostgresStore.open(postgres_url, busy_timeout_ms=200)
    try:
        holder = await _hold_namespace_lock(base, NS)
        try:
            with pytest.raises(StorageBusyError, match="busy"):
                await store.insert(mem("waits too long"))
        finally:
            await holder.close()
        await store.insert(mem("goes through"))
        assert await store.count() == 1
    finally:
        await store.close()


async def test_concurrent_writers_keep_dedupe_and_statistics_exact(postgres_url: str) -> None:
    """Six stores (six pools, as six processes) write the same facts into one namespace at
    once, in shared sessions: every fact is stored once and reinforced by the others."""
    stores = await asyncio.gather(*(PostgresStore.open(postgres_url) for _ in range(6)))
    facts = 30

    async def writer(store: PostgresStore, k: int) -> None:
        for i in range(facts):
            await store.insert(mem(f"fact {i} about subsystem {i % 7}",
                                   session=f"s{i % 3}", at=1_800_000_000.0 + i))
            await store.insert(mem(f"private note {k}.{i}", namespace=f"/w{k}"))

    try:
        await asyncio.gather(*(writer(s, k) for k, s in enumerate(stores)))
        store = stores[0]
        assert await store.count(NS) == facts
        shared = await store.namespace_memories(NS)
        assert sum(m.access_count for m in shared) == facts * (len(stores) - 1)
        assert await store.count() == facts * (1 + len(stores))
        hits = await store.lexical_candidates("subsystem 3", Scope(namespaces=(NS,)), 50)
        assert hits and all(h.semantic > 0 for h in hits)
        await consistent(store)
    finally:
        for s in stores:
            await s.close()
