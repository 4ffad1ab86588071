"""Lexical candidate search over `postings`, with no full-text extension on the server.

The candidates are the memories of the scope holding a searched term, ranked by BM25 summed
over their postings in SQL: the idf of each term comes from the searched namespaces'
statistics (core.text.relevance), the frequency is the column-weighted sum of the posting's content,
label and (for terms searched everywhere) context counts, normalised by the memory's length
against the scope's average. That is the exact score core.text.relevance computes from the vectors
afterwards, less the speaker boost; the store re-scores the `limit` best with
relevance.similarities, so both backends give a memory the same semantic_similarity.
"""

from __future__ import annotations

from typing import Any

from pma_mcp.core.models import Scope
from pma_mcp.core.text import bm25, relevance
from pma_mcp.store import rows


def candidates_sql(
    query: relevance.AnalysedQuery, scope: Scope, limit: int
) -> tuple[str, list[Any]]:
    """Neutral SQL (and its values) for the `limit` best memories of `scope` by BM25.

    Scores are summed over the postings alone (narrow rows: no spill to disk), then the
    scope's filter and the limit apply, and only the chosen memories' documents are read.
    A scope of current memories in any tier and kind, with no tag filter (recall's usual one) is
    answered from the postings' `current` flag, without reading a memory per match.
    Columns: store.rows.CANDIDATE.
    """
    q = query.bm25_query
    terms = list(q.idf)
    current_only = scope.memory_type is None and scope.kind is None and not scope.tags
    w_content, w_labels, w_context = (f"{w}::float8" for w in relevance.COLUMN_WEIGHTS)
    frequency = (f"p.content_tf * {w_content} + p.label_tf * {w_labels} "
                 f"+ CASE WHEN q.everywhere THEN p.context_tf * {w_context} ELSE 0 END")
    k1, b = f"{bm25.K1}::float8", f"{bm25.B}::float8"
    norm = f"{k1} * (1 - {b} + {b} * h.doc_len / ?::float8)"
    args: list[Any] = [terms, [q.idf[t] for t in terms], [t not in q.own_text_only for t in terms],
                       list(scope.namespaces), q.avg_length]
    if current_only:
        best = "best AS (SELECT seq, score FROM scores "
    else:
        where, params = rows.scope_where(scope)
        best = ("best AS (SELECT s.seq, s.score FROM scores s JOIN memories m ON m.seq = s.seq "
                f"WHERE {where} ")
        args += params
    args.append(limit)
    sql = (
        "WITH q (term, idf, everywhere) AS (SELECT * FROM unnest("
        "?::text[], ?::float8[], ?::bool[])), "
        f"hits AS (SELECT p.seq, p.doc_len, q.idf, {frequency} AS f FROM q JOIN postings p "
        f"ON p.term = q.term AND p.namespace IN ?{' AND p.current' if current_only else ''}), "
        f"scores AS (SELECT h.seq, sum(h.idf * h.f * ({k1} + 1) / (h.f + {norm})) AS score "
        "FROM hits h WHERE h.f > 0 GROUP BY h.seq), "
        + best
        + "ORDER BY score DESC, seq DESC LIMIT ?) "
        f"SELECT {rows.CANDIDATE} FROM best JOIN memories m ON m.seq = best.seq "
        "ORDER BY best.score DESC, best.seq DESC"
    )
    return sql, args


def matching_all_sql(
    namespace: str, groups: list[list[str]], limit: int
) -> tuple[str, list[Any]]:
    """Neutral SQL for current memories of `namespace` (store.rows.COLUMNS) whose content
    holds every term of a group."""
    group_ids = [i for i, group in enumerate(groups) for _ in group]
    terms = [t for group in groups for t in group]
    sql = (
        "WITH g (grp, term) AS (SELECT * FROM unnest(?::int[], ?::text[])), "
        "need AS (SELECT grp, count(DISTINCT term) AS n FROM g "
        "GROUP BY grp), hits AS (SELECT p.seq, g.grp, count(DISTINCT p.term) AS n "
        "FROM g JOIN postings p ON p.term = g.term AND p.namespace = ? "
        "AND p.content_tf > 0 GROUP BY p.seq, g.grp), found AS (SELECT DISTINCT h.seq "
        "FROM hits h JOIN need USING (grp) WHERE h.n = need.n) "
        f"SELECT {rows.M_COLUMNS} FROM found JOIN memories m ON m.seq = found.seq "
        "WHERE m.superseded_by IS NULL ORDER BY m.seq LIMIT ?"
    )
    return sql, [group_ids, terms, namespace, limit]
