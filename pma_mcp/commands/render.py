"""Text and JSON rendering for the CLI (pure, apart from the progress bar's stream).

Kept apart from `commands.py` so the argument handling reads as a list of use cases and the
layout rules (column widths, clipping, time formats) live in one place. Plain text rather than
a terminal library: the tables are small, and the CLI shares its start-up cost with nothing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from datetime import UTC, datetime
from enum import Enum
from typing import Any, Literal, TextIO

from pma_mcp.core import export_format
from pma_mcp.core.collector import TIER_CAPACITY
from pma_mcp.core.export_format import jsonable
from pma_mcp.core.models import (
    TIER_ORDER,
    Finding,
    GCDecision,
    InspectResult,
    LineageEvent,
    Memory,
    ScoreBreakdown,
    ScoredMemory,
    Stats,
)

Align = Literal["<", ">"]

ELLIPSIS = "…"
MIN_FLEX_WIDTH = 12
INDENT = "  "
AUTHOR_WIDTH = 24
"""A search row's author column is cut here so the content keeps most of the line."""


# ------------------------------------------------------------------ JSON




def scored_json(rank: int, item: ScoredMemory) -> dict[str, Any]:
    """One search result: the export record plus its score and breakdown."""
    return {
        "rank": rank,
        "score": item.score,
        "breakdown": jsonable(item.breakdown),
        **export_format.to_record(item.memory),
    }


def decision_json(decision: GCDecision) -> dict[str, Any]:
    return dict(jsonable(decision))


# ----------------------------------------------------------------- basics


def clip(text: str, width: int) -> str:
    """One line of at most `width` characters (whitespace collapsed, ellipsis when cut)."""
    flat = " ".join(text.split())
    if width <= 0:
        return ""
    return flat if len(flat) <= width else flat[: width - 1] + ELLIPSIS


def when(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def hours(value: float) -> str:
    """A duration for people: minutes, hours or days."""
    if abs(value) < 1.0:
        return f"{value * 60:.0f} min"
    if abs(value) < 48.0:
        return f"{value:.1f} h"
    return f"{value / 24:.1f} d"


def number(value: float) -> str:
    return f"{value:.3f}"


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    align: Sequence[Align] | None = None,
    width: int | None = None,
) -> str:
    """Columns padded to fit; the last column is clipped so a line fits in `width` (without
    a width it is whole: whitespace runs become one space, so a row stays one line)."""
    aligns: list[Align] = list(align) if align else ["<"] * len(headers)
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    if width is not None and len(headers) > 1:
        fixed = sum(widths[:-1]) + 2 * (len(headers) - 1)
        widths[-1] = min(widths[-1], max(width - fixed, MIN_FLEX_WIDTH))
    lines = [_row(headers, widths, aligns), _row(["-" * w for w in widths], widths, aligns)]
    lines.extend(_row(row, widths, aligns) for row in rows)
    return "\n".join(lines)


def _row(cells: Sequence[str], widths: Sequence[int], aligns: Sequence[Align]) -> str:
    parts = []
    for i, cell in enumerate(cells):
        text = clip(cell, widths[i]) if i == len(cells) - 1 else cell
        parts.append(f"{text:{aligns[i]}{widths[i]}}")
    return "  ".join(parts).rstrip()


def fields(pairs: Sequence[tuple[str, str]]) -> str:
    """`label  value` lines with the labels padded to one width."""
    pad = max((len(k) for k, _ in pairs), default=0)
    return "\n".join(f"{k:<{pad}}  {v}" for k, v in pairs)


# ------------------------------------------------------------------ stats


def stats_text(stats: Stats) -> str:
    head = fields([
        ("namespace", stats.namespace),
        ("memories", f"{stats.total:,} ({stats.total_tokens:,} tokens)"),
        ("avg score", number(stats.avg_composite_score) + "  (no query: semantic term is 0)"),
        ("gc pressure", f"{stats.gc_pressure:,} memories the next gc would change"),
    ])
    rows = []
    for tier in TIER_ORDER:
        t = stats.by_tier[tier]
        cap = TIER_CAPACITY.get(tier)
        rows.append([
            tier.value,
            f"{t.count:,}",
            f"{t.tokens:,}",
            f"{cap:,}" if cap else "-",
            f"{100 * t.tokens / cap:.0f}%" if cap else "-",
            number(t.avg_score) if t.count else "-",
        ])
    body = table(["tier", "count", "tokens", "capacity", "used", "avg score"], rows,
                 align=["<", ">", ">", ">", ">", ">"])
    return f"{head}\n\n{body}"


# ----------------------------------------------------------------- search


def search_text(
    query: str, own: str, results: Sequence[ScoredMemory], width: int | None
) -> str:
    """The ranked table; with a `width` (a terminal's) the content is cut to fit it, without
    one each memory's whole text is on its row."""
    if not results:
        return f"no memories match {query!r} in {own} or the global namespace"
    rows = []
    for rank, item in enumerate(results, 1):
        b, m = item.breakdown, item.memory
        marker = "" if m.namespace == own else "[global] "
        rows.append([
            str(rank), m.id[:8], m.kind.value, m.memory_type.value, number(item.score),
            number(b.semantic_similarity), number(b.importance), number(b.recency),
            number(b.access_frequency), clip(m.shown_author, AUTHOR_WIDTH), marker + m.content,
        ])
    return table(
        ["#", "id", "kind", "tier", "score", "semantic", "importance", "recency", "access",
         "author", "content"],
        rows, align=[">", "<", "<", "<", ">", ">", ">", ">", ">", "<", "<"], width=width,
    )


# ---------------------------------------------------------------- inspect


def breakdown_text(b: ScoreBreakdown, weights: Sequence[float]) -> str:
    terms = [
        ("semantic", b.semantic_similarity, weights[0]),
        ("importance", b.importance, weights[1]),
        ("recency", b.recency, weights[2]),
        ("access", b.access_frequency, weights[3]),
    ]
    rows = [[name, number(v), f"× {w:g}", number(v * w)] for name, v, w in terms]
    rows.append(["composite", "", "", number(b.composite)])
    return table(["term", "value", "weight", "points"], rows, align=["<", ">", ">", ">"])


def memory_fields(m: Memory, now: datetime) -> str:
    age = (now - m.created_at).total_seconds() / 3600.0
    idle = (now - m.accessed_at).total_seconds() / 3600.0
    pairs = [
        ("id", m.id),
        ("namespace", m.namespace),
        ("author", m.shown_author),
        ("kind", f"{m.kind.value} (what it is; the collector never changes it)"),
        ("tier", f"{m.memory_type.value} (where the collector keeps it now)"),
        ("importance", f"{m.importance:g} (what makes it last)"),
        ("tokens", f"{m.token_count:,}"),
        ("accesses", f"{m.access_count:,}"),
        ("created", f"{when(m.created_at)} ({hours(age)} ago)"),
        ("last access", f"{when(m.accessed_at)} ({hours(idle)} ago)"),
        ("tags", ", ".join(m.tags) or "-"),
        ("entities", ", ".join(m.linked_entities) or "-"),
    ]
    if m.session_id:
        pairs.append(("session", m.session_id))
    if m.superseded_by:
        pairs.append(("superseded by", m.superseded_by))
    if m.metadata:
        pairs.append(("metadata", json.dumps(m.metadata, ensure_ascii=False, sort_keys=True)))
    return fields(pairs)


def lineage_text(events: Sequence[LineageEvent]) -> str:
    if not events:
        return INDENT + "(no events recorded)"
    rows = []
    for e in events:
        tiers = _tiers(e.from_tier, e.to_tier)
        what = e.event if e.count == 1 else f"{e.event} ×{e.count}"
        until = f" (last {when(e.last_at)})" if e.last_at and e.count > 1 else ""
        score = "" if e.score is None else number(e.score)
        rows.append([when(e.at), what, tiers, score, e.reason + until])
    return table(["at", "event", "tiers", "score", "reason"], rows)


def _tiers(src: Enum | None, dst: Enum | None) -> str:
    if src is None and dst is None:
        return ""
    if src is None:
        return f"→ {dst.value if dst else ''}"
    return f"{src.value} → {dst.value if dst else 'gone'}"


def inspect_text(result: InspectResult, now: datetime, weights: Sequence[float]) -> str:
    m = result.memory
    if result.gc_action == "keep":
        gc = f"keep in {m.memory_type.value}"
    elif result.predicted_tier is None:
        gc = result.gc_action
    else:
        gc = f"{result.gc_action}: {m.memory_type.value} → {result.predicted_tier.value}"
    return "\n\n".join([
        memory_fields(m, now),
        "content\n" + _indented(m.content),
        "score\n" + _indented(breakdown_text(result.breakdown, weights)),
        f"next gc\n{INDENT}{gc}\n{INDENT}why: {result.gc_reason}",
        "lineage\n" + _indented(lineage_text(result.lineage)),
    ])


def deleted_text(memory_id: str, events: Sequence[LineageEvent]) -> str:
    return (f"memory {memory_id} no longer exists; its lineage survives:\n\n"
            + lineage_text(events))


def _indented(text: str) -> str:
    return "\n".join(INDENT + line for line in text.splitlines())


# --------------------------------------------------------------------- gc


def gc_text(
    namespace: str, decisions: Sequence[GCDecision], kept: int, summary: str, *, applied: bool
) -> str:
    head = (f"gc applied to {namespace}" if applied
            else f"gc dry run for {namespace} (nothing changed; run without --dry-run to apply)")
    if not decisions:
        return f"{head}\nno changes: all {kept:,} memories stay where they are\n{summary}"
    blocks = [head, ""]
    for d in decisions:
        if d.action == "merge":
            move = f"merged into {(d.merge_into or '')[:8]}"
        else:
            move = _tiers(d.from_tier, d.to_tier) if d.to_tier or d.action == "delete" else ""
        blocks.append(f"{d.action:<8} {d.memory_id[:8]}  {move}  score "
                      f"{number(d.breakdown.composite)}  {d.token_count:,} tokens")
        blocks.append(f"{'':<9}why: {d.reason}")
        blocks.append(f"{'':<9}\"{clip(d.content_preview, 90)}\"")
    blocks += ["", summary]
    return "\n".join(blocks)


# ----------------------------------------------------------------- doctor


def doctor_text(findings: Sequence[Finding]) -> str:
    pad = max((len(f.check) for f in findings), default=0)
    lines = []
    for f in findings:
        lines.append(f"{f.status:<4}  {f.check:<{pad}}  {f.detail}")
        if f.fix:
            lines.append(f"{'':<4}  {'':<{pad}}  fix: {f.fix}")
    failures = sum(f.status == "fail" for f in findings)
    warnings = sum(f.status == "warn" for f in findings)
    verdict = "unhealthy" if failures else "healthy"
    lines += ["", f"{verdict}: {failures} failure(s), {warnings} warning(s)"]
    return "\n".join(lines)


# --------------------------------------------------------------- progress


class ProgressBar:
    """`[#####-----]  512/1,000` redrawn in place on a terminal; silent when disabled."""

    WIDTH = 30

    def __init__(self, stream: TextIO, label: str, *, enabled: bool, min_total: int = 0) -> None:
        self._stream = stream
        self._label = label
        self._enabled = enabled
        self._min_total = min_total
        self._shown = -1

    def update(self, done: int, total: int) -> None:
        """Redraw when the whole percentage changes; jobs under `min_total` show nothing."""
        if not self._enabled or total <= 0 or total < self._min_total:
            return
        step = math.floor(100 * done / total)
        if step == self._shown:
            return
        self._shown = step
        filled = self.WIDTH * done // total
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        self._stream.write(f"\r{self._label} [{bar}] {done:,}/{total:,}")
        self._stream.flush()

    def close(self) -> None:
        if self._enabled and self._shown >= 0:
            self._stream.write("\n")
            self._stream.flush()
