"""Columns, row mappers and SQL fragments every backend shares (neutral SQL, store/seam.py).

Rows are read by position: GC and inspect map 100k of them, and a positional tuple is the
cheapest row SQLite's driver gives.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pma_mcp.core import scoring
from pma_mcp.core.models import (
    GCFacts,
    Memory,
    MemoryKind,
    MemoryType,
    Scope,
    stored_epoch,
    to_datetime,
)
from pma_mcp.core.scoring import Weights
from pma_mcp.core.text import bm25
from pma_mcp.store.base import Candidate
from pma_mcp.store.seam import Row

if TYPE_CHECKING:
    from pma_mcp.core.records import LineageEvent, TierFacts

COLUMNS = (
    "seq, id, namespace, content, memory_type, importance, tags, linked_entities, token_count, "
    "access_count, created_at, accessed_at, metadata, session_id, content_hash, superseded_by, "
    "author, kind"
)
M_COLUMNS = ", ".join(f"m.{c.strip()}" for c in COLUMNS.split(","))
SELECT = f"SELECT {COLUMNS} FROM memories m"
"""Every column a Memory is made of, over alias m; add WHERE …."""
INSERT = (f"INSERT INTO memories ({COLUMNS.split(', ', 1)[1]}, speaker) "
          f"VALUES ({', '.join('?' * 18)}) RETURNING seq")

TIER_COLUMNS = ("seq, memory_type, importance, token_count, access_count, created_at, "
                "accessed_at, superseded_by")
"""TierFacts, in the order `tier_facts` reads them."""
TIER_M_COLUMNS = ", ".join(f"m.{c.strip()}" for c in TIER_COLUMNS.split(","))
FACT_COLUMNS = f"{TIER_COLUMNS}, id, namespace, content"
TIER_IMPORTANCE = 2
TIER_ACCESSED = 6
TIER_SUPERSEDED = 7
_TIERS = {t.value: t for t in MemoryType}  # a dict look-up: MemoryType(value) costs 0.3 µs
_KINDS = {k.value: k for k in MemoryKind}

DOCUMENT = "m.terms, m.label_terms, m.context_terms, m.doc_len"
CANDIDATE = (f"m.seq, m.importance, m.created_at, m.access_count, m.speaker, {DOCUMENT}, "
             "m.session_id")
"""What lexical ranking reads of a candidate: `ranked` columns, the speaker, its vectors, its
session (the second pass, core/rerank.py, reads speaker, content terms and session)."""

LINEAGE_COLUMNS = ("memory_id, namespace, event, at, from_tier, to_tier, score, reason, count, "
                   "last_at")
INSERT_LINEAGE = f"INSERT INTO lineage ({LINEAGE_COLUMNS}) VALUES ({', '.join('?' * 10)})"

STATIC_SCORE = (
    "(?::float8 * (CASE WHEN m.importance < 1e-300 THEN 0::float8 ELSE m.importance END) "
    "+ ?::float8 * exp(-least(?::float8 * greatest(0::float8, "
    "(?::float8 - m.created_at) / 3600::float8), 700::float8)) "
    "+ ?::float8 * least(ln(1::float8 + m.access_count) / ?::float8, 1::float8))"
)
"""The query-less composite of scoring.score over alias m, to order and filter rows in SQL
only (callers rescore with scoring.py). Float8 throughout: PostgreSQL would otherwise compute
a bare literal in numeric, rounded unlike Python's floats. Recency's exponent is capped
and a subnormal importance counts as 0 (PostgreSQL's exp() and products raise on
underflow). Parameters: `static_score_args`."""


def static_score_args(weights: Weights, now: float) -> tuple[float, ...]:
    return (weights.importance, weights.recency, scoring.RECENCY_DECAY_PER_HOUR, now,
            weights.access, scoring.ACCESS_LOG_SCALE)


def memory(row: Row) -> Memory:
    return Memory(
        seq=row[0], id=row[1], namespace=row[2], content=row[3],
        memory_type=_TIERS[row[4]], importance=row[5], tags=json_list(row[6]),
        linked_entities=json_list(row[7]), token_count=row[8], access_count=row[9],
        created_at=to_datetime(row[10]), accessed_at=to_datetime(row[11]),
        metadata={} if row[12] == "{}" else json.loads(row[12]), session_id=row[13],
        content_hash=row[14], superseded_by=row[15], author=row[16], kind=_KINDS[row[17]],
    )


def row_of(m: Memory) -> tuple[Any, ...]:
    """`INSERT`'s values for `m` (speaker last)."""
    from pma_mcp.core.text.lexicon import speaker_of

    return (m.id, m.namespace, m.content, m.memory_type.value, m.importance,
            json.dumps(m.tags), json.dumps(m.linked_entities), m.token_count, m.access_count,
            m.created_at.timestamp(), m.accessed_at.timestamp(), json.dumps(m.metadata),
            m.session_id, m.content_hash, m.superseded_by, m.author, m.kind.value,
            speaker_of(m.content))


def tier_facts(row: Row) -> TierFacts:
    from pma_mcp.core.records import TierFacts  # records load on first use (core.models)

    return TierFacts(
        seq=row[0], memory_type=_TIERS[row[1]], importance=row[2], token_count=row[3],
        access_count=row[4], created_epoch=stored_epoch(row[5]),
        accessed_epoch=stored_epoch(row[6]), superseded_by=row[7],
    )


def facts(row: Row) -> GCFacts:
    """Positional (FACT_COLUMNS order): a plan makes 100k of these."""
    return GCFacts(row[0], _TIERS[row[1]], row[2], row[3], row[4], stored_epoch(row[5]),
                   stored_epoch(row[6]), row[7], row[8], row[9], row[10])


def document(row: Row, start: int) -> bm25.Document:
    """The bm25.Document of DOCUMENT's columns from `start`."""
    return bm25.Document(str(row[start]), str(row[start + 1]), str(row[start + 2]),
                         int(row[start + 3]))


def ranked(row: Row, semantic: float) -> Candidate:
    """A Candidate from (seq, importance, created_at, access_count, ...): CANDIDATE's columns
    give it speaker, content terms and session too."""
    if len(row) < 10:
        return Candidate(seq=int(row[0]), semantic=semantic, importance=float(row[1]),
                         created_at=float(row[2]), access_count=int(row[3]))
    return Candidate(seq=int(row[0]), semantic=semantic, importance=float(row[1]),
                     created_at=float(row[2]), access_count=int(row[3]),
                     speaker=row[4], terms=str(row[5]), session_id=row[9])


def lineage_event(r: Row) -> LineageEvent:
    from pma_mcp.core.records import LineageEvent  # a record most processes never build

    """From (memory_id, event, at, from_tier, to_tier, score, reason, count, last_at)."""
    return LineageEvent(
        memory_id=r[0], event=r[1], at=to_datetime(r[2]),
        from_tier=MemoryType(r[3]) if r[3] else None,
        to_tier=MemoryType(r[4]) if r[4] else None,
        score=r[5], reason=r[6], count=r[7],
        last_at=to_datetime(r[8]) if r[8] is not None else None,
    )


def json_list(text: str) -> list[str]:
    """A JSON list column; the common empty one without the parser (GC reads 100k rows)."""
    return [] if text == "[]" else list(json.loads(text))


def editable(m: Memory) -> tuple[object, ...]:
    """What an edit may change: equal tuples mean nobody changed the memory meanwhile."""
    return (m.content, m.importance, m.memory_type, m.tags, m.linked_entities, m.metadata,
            m.kind)


def labels_text(tags: Iterable[str], entities: Iterable[str]) -> str:
    """Tags and entities as the words the index holds for them."""
    return " ".join([*tags, *entities])


def scope_where(scope: Scope) -> tuple[str, list[Any]]:
    """WHERE fragment (over alias m) for namespace → memory_type → kind → tags, in that
    order."""
    if not scope.namespaces:
        raise ValueError("a scope needs at least one namespace")
    parts = ["m.namespace IN ?"]
    params: list[Any] = [list(scope.namespaces)]
    if scope.memory_type is not None:
        parts.append("m.memory_type = ?")
        params.append(scope.memory_type.value)
    if scope.kind is not None:
        parts.append("m.kind = ?")
        params.append(scope.kind.value)
    if scope.memory_type != MemoryType.ARCHIVED:  # corrected memories only when asked for
        parts.append("m.superseded_by IS NULL")
    if scope.tags:
        parts.append("EXISTS (SELECT 1 FROM memory_labels l WHERE l.seq = m.seq "
                     "AND l.kind = 'tag' AND l.value IN ?)")
        params.append(list(scope.tags))
    return " AND ".join(parts), params


SCOPE_COLUMNS = "m.namespace, m.memory_type, m.superseded_by, m.kind"
"""What `in_scope` reads of a row, in this order."""


def in_scope(namespace: str, memory_type: str, superseded_by: str | None, kind: str,
             scope: Scope) -> bool:
    """`scope_where` for one row, without its tag filter (a caller with tags uses SQL)."""
    return (namespace in scope.namespaces
            and (scope.memory_type is None or memory_type == scope.memory_type.value)
            and (scope.kind is None or kind == scope.kind.value)
            and (superseded_by is None or scope.memory_type == MemoryType.ARCHIVED))


def chunks(values: Sequence[Any], size: int = 900) -> Iterable[list[Any]]:
    """`values` a statement's worth at a time (SQLite bounds a statement's parameters)."""
    for start in range(0, len(values), size):
        yield list(values[start:start + size])
