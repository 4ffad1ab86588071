"""The prompt hook adds what the session does not already hold, and a first store works.

Hooks run as subprocesses with Claude Code's input shapes (helpers from test_hooks), on each
backend (test_hooks' `hook` fixture).
"""

from __future__ import annotations

from pathlib import Path

from tests.test_hooks import (
    PROJECT,
    SESSION,
    Hook,
    Transcript,
    assert_quiet,
    hook,
    prompt_input,
    seed,
    stop_input,
    transcript,
)

__all__ = ["hook", "transcript"]  # fixtures shared with test_hooks

OTHER_SESSION = "0b9e8c7d-6a5f-4e3d-8c2b-1a0f9e8d7c6b"
QUESTION = "Why does the nightly export job time out?"
FOLLOW_UP = "what did we change about the export retries again?"


FILLER = [(f"Onboarding note {i}: " + " ".join(["welcome"] * 189), {"importance": 1.0})
          for i in range(8)]
"""Fills session start's 2,000 tokens, so the saved exchange can only come back by a prompt."""


def _start(source: str) -> dict[str, str]:
    return {"session_id": SESSION, "transcript_path": "/tmp/x.jsonl", "cwd": PROJECT,
            "hook_event_name": "SessionStart", "source": source}


async def test_this_sessions_own_exchanges_are_not_injected_until_compaction(
    hook: Hook, transcript: Transcript
) -> None:
    await seed(hook.settings, FILLER)
    transcript.exchange(QUESTION, "Looking.")
    assert_quiet(hook.run("stop", stop_input(transcript.write())))
    assert len([r for r in hook.rows() if r["namespace"] == PROJECT]) == 9

    # The transcript still holds the exchange: repeating it would only cost context.
    assert_quiet(hook.run("user-prompt-submit", prompt_input(FOLLOW_UP)))
    # Another session (tomorrow's) gets it, with a heading that says where it comes from.
    other = hook.context("user-prompt-submit", prompt_input(FOLLOW_UP, session=OTHER_SESSION))
    assert other is not None and "export.retries = -1" in other
    assert "this conversation" not in other.splitlines()[0]
    # After /compact the transcript no longer holds it: it comes back, and the heading says so.
    loaded = hook.context("session-start", _start("compact"))
    assert loaded is not None and "export.retries" not in loaded
    back = hook.context("user-prompt-submit", prompt_input(FOLLOW_UP))
    assert back is not None and "export.retries = -1" in back
    assert "this conversation before it was compacted" in back.splitlines()[0]


async def test_an_exchange_saved_after_compaction_stays_out_again(
    hook: Hook, transcript: Transcript
) -> None:
    await seed(hook.settings, [])
    hook.context("session-start", _start("compact"))
    transcript.exchange(QUESTION, "Looking.")
    assert_quiet(hook.run("stop", stop_input(transcript.write())))
    assert_quiet(hook.run("user-prompt-submit", prompt_input(FOLLOW_UP)))


def test_a_first_store_finds_its_only_memory_for_a_follow_up(
    hook: Hook, tmp_path: Path
) -> None:
    """The first trial of a new user: one saved exchange, then a natural follow-up question
    holding words the memory lacks ("change", "again"). With FTS5's idf every shared word of a
    one-memory store weighed ~0, so nothing was injected."""
    transcript = Transcript(tmp_path / "first.jsonl")
    transcript.exchange(QUESTION, "Looking.")
    assert_quiet(hook.run("stop", stop_input(transcript.write())))
    (row,) = hook.rows()
    text = hook.context("user-prompt-submit", prompt_input(FOLLOW_UP, session=OTHER_SESSION))
    assert text is not None and row["id"][:8] in text
