"""Regression: a transcript_path naming a FIFO or a device hung the stop and pre-compact hooks.

`transcript._read_tail` opened the path and read to EOF: opening a FIFO blocks until a writer
appears and /dev/zero never ends, so the hook never exited (Claude Code waits up to 600 s for
a Stop hook). Only regular files are read now. Each check runs in a child process with a
deadline, so a regression fails instead of hanging the suite (no timing is asserted).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reliability import checks
from tests.reliability.procs import child_env, pma, stop_payload

DEADLINE = 60.0
REPLY = ("The nightly export hung because the retry loop had no upper bound; I capped it at five "
         "attempts with jitter and added a regression test for the runner.")


def special_paths(tmp_path: Path) -> dict[str, Path]:
    fifo = tmp_path / "transcript.fifo"
    os.mkfifo(fifo)
    folder = tmp_path / "a-directory.jsonl"
    folder.mkdir()
    return {"fifo": fifo, "dev-zero": Path("/dev/zero"), "directory": folder}


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory"])
def test_transcript_reader_skips_what_is_not_a_regular_file(tmp_path: Path, kind: str) -> None:
    path = special_paths(tmp_path)[kind]
    code = ("import sys; from pma_mcp.hooks import transcript as t; "
            "p = sys.argv[1]; "
            "assert t.read_exchanges(p) == [], 'read_exchanges'; "
            "assert t.last_user_prompt(p) is None, 'last_user_prompt'; "
            "print('ok')")
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                          timeout=DEADLINE, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == b"ok"


@pytest.mark.parametrize("event", ["stop", "pre-compact"])
@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory"])
def test_hooks_with_a_fifo_or_device_transcript_exit_quietly(
    tmp_path: Path, event: str, kind: str
) -> None:
    db = tmp_path / "store.db"
    payload = stop_payload("session-1", str(tmp_path), special_paths(tmp_path)[kind], REPLY)
    payload["hook_event_name"] = "Stop" if event == "stop" else "PreCompact"
    done = subprocess.run(pma("hook", event), input=json.dumps(payload).encode(),
                          capture_output=True, env=child_env(db, tmp_path), cwd=tmp_path,
                          timeout=DEADLINE, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == b""
    if event == "stop":  # the reply still arrives in the input, so it is saved
        assert any(REPLY in c for c in checks.contents(db))
