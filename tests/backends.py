"""Run one behavioural test on each storage backend: SQLite (a file in tmp_path) and PostgreSQL.

A test takes the `store_settings` fixture (conftest.py) to run once per backend; a test that
starts a subprocess (hook, stdio server, CLI) gives it `store_env(settings)`. The PostgreSQL
case skips, with one line at the end of the run saying how to enable it, where no server can
be had (tests/postgres.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from dataclasses import fields
from pathlib import Path
from typing import Any, Literal, TypeVar

import asyncpg
import pytest

from pma_mcp.config import Settings
from pma_mcp.core.models import Memory
from pma_mcp.store import Store, open_store
from tests import postgres

T = TypeVar("T")

Backend = Literal["sqlite", "postgres"]
BACKENDS = (pytest.param("sqlite", id="sqlite"),
            pytest.param("postgres", id="postgres", marks=pytest.mark.postgres))
"""`@pytest.fixture(params=BACKENDS)`; `-m postgres` selects the PostgreSQL cases only."""


def store_env(settings: Settings) -> dict[str, str]:
    """The variables a subprocess needs to open the same store as `settings`.

    PMA_DB_PATH is always set, to the test's own file, so a process that failed to select the
    PostgreSQL store would write into tmp_path, never the user's ~/.pma_store.db. Start from an
    environment without PMA_* (as the hook tests do), so a developer's PMA_DATABASE_URL cannot
    leak into a SQLite case.
    """
    env = {"PMA_DB_PATH": str(settings.db_path)}
    if settings.database_url:
        env["PMA_DATABASE_URL"] = settings.database_url
    return env


# ------------------------------------------------------------- reading a store from a test
# What a subprocess (hook, stdio server, dying client) left behind, read through the store
# itself so the same assertion holds on both backends. Synchronous (run on a thread of their
# own), so sync and async tests alike can call them.


def store_exists(settings: Settings) -> bool:
    """Whether anything created the store: the SQLite file, or any table in the schema."""
    if not settings.database_url:
        return settings.db_path.exists()
    url = settings.database_url

    async def tables() -> int:
        conn = await asyncpg.connect(url)
        try:
            return int(await conn.fetchval(
                "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"))
        finally:
            await conn.close()

    return postgres.run_sync(tables) > 0


def read_store(settings: Settings, read: Callable[[Store], Awaitable[T]]) -> T:
    """`read(store)` on a store opened for the call and closed after."""

    async def work() -> T:
        store = await open_store(settings)
        try:
            return await read(store)
        finally:
            await store.close()

    return postgres.run_sync(work)


def stored_memories(settings: Settings) -> list[Memory]:
    """Every namespace's memories in seq order; [] when nothing created the store."""
    if not store_exists(settings):
        return []

    async def every(store: Store) -> list[Memory]:
        found = [m for ns in await store.namespaces() for m in await store.namespace_memories(ns)]
        return sorted(found, key=lambda m: m.seq)

    return read_store(settings, every)


def stored_rows(settings: Settings) -> list[dict[str, Any]]:
    """`stored_memories` as plain dicts (memory_type its value), for column-style asserts."""
    return [{**{f.name: getattr(m, f.name) for f in fields(m)},
             "memory_type": m.memory_type.value} for m in stored_memories(settings)]


def lineage_events(settings: Settings) -> list[tuple[str, str]]:
    """(memory_id, event) of the stored memories' lineage, by memory seq then time."""
    ids = [m.id for m in stored_memories(settings)]

    async def events(store: Store) -> list[tuple[str, str]]:
        return [(e.memory_id, str(e.event)) for i in ids for e in await store.lineage(i)]

    return read_store(settings, events) if ids else []


def injected_ids(settings: Settings, session_id: str) -> set[str]:
    """The memories the hooks recorded as injected into `session_id`."""
    return read_store(settings, lambda store: store.injected_ids(session_id))


def postgres_rows(url: str, *, skip_tables: Collection[str] = ()) -> list[tuple[str, str]]:
    """(table, row as JSON text) of every row of every table in the URL's schema but
    `skip_tables`; sorted."""

    async def dump() -> list[tuple[str, str]]:
        conn = await asyncpg.connect(url)
        try:
            tables = [str(r[0]) for r in await conn.fetch(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
                if r[0] not in skip_tables]
            if not tables:
                return []
            every = " UNION ALL ".join(  # one round trip: a snapshot is taken around each call
                f"SELECT {_literal(t)}, to_jsonb(t)::text FROM \"{t}\" AS t" for t in tables)
            return sorted((str(r[0]), str(r[1])) for r in await conn.fetch(every))
        finally:
            await conn.close()

    return postgres.run_sync(dump)


def _literal(name: str) -> str:
    return "'" + name.replace("'", "''") + "'"


def stored_bytes(settings: Settings) -> bytes:
    """Everything the store holds, raw: the SQLite file and its WAL as on disk, or every row
    of every table in the PostgreSQL schema as text (index, lineage and metadata included)."""
    if not settings.database_url:
        db = settings.db_path
        return b"".join(p.read_bytes() for p in (db, Path(f"{db}-wal")) if p.exists())
    return "\n".join(row for _, row in postgres_rows(settings.database_url)).encode()
