"""The PostgreSQL test server itself (tests/postgres.py): real server, real asyncpg, no mocks.

What the PostgreSQL store's tests rely on: a per-test schema named by the URL, isolation between
tests, the libpq password conventions asyncpg honours, and one visible line when skipped.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import quote, urlsplit

import asyncpg
import pytest

from pma_mcp.config import Settings
from tests import postgres
from tests.backends import Backend, store_env

REPO = Path(__file__).resolve().parent.parent


def schema_of(url: str) -> str:
    return url.rsplit("%3D", 1)[1]


@pytest.mark.postgres
async def test_a_test_gets_its_own_empty_schema_as_search_path(postgres_url: str) -> None:
    conn = await asyncpg.connect(postgres_url)
    try:
        assert await conn.fetchval("SELECT current_schema()") == schema_of(postgres_url)
        assert await conn.fetchval(
            "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()") == 0
        await conn.execute("CREATE TABLE memories (id bigint PRIMARY KEY, content text)")
        await conn.execute("INSERT INTO memories VALUES (1, 'use UTC everywhere')")
        assert await conn.fetchval("SELECT content FROM memories WHERE id = 1") == \
            "use UTC everywhere"
        where = await conn.fetchval(
            "SELECT schemaname FROM pg_tables WHERE tablename = 'memories' "
            "AND schemaname = current_schema()")
        assert where == schema_of(postgres_url)
    finally:
        await conn.close()


@pytest.mark.postgres
@pytest.mark.parametrize("turn", ["first", "second"])
async def test_tests_do_not_see_each_others_schema(postgres_url: str, turn: str) -> None:
    """Each turn creates the same table; only its own exists: the other's schema was dropped."""
    conn = await asyncpg.connect(postgres_url)
    try:
        await conn.execute("CREATE TABLE only_here (turn text)")
        await conn.execute("INSERT INTO only_here VALUES ($1)", turn)
        holders = await conn.fetch(
            "SELECT schemaname FROM pg_tables WHERE tablename = 'only_here'")
        assert [r["schemaname"] for r in holders] == [schema_of(postgres_url)]
        assert await conn.fetchval("SELECT count(*) FROM only_here") == 1
        test_schemas = await conn.fetchval(
            "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 't\\_%'")
        assert test_schemas == 1
    finally:
        await conn.close()


@pytest.mark.postgres
def test_a_sync_test_gets_a_schema_too(postgres_url: str) -> None:
    """Subprocess tests are sync: the fixture must not need the test's event loop."""
    async def tables() -> str:
        conn = await asyncpg.connect(postgres_url)
        try:
            return str(await conn.fetchval("SELECT current_schema()"))
        finally:
            await conn.close()

    assert postgres.run_sync(tables) == schema_of(postgres_url)


def test_store_settings_and_subprocess_env_name_the_backend(
        store_settings: Settings, backend: Backend) -> None:
    env = store_env(store_settings)
    assert env["PMA_DB_PATH"] == str(store_settings.db_path)
    if backend == "postgres":
        assert store_settings.database_url is not None
        assert env["PMA_DATABASE_URL"] == store_settings.database_url
        # what a hook or server process resolves from that environment
        assert Settings.from_env(env).database_url == store_settings.database_url
    else:
        assert store_settings.database_url is None
        assert "PMA_DATABASE_URL" not in env
        assert Settings.from_env(env).database_url is None


@pytest.fixture
async def password_role(postgres_url: str) -> AsyncIterator[tuple[str, str]]:
    """A login role that must give a password over TCP; dropped after the test."""
    # URL-special characters; no ':' — asyncpg 0.32 does not unescape `\:` in a pgpass file
    role, password = f"pw_{uuid.uuid4().hex[:10]}", "p@ss/w rd?#%&="
    admin = await asyncpg.connect(postgres_url)
    try:
        if not await admin.fetchval("SELECT 1 FROM pg_roles WHERE rolname = $1",
                                    postgres.PASSWORD_GROUP):
            pytest.skip(f"{postgres.URL_ENV}'s server has no {postgres.PASSWORD_GROUP} role "
                        "requiring passwords; the throwaway cluster has")
        await admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}' "
                            f"IN ROLE {postgres.PASSWORD_GROUP}")
        await admin.execute(f"GRANT ALL ON SCHEMA {schema_of(postgres_url)} TO {role}")
        yield role, password
        await admin.execute(f"DROP OWNED BY {role}")
        await admin.execute(f"DROP ROLE {role}")
    finally:
        await admin.close()


def as_role(url: str, role: str, password: str | None = None) -> str:
    """`url` connecting as `role`, with `password` in the URL (percent-encoded) if given."""
    parts = urlsplit(url)
    auth = role if password is None else f"{role}:{quote(password, safe='')}"
    return parts._replace(netloc=f"{auth}@{parts.hostname}:{parts.port}").geturl()


@pytest.mark.postgres
async def test_password_from_pgpassword_pgpass_or_the_url(
        postgres_url: str, password_role: tuple[str, str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    role, password = password_role
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "absent"))
    bare = as_role(postgres_url, role)

    with pytest.raises(asyncpg.InvalidPasswordError) as refused:  # the server does ask
        await asyncpg.connect(as_role(postgres_url, role, "wrong"))
    assert "wrong" not in str(refused.value)

    async def connects(url: str) -> str:
        conn = await asyncpg.connect(url)
        try:
            return str(await conn.fetchval("SELECT current_user || ' ' || current_schema()"))
        finally:
            await conn.close()

    expected = f"{role} {schema_of(postgres_url)}"
    assert await connects(as_role(postgres_url, role, password)) == expected

    monkeypatch.setenv("PGPASSWORD", password)
    assert await connects(bare) == expected
    monkeypatch.delenv("PGPASSWORD")

    pgpass = tmp_path / "pgpass"
    port = urlsplit(postgres_url).port
    pgpass.write_text(f"# host:port:database:user:password\n127.0.0.1:{port}:*:{role}:{password}\n")
    pgpass.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(pgpass))
    assert await connects(bare) == expected


@pytest.mark.postgres
async def test_sslmode_in_the_url_is_honoured(postgres_url: str) -> None:
    """The test server has no TLS: `disable` connects, `require` is refused, not downgraded."""
    conn = await asyncpg.connect(f"{postgres_url}&sslmode=disable")
    await conn.close()
    with pytest.raises((ConnectionError, asyncpg.PostgresError, OSError)):
        await asyncpg.connect(f"{postgres_url}&sslmode=require")


def test_without_binaries_the_reason_says_how_to_run_them(tmp_path: Path) -> None:
    reason = postgres.skip_reason({"PATH": str(tmp_path)}, roots=[str(tmp_path)])
    assert reason is not None
    assert reason.startswith(postgres.SKIP_PREFIX)
    assert "apt-get install -y postgresql" in reason
    assert postgres.URL_ENV in reason
    assert postgres.skip_reason({"PATH": "", postgres.URL_ENV: "postgresql://x@h/db"},
                                roots=[]) is None


def test_the_newest_installed_version_is_found(tmp_path: Path) -> None:
    for version in ("13", "15"):
        folder = tmp_path / version / "bin"
        folder.mkdir(parents=True)
        for tool in ("initdb", "pg_ctl"):
            (folder / tool).write_text("#!/bin/sh\n")
            (folder / tool).chmod(0o755)
    found = postgres.find_binaries({"PATH": ""}, roots=[str(tmp_path)])
    assert found is not None
    assert found.folder == tmp_path / "15" / "bin"


def test_skipped_postgres_tests_leave_exactly_one_line() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PMA_")}
    env[postgres.SWITCH_ENV] = "off"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", "postgres",
         "tests/test_postgres_server.py"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if postgres.SKIP_PREFIX in line]
    assert lines == [f"{postgres.SKIP_PREFIX}: {postgres.SWITCH_ENV}=off — unset it to run them"]
    assert " skipped" in done.stdout.splitlines()[-1]


@pytest.mark.postgres
async def test_a_restart_cuts_connections_and_keeps_committed_rows(
        postgres_url: str, postgres_cluster: postgres.Cluster) -> None:
    conn = await asyncpg.connect(postgres_url)
    await conn.execute("CREATE TABLE kept (n int)")
    await conn.execute("INSERT INTO kept VALUES (1)")
    postgres_cluster.restart("immediate")
    with pytest.raises((asyncpg.PostgresConnectionError, ConnectionError,
                        asyncpg.InterfaceError, OSError)):
        await conn.fetchval("SELECT count(*) FROM kept")
    conn.terminate()
    again = await asyncpg.connect(postgres_url)
    try:
        assert await again.fetchval("SELECT count(*) FROM kept") == 1
    finally:
        await again.close()
