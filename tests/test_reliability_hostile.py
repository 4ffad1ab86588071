"""The hostile-input corpus (tests/hostile/, ≥ 300 cases) replayed against every entry point.

- tool arguments: through the SDK's in-process Client, in both dispatch modes;
- query text full of FTS5/SQL syntax: recall, load_context, inspect(query), the prompt;
- a subset plus every raw JSON-RPC line: into a real `python -m pma_mcp` over stdio;
- hook stdin: every case and event in its own process (forked from one parent for speed),
  and a sample through the real `python -m pma_mcp hook` to show both behave alike.

Every case: a clear error (or a silent fail-open hook), no traceback text to the client, the
server answers the next request, and rejected input leaves the database unchanged. A failure
lists every case at fault, not just the first.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Literal

import pytest

from pma_mcp.config import Settings
from tests.reliability import checks
from tests.reliability.hostile import (
    Outcome,
    World,
    corpus_size,
    hook_env,
    hook_runs,
    judge_hook,
    load,
    make_transcripts,
    run_hook_cases,
    run_query_cases,
    run_stdio_cases,
    run_tool_cases,
    seed,
)
from tests.reliability.procs import run_hook

POSTGRES_EVERY = 3
FILES = ("tool_arguments.jsonl", "queries.jsonl", "jsonrpc_lines.jsonl", "hook_inputs.jsonl")


@pytest.fixture
async def world(tmp_path: Path, store_settings: Settings) -> World:
    """The seeded store, on each backend (tests/backends.py): the whole corpus on SQLite,
    every third case on PostgreSQL (each case's snapshots cost server round trips there)."""
    own, other, shared = await seed(store_settings)
    return World(store_settings.db_path, own, other, shared, tmp_path,
                 make_transcripts(tmp_path), store_settings,
                 every=POSTGRES_EVERY if store_settings.database_url else 1)


def report(outcomes: Sequence[Outcome]) -> str:
    lines = [str(o) for o in outcomes]
    return f"{len(lines)} case(s) at fault:\n" + "\n".join(lines[:40])


def assert_store_sound(where: checks.Where) -> None:
    assert checks.integrity(where) == "ok"
    result = checks.consistency(where)
    assert result.ok, result


def test_the_corpus_holds_at_least_300_distinct_cases() -> None:
    sizes = corpus_size()
    assert sum(sizes.values()) >= 300, sizes
    for name in FILES:
        ids = [case["id"] for case in load(name)]
        assert ids, name
        assert len(ids) == len(set(ids)), f"repeated case ids in {name}"


@pytest.mark.parametrize("mode", [
    "legacy",
    pytest.param("auto", marks=pytest.mark.sqlite_only),  # the SDK's dispatch, not the store's
])
async def test_tool_arguments_in_process(world: World, mode: Literal["auto", "legacy"]) -> None:
    outcomes = await run_tool_cases(world, mode)
    assert len(outcomes) == len(world.cases("tool_arguments.jsonl"))
    at_fault = [o for o in outcomes if o.problems]
    assert not at_fault, report(at_fault)
    assert_store_sound(world.where)


async def test_fts_and_sql_syntax_in_queries(world: World) -> None:
    outcomes = await run_query_cases(world)
    at_fault = [o for o in outcomes if o.problems]
    assert not at_fault, report(at_fault)
    assert_store_sound(world.where)


async def test_raw_json_rpc_lines_and_tool_subset_over_stdio(world: World) -> None:
    outcomes, code, impure = run_stdio_cases(world)
    assert impure == [], "stdout carried something that is not JSON-RPC"
    assert code == 0
    at_fault = [o for o in outcomes if o.problems]
    assert not at_fault, report(at_fault)
    assert_store_sound(world.where)


async def test_hook_inputs_fail_open(world: World) -> None:
    outcomes = run_hook_cases(world)
    assert len(outcomes) == len(hook_runs(world))
    at_fault = [o for o in outcomes if o.problems]
    assert not at_fault, report(at_fault)
    assert_store_sound(world.where)
    for table, column, value in checks.text_values(world.where):
        assert "\x00" not in value, (table, column)
        value.encode("utf-8")  # no lone surrogate was stored


SAMPLE = {
    ("text-not-json", "stop"), ("type-array", "user-prompt-submit"),
    ("huge-33mb", "pre-compact"), ("transcript_path-dev-zero", "stop"),
    ("prompt-fts", "user-prompt-submit"), ("reply-nul-surrogate", "stop"),
    ("session_id-int", "session-start"), ("bytes-utf16", "user-prompt-submit"),
}


def test_a_sample_through_real_hook_processes(world: World) -> None:
    """The same judge on real `python -m pma_mcp hook` runs (what the forker stands in for)."""
    runs = [r for r in hook_runs(replace(world, every=1)) if (r.case, r.event) in SAMPLE]
    assert len(runs) == len(SAMPLE)
    at_fault = []
    for run in runs:
        before = checks.snapshot(world.where)
        done = run_hook(run.event, run.stdin.read_bytes(), hook_env(world), world.tmp)
        outcome = judge_hook(run, done.returncode, done.stdout.decode("utf-8", "replace"),
                             done.stderr.decode("utf-8", "replace"),
                             checks.snapshot(world.where) != before)
        if outcome.problems:
            at_fault.append(outcome)
    assert not at_fault, report(at_fault)


def test_every_corpus_line_is_valid_json() -> None:
    for name in FILES:
        text = (Path(__file__).parent / "hostile" / name).read_text(encoding="utf-8")
        for number, line in enumerate(text.splitlines(), 1):
            assert isinstance(json.loads(line), dict), f"{name}:{number}"
