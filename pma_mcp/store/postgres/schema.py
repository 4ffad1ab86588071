"""The PostgreSQL schema: every migration from an empty schema to the current version.

The applied version is the one row of `schema_version`. `migrate` applies all pending steps
in one transaction under a transaction-scoped advisory lock, re-reading the version once it
holds the lock, so several clients starting at once migrate a schema exactly once. Tables are
created unqualified: they land in the first schema of the connection's search_path. Never edit
a released migration: add the next one.

Layout mirrors the SQLite store (store/sqlite/schema.py) with postings in place of FTS5:
`postings` has one row per (term, memory) for every term of the memory's own text, labels and
session-neighbour context, with its frequency in each column, the memory's length and whether
it is current (not superseded), rewritten whenever one of those changes; the lexical search
sums BM25 over the postings of the searched terms alone (search.py). `term_df` (own-content
document frequency across the whole store) bounds that search's cost,
`namespace_terms`/`namespace_stats` give the scores, as in SQLite.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from pma_mcp.core.models import MemoryKind
from pma_mcp.core.text import analysis

MIGRATION_LOCK = (0x504D41, 1)
"""(classid, objid) of the advisory lock migrations take; write locks use classid + 1."""


Connection = asyncpg.Connection | PoolConnectionProxy


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    statements: tuple[str, ...]
    fill: Callable[[Connection], Awaitable[None]] | None = None
    """Computes a new column from the rows in this process (after `statements`), where SQL
    cannot: the analyser's terms."""


_FILL_PAGE = 2_000


async def _fill_term_sequences(conn: Connection) -> None:
    """Each memory's content terms as ids (analysis.packed_ids), a page at a time."""
    after = 0
    while rows := await conn.fetch(
        "SELECT seq, content FROM memories WHERE seq > $1 ORDER BY seq LIMIT $2",
        after, _FILL_PAGE,
    ):
        seqs = [int(r["seq"]) for r in rows]
        packed = analysis.packed_sequences([r["content"] for r in rows])
        await conn.execute(
            "UPDATE memories m SET term_seq = v.s FROM unnest($1::bigint[], $2::bytea[]) "
            "AS v (seq, s) WHERE m.seq = v.seq", seqs, packed)
        after = seqs[-1]


async def _fold_spellings(conn: Connection) -> None:
    """store.steps.fold_spellings in the migration's transaction, holding the write locks of
    every namespace (clients of the older version may still be writing)."""
    from pma_mcp.store import steps, upkeep
    from pma_mcp.store.postgres.backend import PgTx

    tx = PgTx(conn)
    await tx.lock(str(r[0]) for r in await conn.fetch("SELECT DISTINCT namespace FROM memories"))
    work = upkeep.Work(tx)
    await steps.fold_spellings(work, time.time())
    await work.flush()
    await tx.flush()


async def _infer_kinds(conn: Connection) -> None:
    """store.steps.infer_kinds in the migration's transaction."""
    from pma_mcp.store import steps
    from pma_mcp.store.postgres.backend import PgTx

    await steps.infer_kinds(PgTx(conn))


KIND_VALUES = ", ".join(f"'{k.value}'" for k in MemoryKind)

MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "memories, labels, postings, term statistics, lineage, injections, GC cursors",
        (
            """CREATE TABLE memories (
                seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                id TEXT NOT NULL UNIQUE,
                namespace TEXT NOT NULL,
                content TEXT NOT NULL,
                memory_type TEXT NOT NULL
                    CHECK (memory_type IN ('working', 'episodic', 'semantic', 'archived')),
                importance DOUBLE PRECISION NOT NULL CHECK (importance >= 0 AND importance <= 1),
                tags TEXT NOT NULL DEFAULT '[]',
                linked_entities TEXT NOT NULL DEFAULT '[]',
                token_count INTEGER NOT NULL CHECK (token_count >= 0),
                access_count INTEGER NOT NULL DEFAULT 0 CHECK (access_count >= 0),
                created_at DOUBLE PRECISION NOT NULL,
                accessed_at DOUBLE PRECISION NOT NULL,
                metadata TEXT NOT NULL DEFAULT '{}',
                session_id TEXT,
                content_hash TEXT NOT NULL,
                superseded_by TEXT,
                speaker TEXT,
                author TEXT,
                terms TEXT NOT NULL DEFAULT '',
                label_terms TEXT NOT NULL DEFAULT '',
                context_terms TEXT NOT NULL DEFAULT '',
                doc_len INTEGER NOT NULL DEFAULT 0
            )""",
            "CREATE UNIQUE INDEX memories_hash ON memories (namespace, content_hash)",
            "CREATE INDEX memories_tier ON memories (namespace, memory_type, token_count)",
            "CREATE INDEX memories_session ON memories (namespace, session_id, seq)",
            "CREATE INDEX memories_namespace_seq ON memories (namespace, seq)",
            "CREATE INDEX memories_created ON memories (namespace, created_at)",
            "CREATE INDEX memories_importance ON memories (namespace, importance, seq)",
            "CREATE INDEX memories_accessed ON memories (namespace, access_count)",
            "CREATE INDEX memories_accessed_at ON memories (namespace, accessed_at, seq)",
            """CREATE TABLE memory_labels (
                seq BIGINT NOT NULL REFERENCES memories (seq) ON DELETE CASCADE,
                kind TEXT NOT NULL CHECK (kind IN ('tag', 'entity')),
                value TEXT NOT NULL,
                PRIMARY KEY (seq, kind, value)
            )""",
            "CREATE INDEX memory_labels_value ON memory_labels (value, kind)",
            """CREATE TABLE postings (
                term TEXT NOT NULL,
                namespace TEXT NOT NULL,
                seq BIGINT NOT NULL REFERENCES memories (seq) ON DELETE CASCADE,
                content_tf INTEGER NOT NULL,
                label_tf INTEGER NOT NULL,
                context_tf INTEGER NOT NULL,
                doc_len INTEGER NOT NULL,
                current BOOLEAN NOT NULL,
                -- Covering: a search reads a term's postings from the index alone.
                PRIMARY KEY (term, namespace, seq)
                    INCLUDE (content_tf, label_tf, context_tf, doc_len, current)
            )""",
            "CREATE INDEX postings_seq ON postings (seq)",
            "CREATE TABLE term_df (term TEXT PRIMARY KEY, df INTEGER NOT NULL)",
            """CREATE TABLE namespace_terms (
                namespace TEXT NOT NULL, term TEXT NOT NULL, df INTEGER NOT NULL,
                PRIMARY KEY (namespace, term)
            )""",
            """CREATE TABLE namespace_stats (
                namespace TEXT PRIMARY KEY, docs INTEGER NOT NULL, length BIGINT NOT NULL
            )""",
            """CREATE TABLE lineage (
                id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                memory_id TEXT NOT NULL,
                namespace TEXT NOT NULL,
                event TEXT NOT NULL,
                at DOUBLE PRECISION NOT NULL,
                from_tier TEXT,
                to_tier TEXT,
                score DOUBLE PRECISION,
                reason TEXT NOT NULL DEFAULT '',
                count INTEGER NOT NULL DEFAULT 1,
                last_at DOUBLE PRECISION
            )""",
            "CREATE INDEX lineage_memory ON lineage (memory_id, id)",
            "CREATE INDEX lineage_namespace ON lineage (namespace)",
            # No foreign key: a record outliving its memory is harmless and pruned by age.
            """CREATE TABLE hook_injections (
                session_id TEXT NOT NULL,
                memory_id TEXT NOT NULL,
                at DOUBLE PRECISION NOT NULL,
                PRIMARY KEY (session_id, memory_id)
            )""",
            "CREATE INDEX hook_injections_at ON hook_injections (at)",
            """CREATE TABLE context_resets (
                session_id TEXT PRIMARY KEY, at DOUBLE PRECISION NOT NULL
            )""",
            "CREATE INDEX context_resets_at ON context_resets (at)",
            "CREATE TABLE gc_cursors (namespace TEXT PRIMARY KEY, seq BIGINT NOT NULL)",
        ),
    ),
    Migration(
        2,
        "each memory's content terms in order, as 64-bit ids (analysis.packed_ids)",
        # What a GC plan reads to find near-duplicates (see the SQLite store's v13).
        ("ALTER TABLE memories ADD COLUMN term_seq BYTEA NOT NULL DEFAULT ''::bytea",),
        fill=_fill_term_sequences,
    ),
    Migration(
        3,
        "namespaces stored under another spelling of a path folded into the canonical one",
        (),
        fill=_fold_spellings,
    ),
    Migration(
        4,
        "what each memory is (its kind), apart from the tier it sits in; older ones inferred",
        (f"ALTER TABLE memories ADD COLUMN kind TEXT NOT NULL DEFAULT 'note' "
         f"CHECK (kind IN ({KIND_VALUES}))",
         "CREATE INDEX memories_kind ON memories (namespace, kind)"),
        fill=_infer_kinds,
    ),
)
SCHEMA_VERSION = MIGRATIONS[-1].version
TABLES = ("memories", "memory_labels", "postings", "term_df", "namespace_terms",
          "namespace_stats", "lineage", "hook_injections", "context_resets", "gc_cursors")
"""Every table the migrations make (VACUUM ANALYZE names them: a shared database holds
other schemas too)."""


async def current_version(conn: Connection) -> int:
    """The schema's version; 0 before the first migration (no `schema_version` table)."""
    if await conn.fetchval("SELECT to_regclass('schema_version')") is None:
        return 0
    return int(await conn.fetchval("SELECT coalesce(max(version), 0) FROM schema_version"))


async def migrate(
    conn: Connection, migrations: tuple[Migration, ...] = MIGRATIONS
) -> tuple[int, int]:
    """Apply every pending migration in one transaction; (version found, version left).

    Raises ValueError when the schema is newer than this code (the caller words it). Every
    pending step's statements run before any step's `fill`, which is today's store code
    reading today's columns (as on SQLite, store/sqlite/db.migrate).
    """
    latest = migrations[-1].version
    found = await current_version(conn)
    if found == latest:
        return found, latest
    _refuse_newer(found, latest)
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1, $2)", *MIGRATION_LOCK)
        await conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        found = await current_version(conn)
        _refuse_newer(found, latest)
        pending = [step for step in migrations if step.version > found]
        for step in pending:
            for statement in step.statements:
                await conn.execute(statement)
        for step in pending:
            if step.fill is not None:
                await step.fill(conn)
        await conn.execute("DELETE FROM schema_version")
        await conn.execute("INSERT INTO schema_version (version) VALUES ($1)", latest)
    return found, latest


def _refuse_newer(found: int, latest: int) -> None:
    if found > latest:
        raise ValueError(f"database schema version {found} is newer than this pma-mcp "
                         f"understands ({latest}); upgrade pma-mcp")
