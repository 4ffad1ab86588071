"""The CLI's pure rendering helpers: JSON conversion, clipping, tables, the progress bar."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime

import pytest

from pma_mcp.commands import render
from pma_mcp.core.export_format import dumps
from pma_mcp.core.models import Finding, MemoryType, TierStats


def test_jsonable_turns_enums_datetimes_and_dataclasses_into_json() -> None:
    value = {MemoryType.SEMANTIC: [TierStats(count=2, tokens=9, avg_score=0.5)],
             "at": datetime(2027, 1, 15, 8, 0, tzinfo=UTC)}
    assert json.loads(dumps(value)) == {
        "semantic": [{"count": 2, "tokens": 9, "avg_score": 0.5}],
        "at": "2027-01-15T08:00:00+00:00",
    }


@pytest.mark.parametrize(
    ("text", "width", "expected"),
    [("short", 10, "short"), ("a  b\nc", 10, "a b c"), ("abcdefghij", 5, "abcd…"),
     ("abc", 0, "")],
)
def test_clip_keeps_one_line_within_width(text: str, width: int, expected: str) -> None:
    assert render.clip(text, width) == expected


def test_table_aligns_columns_and_clips_only_the_last() -> None:
    out = render.table(["n", "text"], [["1", "x" * 50], ["22", "short"]],
                       align=[">", "<"], width=20)
    lines = out.splitlines()
    assert lines[0] == " n  text"  # headers follow their column's alignment
    assert lines[2].startswith(" 1  ") and lines[2].endswith("…")
    assert all(len(line) <= 20 for line in lines)


def test_progress_bar_redraws_per_percent_and_stays_quiet_for_small_jobs() -> None:
    stream = io.StringIO()
    bar = render.ProgressBar(stream, "importing", enabled=True, min_total=100)
    for done in range(1, 1001):
        bar.update(done, 1000)
    bar.close()
    text = stream.getvalue()
    assert text.count("\r") == 101 and text.endswith("1,000/1,000\n")

    quiet = io.StringIO()
    small = render.ProgressBar(quiet, "importing", enabled=True, min_total=100)
    small.update(5, 10)
    small.close()
    off = render.ProgressBar(quiet, "importing", enabled=False)
    off.update(500, 1000)
    off.close()
    assert quiet.getvalue() == ""


def test_doctor_text_verdict_counts_failures_and_warnings() -> None:
    findings = [Finding("schema", "ok", "version 3"),
                Finding("hooks", "warn", "none", "add them"),
                Finding("index", "fail", "stale", "rebuild")]
    text = render.doctor_text(findings)
    assert "fix: add them" in text and text.endswith("unhealthy: 1 failure(s), 1 warning(s)")
