"""The SQLite schema: every migration from an empty file to the current version.

Each version is applied once, in order, inside one transaction (db.migrate); a version's
`derive` statements rebuild data the new tables hold from what was already stored. Never edit
a released migration: add the next one (and its fixture DB, tests/fixtures/make_fixtures.py).
"""

from __future__ import annotations

import time

from pma_mcp.core.models import MemoryKind
from pma_mcp.core.text.analysis import TOKENIZER as FTS_TOKENIZER  # Porter over unicode61
from pma_mcp.store import steps, upkeep
from pma_mcp.store.sqlite import db
from pma_mcp.store.sqlite.backend import SqliteTx


async def _fold_spellings(conn: db.Conn) -> None:
    """steps.fold_spellings inside the migration's transaction."""
    tx = SqliteTx(conn, conn.database)
    work = upkeep.Work(tx)
    await steps.fold_spellings(work, time.time())
    await work.flush()
    await tx.flush()


async def _infer_kinds(conn: db.Conn) -> None:
    """steps.infer_kinds inside the migration's transaction."""
    tx = SqliteTx(conn, conn.database)
    await steps.infer_kinds(tx)
    await tx.flush()


SPELLINGS_FOLDED = 14
"""The version whose step folds namespaces stored under another spelling of a path."""
KIND_VALUES = ", ".join(f"'{k.value}'" for k in MemoryKind)
"""The kinds a row may hold (a CHECK constraint: these values never change meaning)."""

MIGRATIONS: tuple[db.Migration, ...] = (
    db.Migration(
        1,
        "memories, labels, full-text index, lineage",
        (
            """CREATE TABLE memories (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL UNIQUE,
                namespace TEXT NOT NULL,
                content TEXT NOT NULL,
                memory_type TEXT NOT NULL
                    CHECK (memory_type IN ('working', 'episodic', 'semantic', 'archived')),
                importance REAL NOT NULL CHECK (importance >= 0 AND importance <= 1),
                tags TEXT NOT NULL DEFAULT '[]',
                linked_entities TEXT NOT NULL DEFAULT '[]',
                token_count INTEGER NOT NULL CHECK (token_count >= 0),
                access_count INTEGER NOT NULL DEFAULT 0 CHECK (access_count >= 0),
                created_at REAL NOT NULL,
                accessed_at REAL NOT NULL,
                metadata TEXT NOT NULL DEFAULT '{}',
                session_id TEXT,
                content_hash TEXT NOT NULL,
                superseded_by TEXT
            )""",
            "CREATE UNIQUE INDEX memories_hash ON memories(namespace, content_hash)",
            "CREATE INDEX memories_tier ON memories(namespace, memory_type)",
            "CREATE INDEX memories_session ON memories(namespace, session_id, seq)",
            """CREATE TABLE memory_labels (
                seq INTEGER NOT NULL REFERENCES memories(seq) ON DELETE CASCADE,
                kind TEXT NOT NULL CHECK (kind IN ('tag', 'entity')),
                value TEXT NOT NULL,
                PRIMARY KEY (seq, kind, value)
            ) WITHOUT ROWID""",
            "CREATE INDEX memory_labels_value ON memory_labels(value, kind)",
            f"""CREATE VIRTUAL TABLE memory_fts USING fts5(
                content, labels, tokenize = '{FTS_TOKENIZER}'
            )""",
            "CREATE VIRTUAL TABLE memory_fts_vocab USING fts5vocab(memory_fts, row)",
            """CREATE TABLE lineage (
                id INTEGER PRIMARY KEY,
                memory_id TEXT NOT NULL,
                namespace TEXT NOT NULL,
                event TEXT NOT NULL,
                at REAL NOT NULL,
                from_tier TEXT,
                to_tier TEXT,
                score REAL,
                reason TEXT NOT NULL DEFAULT '',
                count INTEGER NOT NULL DEFAULT 1,
                last_at REAL
            )""",
            "CREATE INDEX lineage_memory ON lineage(memory_id, id)",
        ),
    ),
    db.Migration(
        2,
        "per-session record of memories the prompt hook injected",
        (
            # No foreign key: a record outliving its memory is harmless and pruned by age.
            """CREATE TABLE hook_injections (
                session_id TEXT NOT NULL,
                memory_id TEXT NOT NULL,
                at REAL NOT NULL,
                PRIMARY KEY (session_id, memory_id)
            ) WITHOUT ROWID""",
            "CREATE INDEX hook_injections_at ON hook_injections(at)",
        ),
    ),
    db.Migration(
        3,
        "row count kept by triggers (count(*) scans; retrieval needs N on every query)",
        (
            "CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID",
            "INSERT INTO counters (name, value) SELECT 'memories', count(*) FROM memories",
            """CREATE TRIGGER memories_counted_in AFTER INSERT ON memories BEGIN
                UPDATE counters SET value = value + 1 WHERE name = 'memories';
            END""",
            """CREATE TRIGGER memories_counted_out AFTER DELETE ON memories BEGIN
                UPDATE counters SET value = value - 1 WHERE name = 'memories';
            END""",
        ),
    ),
    db.Migration(
        4,
        "neighbour context column in the full-text index; speaker of conversation turns",
        (
            "ALTER TABLE memories ADD COLUMN speaker TEXT",
            "UPDATE memories SET speaker = pma_speaker(content)",
            "DROP TABLE memory_fts_vocab",
            "DROP TABLE memory_fts",
            f"""CREATE VIRTUAL TABLE memory_fts USING fts5(
                content, labels, context, tokenize = '{FTS_TOKENIZER}'
            )""",
            "CREATE VIRTUAL TABLE memory_fts_vocab USING fts5vocab(memory_fts, row)",
            "CREATE VIRTUAL TABLE memory_fts_colvocab USING fts5vocab(memory_fts, col)",
            """INSERT INTO memory_fts (rowid, content, labels, context)
            SELECT seq, content,
                coalesce((SELECT group_concat(value, ' ') FROM memory_labels l
                          WHERE l.seq = w.seq), ''),
                CASE WHEN session_id IS NULL THEN '' ELSE trim(
                    coalesce(p2 || ' ', '') || coalesce(p1 || ' ', '')
                    || coalesce(n1 || ' ', '') || coalesce(n2, '')) END
            FROM (SELECT seq, content, session_id,
                         lag(content, 2) OVER s AS p2, lag(content, 1) OVER s AS p1,
                         lead(content, 1) OVER s AS n1, lead(content, 2) OVER s AS n2
                  FROM memories WINDOW s AS (PARTITION BY namespace, session_id ORDER BY seq)
                 ) AS w""",
        ),
    ),
    db.Migration(
        5,
        "bounded GC: a rotating window per namespace; covering index for tier totals",
        (
            """CREATE TABLE gc_cursors (
                namespace TEXT PRIMARY KEY, seq INTEGER NOT NULL
            ) WITHOUT ROWID""",
            "CREATE INDEX memories_namespace ON memories(namespace)",
            "DROP INDEX memories_tier",
            "CREATE INDEX memories_tier ON memories(namespace, memory_type, token_count)",
        ),
    ),
    db.Migration(
        6,
        "document frequency per term of memories' own text, kept at write time",
        (
            "CREATE TABLE term_df (term TEXT PRIMARY KEY, df INTEGER NOT NULL) WITHOUT ROWID",
            "INSERT INTO term_df (term, df) SELECT term, doc FROM memory_fts_colvocab "
            "WHERE col = 'content'",
        ),
    ),
    db.Migration(
        7,
        "when each session's context was last compacted or cleared",
        (
            # What a session saved before this instant is no longer in its transcript.
            """CREATE TABLE context_resets (
                session_id TEXT PRIMARY KEY, at REAL NOT NULL
            ) WITHOUT ROWID""",
        ),
    ),
    db.Migration(
        8,
        "term vectors per memory and term statistics per namespace (see bm25.py)",
        (
            "ALTER TABLE memories ADD COLUMN terms TEXT NOT NULL DEFAULT ''",
            "ALTER TABLE memories ADD COLUMN label_terms TEXT NOT NULL DEFAULT ''",
            "ALTER TABLE memories ADD COLUMN context_terms TEXT NOT NULL DEFAULT ''",
            "ALTER TABLE memories ADD COLUMN doc_len INTEGER NOT NULL DEFAULT 0",
            """CREATE TABLE namespace_terms (
                namespace TEXT NOT NULL, term TEXT NOT NULL, df INTEGER NOT NULL,
                PRIMARY KEY (namespace, term)
            ) WITHOUT ROWID""",
            """CREATE TABLE namespace_stats (
                namespace TEXT PRIMARY KEY, docs INTEGER NOT NULL, length INTEGER NOT NULL
            ) WITHOUT ROWID""",
        ),
        derive=(
            # Each memory's tokens per column, read back from the full-text index in one pass.
            "CREATE VIRTUAL TABLE temp.migration_instances "
            "USING fts5vocab(main, memory_fts, instance)",
            "CREATE TEMP TABLE migration_counts AS SELECT doc, col, term, count(*) AS n "
            "FROM temp.migration_instances GROUP BY doc, col, term",
            "CREATE INDEX temp.migration_counts_doc ON migration_counts(doc, col)",
            *(
                f"UPDATE memories SET {column} = coalesce((SELECT group_concat(v, '') FROM "
                f"(SELECT ' ' || term || ':' || n AS v FROM temp.migration_counts "
                f"WHERE doc = memories.seq AND col = '{col}' ORDER BY term)), '')"
                for column, col in (("terms", "content"), ("label_terms", "labels"),
                                    ("context_terms", "context"))
            ),
            "UPDATE memories SET doc_len = coalesce((SELECT sum(n) FROM temp.migration_counts "
            "WHERE doc = memories.seq), 0)",
            "DELETE FROM namespace_terms",
            "INSERT INTO namespace_terms (namespace, term, df) "
            "SELECT m.namespace, c.term, count(DISTINCT c.doc) FROM temp.migration_counts c "
            "JOIN memories m ON m.seq = c.doc WHERE c.col IN ('content', 'labels') "
            "GROUP BY m.namespace, c.term",
            "DELETE FROM namespace_stats",
            "INSERT INTO namespace_stats (namespace, docs, length) "
            "SELECT namespace, count(*), sum(doc_len) FROM memories GROUP BY namespace",
            "DROP TABLE temp.migration_counts",
            "DROP TABLE temp.migration_instances",
        ),
    ),
    db.Migration(
        9,
        "creation time per namespace: the browser's per-day chart and date filters",
        # Index only (no data change): counting a namespace's memories per day read every
        # row (~0.5 s at 100k); from this index it is a scan of the index alone.
        ("CREATE INDEX memories_created ON memories(namespace, created_at)",),
    ),
    db.Migration(
        10,
        "importance and access count per namespace: inspect's bounded read (by_gc_score)",
        # Index only: reading memories best-scored first without a query had to score and
        # sort the whole namespace (~0.3 s at 100k); see store/collection.py, tier_facts_by_score.
        ("CREATE INDEX memories_importance ON memories(namespace, importance)",
         "CREATE INDEX memories_accessed ON memories(namespace, access_count)"),
    ),
    db.Migration(
        11,
        "who stored each memory (team use); NULL for memories stored before: shown as unknown",
        ("ALTER TABLE memories ADD COLUMN author TEXT",),
    ),
    db.Migration(
        12,
        "covering indexes for inspect's bounded read (tier_facts_by_score, store/collection.py)",
        # Indexes only: each page of ~1,000 memories in descending importance looked up its
        # rows in the table (~11 ms a page at 100k), and so did the ~2,000 memories of the
        # last 48 hours (~6 ms); from the indexes alone each takes ~1 ms. They start with the
        # columns of memories_importance and memories_created, which they replace.
        ("CREATE INDEX memories_gc ON memories(namespace, importance, seq, created_at, "
         "access_count, memory_type, superseded_by, accessed_at, token_count)",
         "DROP INDEX memories_importance",
         "DROP INDEX memories_created",
         "CREATE INDEX memories_created ON memories(namespace, created_at, importance, "
         "access_count, memory_type, superseded_by, accessed_at, token_count)"),
    ),
    db.Migration(
        13,
        "each memory's content terms in order, as 64-bit ids (analysis.packed_ids)",
        # A GC plan finds near-duplicates from every memory's terms: read as one integer
        # array, not re-tokenised or parsed from the term vectors (~1 s at 100k). Filling it
        # runs the analyser over every memory once (pma_term_seq, ~4 s at 100k).
        ("ALTER TABLE memories ADD COLUMN term_seq BLOB NOT NULL DEFAULT x''",),
        derive=("UPDATE memories SET term_seq = pma_term_seq(content)",),
    ),
    db.Migration(
        SPELLINGS_FOLDED,
        "namespaces stored under another spelling of a path folded into the canonical one",
        (),
        fill=_fold_spellings,
    ),
    db.Migration(
        15,
        "what each memory is (its kind), apart from the tier it sits in; older ones inferred",
        (f"ALTER TABLE memories ADD COLUMN kind TEXT NOT NULL DEFAULT 'note' "
         f"CHECK (kind IN ({KIND_VALUES}))",
         "CREATE INDEX memories_kind ON memories(namespace, kind)"),
        fill=_infer_kinds,
    ),
)
SCHEMA_VERSION = MIGRATIONS[-1].version
