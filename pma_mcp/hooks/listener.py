"""The server's side of the hook hand-off (handoff.py): a socket beside the MCP server on
which hook processes of the same user and install ask for their context.

Each connection is one hook run on a thread of its own (`handlers.serve` on a blocking store
connection, as in a hook process), so a slow store never stalls the MCP session's event
loop, and the threads are daemons, so a server whose client went away exits at once; a hook
whose server vanished mid-answer runs itself.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NamedTuple

from pma_mcp import runtime
from pma_mcp.hooks import handoff

MAX_CLIENTS = 8
"""Hook connections served at once; more are closed (those hooks run themselves)."""
MAX_REQUEST_BYTES = (len(handoff.MAGIC) + 4 * handoff.REQUEST_FIELDS + handoff.MAX_ENV_BYTES
                     + handoff.MAX_INPUT_BYTES + 1024)


class Request(NamedTuple):
    """What a hook process sent: its event argument, working directory, environment, stdin."""

    event: str
    cwd: str
    env: dict[str, str]
    stdin: bytes


class Reply(NamedTuple):
    """What the hook process prints: stdout (the JSON reply, or nothing) and its stderr."""

    stdout: str | None
    stderr: str


Serve = Callable[[Request], Reply | None]
"""A request's reply, or None to decline it (the hook then runs in its own process)."""


def parse(data: bytes, key: str) -> Request | None:
    """A request from a hook of this install (`key`), or None."""
    parts = handoff.fields(data, handoff.REQUEST_FIELDS)
    if parts is None or parts[0] != key.encode():
        return None
    _, event, cwd, env, stdin = parts
    return Request(os.fsdecode(event), os.fsdecode(cwd), handoff.decode_env(env), stdin)


@contextmanager
def listening(serve: Serve, warn: Callable[[str], None]) -> Iterator[str | None]:
    """Answer hook processes for the block's duration; yields the socket's path, or None when
    there is none (no Unix sockets here, or the folder is unusable or unsafe: `warn` says
    why, and hooks run in their own processes)."""
    if not runtime.supported():
        yield None
        return
    key = runtime.install_key()
    folder = runtime.socket_dir()
    path = os.path.join(folder, runtime.socket_name(key, os.getpid()))
    server = _bind(folder, path, warn)
    if server is None:
        yield None
        return
    threading.Thread(target=_accept, args=(server, serve, key), name="pma-mcp-hooks",
                     daemon=True).start()
    try:
        yield path
    finally:
        handoff.remove(path)
        server.close()


def _bind(folder: str, path: str, warn: Callable[[str], None]) -> socket.socket | None:
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError as exc:
        warn(f"hooks run in their own processes: cannot create {folder}: {exc.strerror}")
        return None
    if not runtime.private(folder):
        warn(f"hooks run in their own processes: {folder} is not a folder only this user may "
             "enter (owned by this user, mode 0700); remove it or fix its owner and mode")
        return None
    handoff.remove(path)  # left by an earlier process that had this pid
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(path)
        os.chmod(path, 0o600)
        server.listen(MAX_CLIENTS)
    except OSError as exc:
        server.close()
        warn(f"hooks run in their own processes: cannot listen on {path}: {exc.strerror}")
        return None
    return server


def _accept(server: socket.socket, serve: Serve, key: str) -> None:
    slots = threading.BoundedSemaphore(MAX_CLIENTS)
    while True:
        try:
            conn, _ = server.accept()
        except OSError:
            return  # closed: the server is exiting
        if not slots.acquire(blocking=False):
            conn.close()
            continue
        threading.Thread(target=_answer, args=(conn, serve, key, slots), name="pma-mcp-hook",
                         daemon=True).start()


def _answer(conn: socket.socket, serve: Serve, key: str,
            slots: threading.BoundedSemaphore) -> None:
    """One hook process: read its request, answer it, close. What is not a request of this
    install (or is too large, or comes from another user) is closed unanswered."""
    try:
        conn.settimeout(handoff.REPLY_TIMEOUT_S)
        if not _same_user(conn):
            return
        data = _read_all(conn, MAX_REQUEST_BYTES)
        request = None if data is None else parse(data, key)
        if request is None:
            return
        reply = serve(request)
        conn.sendall(handoff.declined() if reply is None
                     else handoff.reply(reply.stdout, reply.stderr))
    except OSError:
        pass
    finally:
        conn.close()
        slots.release()


def _same_user(conn: socket.socket) -> bool:
    """The peer runs as this user (Linux's SO_PEERCRED); elsewhere the 0700 folder decides."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return True
    creds = conn.getsockopt(socket.SOL_SOCKET, option, 12)  # struct ucred: pid, uid, gid
    return int.from_bytes(creds[4:8], sys.byteorder) == os.getuid()


def _read_all(conn: socket.socket, limit: int) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    while chunk := conn.recv(1 << 16):
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)
