"""Import many memories in one transaction with a fixed number of statements (insert_many).

Row by row, an import costs about ten round trips per memory (~5 ms: a 1M-memory migration
would take hours). Here the batch's rows, labels, lineage and statistics go in as arrays, the
term vectors are computed in this process (analysis.tokens over the whole batch), and the
session-neighbour context of each new memory and of the last CONTEXT_RADIUS memories already
stored in its session comes from the ordered session members, as store.upkeep keeps it one
memory at a time. Postings follow at the transaction's flush (backend.PgTx). The result is
the same store as inserting the memories one after another (check_consistency recomputes it
from scratch).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from pma_mcp.core.models import Memory
from pma_mcp.core.text import analysis, bm25
from pma_mcp.core.text.lexicon import speaker_of
from pma_mcp.core.text.relevance import CONTEXT_RADIUS
from pma_mcp.store.rows import labels_text

if TYPE_CHECKING:
    from pma_mcp.store.postgres.backend import PgTx


async def insert(
    w: PgTx, memories: Sequence[Memory], reason: str | None,
    counts: Callable[[set[str], int], None],
) -> None:
    """Store `memories` (new: checked by store.steps.accepted) verbatim, in order; with a
    reason, each gets a `created` lineage event. Content terms go to `counts`."""
    if not memories:
        return
    rows = await w.conn.fetch(
        "INSERT INTO memories (id, namespace, content, memory_type, importance, tags, "
        "linked_entities, token_count, access_count, created_at, accessed_at, metadata, "
        "session_id, content_hash, superseded_by, speaker, author, kind) "
        "SELECT id, ns, c, t, i, tg, le, tc, ac, ca, aa, md, s, h, sb, sp, au, k FROM unnest("
        "$1::text[], $2::text[], $3::text[], $4::text[], $5::float8[], $6::text[], $7::text[], "
        "$8::int[], $9::int[], $10::float8[], $11::float8[], $12::text[], $13::text[], "
        "$14::text[], $15::text[], $16::text[], $17::text[], $18::text[]) WITH ORDINALITY "
        "AS b (id, ns, c, t, i, tg, le, tc, ac, ca, aa, md, s, h, sb, sp, au, k, n) ORDER BY n "
        "RETURNING seq, id",
        [m.id for m in memories], [m.namespace for m in memories],
        [m.content for m in memories], [m.memory_type.value for m in memories],
        [m.importance for m in memories], [json.dumps(m.tags) for m in memories],
        [json.dumps(m.linked_entities) for m in memories], [m.token_count for m in memories],
        [m.access_count for m in memories], [m.created_at.timestamp() for m in memories],
        [m.accessed_at.timestamp() for m in memories], [json.dumps(m.metadata) for m in memories],
        [m.session_id for m in memories], [m.content_hash for m in memories],
        [m.superseded_by for m in memories], [speaker_of(m.content) for m in memories],
        [m.author for m in memories], [m.kind.value for m in memories])
    seq_of = {str(r["id"]): int(r["seq"]) for r in rows}
    seqs = [seq_of[m.id] for m in memories]
    labels = [(s, kind, v) for s, m in zip(seqs, memories, strict=True)
              for kind, values in (("tag", m.tags), ("entity", m.linked_entities))
              for v in values]
    if labels:
        await w.conn.execute(
            "INSERT INTO memory_labels (seq, kind, value) SELECT * FROM unnest($1::bigint[], "
            "$2::text[], $3::text[]) ON CONFLICT DO NOTHING",
            [s for s, _, _ in labels], [k for _, k, _ in labels], [v for _, _, v in labels])
    own, sequences = _own_vectors(memories)
    await _statistics(w, memories, own)
    vectors = {s: (bm25.encode(c), bm25.encode(lab), sum(c.values()) + sum(lab.values()))
               for s, (c, lab) in zip(seqs, own, strict=True)}
    await w.conn.execute(
        "UPDATE memories m SET terms = v.t, label_terms = v.l, doc_len = v.n, term_seq = v.q "
        "FROM unnest($1::bigint[], $2::text[], $3::text[], $4::int[], $5::bytea[]) "
        "AS v (seq, t, l, n, q) WHERE m.seq = v.seq", seqs, [vectors[s][0] for s in seqs],
        [vectors[s][1] for s in seqs], [vectors[s][2] for s in seqs], sequences)
    for s in seqs:
        counts(set(bm25.decode(vectors[s][0])), +1)
        await w.index(s)
    await _contexts(w, memories, seqs)
    if reason is None:
        return
    await w.conn.execute(
        "INSERT INTO lineage (memory_id, namespace, event, at, to_tier, reason) "
        "SELECT i, n, 'created', a, t, $5 FROM unnest($1::text[], $2::text[], $3::float8[], "
        "$4::text[]) AS b (i, n, a, t)", [m.id for m in memories],
        [m.namespace for m in memories], [m.created_at.timestamp() for m in memories],
        [m.memory_type.value for m in memories], reason)


def _own_vectors(
    memories: Sequence[Memory],
) -> tuple[list[tuple[Counter[str], Counter[str]]], list[bytes]]:
    """(content counts, label counts) of each memory, and its content's term sequence
    (analysis.packed_ids), from one pass of the analyser."""
    texts = [t for m in memories for t in (m.content, labels_text(m.tags, m.linked_entities))]
    out: list[tuple[Counter[str], Counter[str]]] = [(Counter(), Counter()) for _ in memories]
    sequences: list[list[str]] = [[] for _ in memories]
    for term, doc in analysis.tokens(texts):
        out[doc // 2][doc % 2][term] += 1
        if doc % 2 == 0:
            sequences[doc // 2].append(term)
    return out, [analysis.packed_ids(terms) for terms in sequences]


async def _statistics(
    w: PgTx, memories: Sequence[Memory], own: Sequence[tuple[Counter[str], Counter[str]]]
) -> None:
    """Per namespace: memories, own-text length, document count of each term."""
    docs: Counter[str] = Counter()
    length: Counter[str] = Counter()
    held: dict[str, Counter[str]] = {}
    for m, (content, labels) in zip(memories, own, strict=True):
        docs[m.namespace] += 1
        length[m.namespace] += sum(content.values()) + sum(labels.values())
        held.setdefault(m.namespace, Counter()).update(set(content) | set(labels))
    names = sorted(docs)
    await w.conn.execute(
        "INSERT INTO namespace_stats (namespace, docs, length) SELECT * FROM unnest("
        "$1::text[], $2::int[], $3::bigint[]) ON CONFLICT (namespace) DO UPDATE SET "
        "docs = namespace_stats.docs + excluded.docs, "
        "length = namespace_stats.length + excluded.length",
        names, [docs[n] for n in names], [length[n] for n in names])
    rows = sorted((n, t, c) for n, terms in held.items() for t, c in terms.items())
    await w.conn.execute(
        "INSERT INTO namespace_terms (namespace, term, df) SELECT * FROM unnest($1::text[], "
        "$2::text[], $3::int[]) ON CONFLICT (namespace, term) DO UPDATE SET "
        "df = namespace_terms.df + excluded.df",
        [n for n, _, _ in rows], [t for _, t, _ in rows], [c for _, _, c in rows])


async def _contexts(w: PgTx, memories: Sequence[Memory], seqs: Sequence[int]) -> None:
    """Context vectors of the new memories and of the stored ones they now neighbour.

    New seqs come after every stored one, so in each session only the last CONTEXT_RADIUS
    stored memories gain neighbours (their own earlier neighbours are read too, to sum their
    context whole); every other stored memory keeps its context.
    """
    new_in: Counter[tuple[str, str]] = Counter(
        (m.namespace, m.session_id) for m in memories if m.session_id is not None)
    if not new_in:
        return
    sessions = sorted(new_in)
    rows = await w.conn.fetch(
        "SELECT m.seq, m.namespace, m.session_id, m.terms, m.context_terms "
        "FROM unnest($1::text[], $2::text[], $3::int[]) AS s (namespace, session_id, n) "
        "CROSS JOIN LATERAL (SELECT seq, namespace, session_id, terms, context_terms "
        "FROM memories WHERE namespace = s.namespace AND session_id = s.session_id "
        "ORDER BY seq DESC LIMIT s.n) AS m",
        [n for n, _ in sessions], [s for _, s in sessions],
        [new_in[k] + 2 * CONTEXT_RADIUS for k in sessions])
    members: dict[tuple[str, str], list[tuple[int, str, str]]] = {}
    for r in rows:
        members.setdefault((r["namespace"], r["session_id"]), []).append(
            (int(r["seq"]), str(r["terms"]), str(r["context_terms"])))
    new = set(seqs)
    changed: list[tuple[int, str, int]] = []  # (seq, context vector, length delta)
    grew: Counter[str] = Counter()
    for (namespace, _), found in members.items():
        ordered = sorted(found)
        first_new = next(i for i, (s, _, _) in enumerate(ordered) if s in new)
        for i in range(max(0, first_new - CONTEXT_RADIUS), len(ordered)):
            around = ordered[max(0, i - CONTEXT_RADIUS):i] + ordered[i + 1:i + 1 + CONTEXT_RADIUS]
            context = bm25.add(terms for _, terms, _ in around)
            delta = sum(context.values()) - bm25.length(ordered[i][2])
            changed.append((ordered[i][0], bm25.encode(context), delta))
            grew[namespace] += delta
            await w.index(ordered[i][0])
    await w.conn.execute(
        "UPDATE memories m SET context_terms = v.c, doc_len = m.doc_len + v.d "
        "FROM unnest($1::bigint[], $2::text[], $3::int[]) AS v (seq, c, d) WHERE m.seq = v.seq",
        [s for s, _, _ in changed], [c for _, c, _ in changed], [d for _, _, d in changed])
    names = sorted(n for n in grew if grew[n])
    await w.conn.execute(
        "UPDATE namespace_stats s SET length = s.length + v.d FROM unnest($1::text[], "
        "$2::bigint[]) AS v (namespace, d) WHERE s.namespace = v.namespace",
        names, [grew[n] for n in names])
