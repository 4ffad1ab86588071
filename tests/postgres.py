"""A fresh PostgreSQL schema per test, on the server PMA_TEST_POSTGRES_URL names.

Without that variable the PostgreSQL tests are skipped. Each test gets its own schema
(`options=-csearch_path=...` in the URL it is handed), dropped afterwards, so tests never see
each other's rows. The pginfra branch's session fixture (a throwaway cluster) replaces the
variable's source; the fixture below only needs a URL.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import asyncpg
import pytest

ENV = "PMA_TEST_POSTGRES_URL"
SKIP_REASON = f"PostgreSQL tests need a server: set {ENV}=postgresql://user@host:port/db"


def server_url() -> str | None:
    return os.environ.get(ENV) or None


def with_schema(url: str, schema: str) -> str:
    """`url` whose connections use `schema` (libpq's options=-csearch_path=...)."""
    joiner = "&" if "?" in url else "?"
    return f"{url}{joiner}options=-csearch_path%3D{schema}"


def _execute(url: str, sql: str) -> None:
    """One statement on its own connection, from synchronous code (fixture set-up)."""
    async def run() -> None:
        conn = await asyncpg.connect(url)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    # On a thread of its own: the caller may be inside a running event loop (an async test).
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, run()).result()


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A URL whose search_path is a new, empty schema (dropped after the test)."""
    base = server_url()
    if base is None:
        pytest.skip(SKIP_REASON)
    schema = f"t_{uuid.uuid4().hex[:12]}"
    _execute(base, f"CREATE SCHEMA {schema}")
    try:
        yield with_schema(base, schema)
    finally:
        _execute(base, f"DROP SCHEMA {schema} CASCADE")
