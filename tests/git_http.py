"""A git repository served over smart HTTP on 127.0.0.1, for installing the plugin the way
Claude Code installs it from GitHub: `claude plugin marketplace add <url>.git` clones it.

Claude Code clones shallowly (`--depth 1`), which git's dumb HTTP transport cannot serve, so
each request runs `git http-backend` as a CGI program, as a git server does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

GIT_USER = ["-c", "user.name=pma-mcp tests", "-c", "user.email=tests@pma-mcp.invalid"]


def commit_all(folder: Path) -> None:
    """Make `folder` a git repository whose one commit holds every file in it."""
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                 [*GIT_USER, "commit", "-q", "-m", "snapshot"]):
        subprocess.run([git, *args], cwd=folder, check=True, capture_output=True)


class _Backend(BaseHTTPRequestHandler):
    root: Path

    def do_GET(self) -> None:
        self._cgi()

    def do_POST(self) -> None:
        self._cgi()

    def _cgi(self) -> None:
        parts = urlsplit(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": str(self.root), "GIT_HTTP_EXPORT_ALL": "1",
            "REQUEST_METHOD": self.command, "PATH_INFO": parts.path,
            "QUERY_STRING": parts.query, "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)), "REMOTE_ADDR": "127.0.0.1",
            "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
        }
        done = subprocess.run(["git", "http-backend"], input=body, env=env,
                              capture_output=True, timeout=120, check=False)
        head, _, payload = done.stdout.partition(b"\r\n\r\n")
        status = 200
        headers = []
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: a request log would only clutter the test output."""


@contextmanager
def served(repository: Path) -> Iterator[str]:
    """The clone URL (ending in .git, as Claude Code requires) of `repository`, served
    until the block ends."""
    bare = repository.parent / f"{repository.name}-served" / f"{repository.name}.git"
    bare.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(repository), str(bare)], check=True,
                   capture_output=True)
    handler = type("Backend", (_Backend,), {"root": bare.parent})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/{bare.name}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
