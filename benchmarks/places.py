"""Where a benchmark's store lives: a SQLite file, or a fresh schema on a PostgreSQL server.

    async with place.settings(workdir, "run", namespace="x") as settings: ...

`--backend postgres` uses `--database-url`, else PMA_TEST_POSTGRES_URL, else a throwaway local
cluster (tests/postgres.py); each store gets its own schema (options=-csearch_path=...),
dropped afterwards.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import shutil
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from pma_mcp.config import Settings
from pma_mcp.service import MemoryService
from tests import postgres

BACKENDS = ("sqlite", "postgres")


@dataclass(frozen=True)
class Place:
    backend: str
    server: str | None = None
    """The PostgreSQL server's URL (backend "postgres")."""

    @property
    def label(self) -> str:
        return "SQLite" if self.backend == "sqlite" else "PostgreSQL"

    @asynccontextmanager
    async def settings(self, workdir: Path, name: str, **fields: object) -> AsyncIterator[Settings]:
        """Settings of a new, empty store called `name` (removed on exit)."""
        base = Settings(db_path=workdir / f"{name}.db", **fields)  # type: ignore[arg-type]
        if self.backend == "sqlite":
            yield base
            return
        assert self.server is not None
        schema, url = await self._new_schema(name)
        try:
            yield replace(base, database_url=url)
        finally:
            await postgres.execute(self.server, f"DROP SCHEMA {schema} CASCADE")

    async def _new_schema(self, name: str) -> tuple[str, str]:
        """A new empty schema on the server, and the URL whose connections use it."""
        assert self.server is not None
        schema = f"bench_{name.replace('-', '_')}_{uuid.uuid4().hex[:8]}"
        await postgres.execute(self.server, f"CREATE SCHEMA {schema}")
        joiner = "&" if "?" in self.server else "?"
        return schema, f"{self.server}{joiner}options=-csearch_path%3D{schema}"

    async def keep(self, workdir: Path, name: str, **fields: object) -> Settings:
        """Like `settings`, for a store that outlives a `with` (a subprocess benchmark's);
        `drop_kept()` removes every such schema at the end."""
        base = Settings(db_path=workdir / f"{name}.db", **fields)  # type: ignore[arg-type]
        if self.backend == "sqlite":
            return base
        assert self.server is not None
        schema, url = await self._new_schema(name)
        _KEPT.append((self.server, schema))
        return replace(base, database_url=url)

    async def copy(self, source: Settings, target: Settings) -> None:
        """Make the (empty) store `target` a copy of `source`'s memories."""
        if self.backend == "sqlite":
            shutil.copyfile(source.database, target.database)
            return
        async with await MemoryService.open(source) as src:
            memories = [m for ns in await src.store.namespaces()
                        for m in await src.store.namespace_memories(ns)]
        memories.sort(key=lambda m: m.seq)  # session neighbours follow insertion order
        async with await MemoryService.open(target) as dst:
            await dst.store.insert_many(memories, skip_existing=False)


async def analyze(settings: Settings) -> None:
    """VACUUM ANALYZE a PostgreSQL store just bulk-loaded (autovacuum would, minutes later),
    so a benchmark measures the planner's usual plans; nothing on SQLite."""
    if settings.database_url:
        await postgres.execute(settings.database_url, "VACUUM ANALYZE")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """--backend sqlite|postgres|both and --database-url."""
    parser.add_argument("--backend", choices=(*BACKENDS, "both"), default="sqlite",
                        help="the store's backend (both: SQLite, then PostgreSQL, one run)")
    parser.add_argument("--database-url", default=None, metavar="URL",
                        help="PostgreSQL server for --backend postgres/both (default: "
                        "PMA_TEST_POSTGRES_URL, else a throwaway local cluster); each store "
                        "gets a fresh schema")


def places(args: argparse.Namespace) -> list[Place]:
    """The places --backend names, in order."""
    chosen = BACKENDS if args.backend == "both" else (args.backend,)
    return [place(b, args.database_url) for b in chosen]


def place(backend: str, database_url: str | None) -> Place:
    if backend == "sqlite":
        return Place("sqlite")
    server = database_url or os.environ.get("PMA_TEST_POSTGRES_URL") or _throwaway_server()
    return Place("postgres", server)


_KEPT: list[tuple[str, str]] = []


async def drop_kept() -> None:
    """Drop the schemas `Place.keep` made."""
    while _KEPT:
        server, schema = _KEPT.pop()
        await postgres.execute(server, f"DROP SCHEMA {schema} CASCADE")


_CLUSTERS = contextlib.ExitStack()
atexit.register(_CLUSTERS.close)


def _throwaway_server() -> str:
    """The tests' throwaway cluster (tests/postgres.py), durable (fsync on) like a real
    server, stopped when the benchmark exits: --backend postgres needs no set-up."""
    reason = postgres.skip_reason()
    if reason:
        raise SystemExit(f"--backend postgres needs --database-url or a local PostgreSQL: "
                         f"{reason}")
    url: str = _CLUSTERS.enter_context(postgres.server_url(durable=True))
    return url
