"""Where a benchmark's store lives: a SQLite file, or a fresh schema on a PostgreSQL server.

    async with place.settings(workdir, "run", namespace="x") as settings: ...

`--backend postgres` needs a server URL (`--database-url`, else PMA_TEST_POSTGRES_URL); each
store gets its own schema (options=-csearch_path=...), dropped afterwards.
"""

from __future__ import annotations

import argparse
import os
import shutil
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import asyncpg

from pma_mcp.config import Settings
from pma_mcp.service import MemoryService

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
        schema = f"bench_{name.replace('-', '_')}_{uuid.uuid4().hex[:8]}"
        await _execute(self.server, f"CREATE SCHEMA {schema}")
        joiner = "&" if "?" in self.server else "?"
        try:
            url = f"{self.server}{joiner}options=-csearch_path%3D{schema}"
            yield replace(base, database_url=url)
        finally:
            await _execute(self.server, f"DROP SCHEMA {schema} CASCADE")

    async def copy(self, source: Settings, target: Settings) -> None:
        """Make the (empty) store `target` a copy of `source`'s memories."""
        if self.backend == "sqlite":
            shutil.copyfile(source.database, target.database)
            return
        async with await MemoryService.open(source) as src:
            memories = [m for ns in await src.repo.namespaces()
                        for m in await src.repo.namespace_memories(ns)]
        memories.sort(key=lambda m: m.seq)  # session neighbours follow insertion order
        async with await MemoryService.open(target) as dst:
            await dst.repo.insert_many(memories, skip_existing=False)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """--backend sqlite|postgres|both and --database-url."""
    parser.add_argument("--backend", choices=(*BACKENDS, "both"), default="sqlite",
                        help="the store's backend (both: SQLite, then PostgreSQL, one run)")
    parser.add_argument("--database-url", default=None, metavar="URL",
                        help="PostgreSQL server for --backend postgres/both (default: "
                        "PMA_TEST_POSTGRES_URL); each store gets a fresh schema")


def places(args: argparse.Namespace) -> list[Place]:
    """The places --backend names, in order."""
    chosen = BACKENDS if args.backend == "both" else (args.backend,)
    return [place(b, args.database_url) for b in chosen]


def place(backend: str, database_url: str | None) -> Place:
    if backend == "sqlite":
        return Place("sqlite")
    server = database_url or os.environ.get("PMA_TEST_POSTGRES_URL")
    if not server:
        raise SystemExit("--backend postgres needs --database-url or PMA_TEST_POSTGRES_URL")
    return Place("postgres", server)


async def _execute(url: str, sql: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()
