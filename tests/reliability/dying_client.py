"""A client that starts a real stdio server, sends calls, and dies before reading the replies.

`python -m tests.reliability.dying_client DB WORKDIR CALLS HOW` writes the server's pid to
WORKDIR/server.pid and its stderr to WORKDIR/server.stderr, sends `initialize` and CALLS tool
calls without waiting for their answers, then ends the way HOW says: `kill` (SIGKILL itself,
the pipes close with the process), `close` (closes both pipe ends, then exits) or `stdout`
(closes only the end it reads replies from and keeps stdin open for a minute). The caller
checks that the orphaned server exits.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

PROTOCOL = "2025-06-18"


def _line(message: dict[str, object]) -> bytes:
    return (json.dumps(message) + "\n").encode()


def main(db: str, workdir: str, calls: int, how: str) -> None:
    work = Path(workdir)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMA_", "CLAUDE_"))}
    env.update({"PMA_DB_PATH": db, "TIKTOKEN_CACHE_DIR": ""})
    with open(work / "server.stderr", "wb") as err:
        server = subprocess.Popen(
            [sys.executable, "-m", "pma_mcp"], cwd=work, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
        )
    (work / "server.pid").write_text(str(server.pid))
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(_line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL, "capabilities": {},
        "clientInfo": {"name": "dying-client", "version": "0"}}}))
    server.stdin.write(_line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    server.stdin.flush()
    server.stdout.readline()  # the initialize answer: the server is serving
    for i in range(1, calls + 1):
        if i % 2:
            call = {"name": "remember", "arguments": {
                "content": f"note {i} about the billing webhook retries " + "word " * 2000}}
        else:
            call = {"name": "recall", "arguments": {"query": "billing webhook retries"}}
        server.stdin.write(_line({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                                  "params": call}))
    server.stdin.flush()
    if how == "close":
        server.stdin.close()
        server.stdout.close()
        os._exit(0)
    if how == "stdout":
        server.stdout.close()
        time.sleep(60)
        os._exit(0)
    os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
