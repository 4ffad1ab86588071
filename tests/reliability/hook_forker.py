"""Run many hook invocations cheaply: each in its own forked process with real file descriptors.

    python -m tests.reliability.hook_forker PLAN.json RESULTS.jsonl

A fresh `python -m pma_mcp hook <event>` costs ~0.3 s of interpreter start and imports; the
hostile corpus needs hundreds. This parent imports the package once, then for each run forks
a child whose fd 0 is the case's stdin file and fd 1/2 are files, and which calls the same
entry point as `python -m pma_mcp` (`pma_mcp.cli.main(["hook", event])`) and exits with its
code. The parent records exit status, stdout, stderr and whether the database content changed.
The parent never runs a hook itself, so every child starts with unconfigured logging.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

import pma_mcp.cli
import pma_mcp.hooks  # imported once here, inherited by every child
import pma_mcp.service
from pma_mcp.config import Settings
from tests.reliability import checks

CHILD_DEADLINE = 120.0


def run_child(event: str, stdin: Path, out: Path, err: Path, env: dict[str, str],
              cwd: str) -> None:
    """In the child: wire the descriptors, run the hook, exit with its code."""
    code = 1
    try:
        for fd, path, flags in ((0, stdin, os.O_RDONLY),
                                (1, out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                                (2, err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
            new = os.open(path, flags, 0o600)
            os.dup2(new, fd)
            os.close(new)
        os.environ.clear()
        os.environ.update(env)
        os.chdir(cwd)
        result = pma_mcp.cli.main(["hook", event])
        code = result if isinstance(result, int) else 1
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def wait(pid: int) -> int:
    """Exit code of the child; a child still running after the deadline is killed (-9)."""
    give_up = time.monotonic() + CHILD_DEADLINE
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > give_up:
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.002)


def main(plan_path: str, results_path: str) -> int:
    plan = json.loads(Path(plan_path).read_text())
    db = Path(plan["db"])
    url = plan.get("database_url")
    where: checks.Where = Settings(db_path=db, database_url=url) if url else db
    scratch = Path(tempfile.mkdtemp(prefix="hook-forker-"))
    out, err = scratch / "stdout", scratch / "stderr"
    with open(results_path, "w", encoding="utf-8") as results:
        for run in plan["runs"]:
            before = checks.snapshot(where)
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                run_child(run["event"], Path(run["stdin"]), out, err, plan["env"], plan["cwd"])
            code = wait(pid)
            record = {
                "case": run["case"], "event": run["event"], "exit": code,
                "stdout": out.read_bytes().decode("utf-8", "replace"),
                "stderr": err.read_bytes().decode("utf-8", "replace"),
                "changed": checks.snapshot(where) != before,
            }
            results.write(json.dumps(record) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
