"""A fresh PostgreSQL schema per test, on the server PMA_TEST_POSTGRES_URL names.

Without that variable the PostgreSQL tests are skipped. Each test gets its own schema
(`options=-csearch_path=...` in the URL it is handed), dropped afterwards, so tests never see
each other's rows. The pginfra branch's session fixture (a throwaway cluster) replaces the
variable's source; the fixture below only needs a URL.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator

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


@pytest.fixture
async def postgres_url() -> AsyncIterator[str]:
    """A URL whose search_path is a new, empty schema (dropped after the test)."""
    base = server_url()
    if base is None:
        pytest.skip(SKIP_REASON)
    schema = f"t_{uuid.uuid4().hex[:12]}"
    conn = await asyncpg.connect(base)
    try:
        await conn.execute(f"CREATE SCHEMA {schema}")
    finally:
        await conn.close()
    try:
        yield with_schema(base, schema)
    finally:
        conn = await asyncpg.connect(base)
        try:
            await conn.execute(f"DROP SCHEMA {schema} CASCADE")
        finally:
            await conn.close()
