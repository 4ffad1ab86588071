"""A context hook handed to the running MCP server over a user-only Unix socket: the hook's
side, and the bytes both sides speak (the server's side is listener.py).

A prompt hook is a fresh Python process on every prompt, and most of its time is imports:
the standard library and pma-mcp's modules cost ~4× the interpreter's own start before the
store is even opened (docs/BENCHMARKS.md, "Fourth round"). In Claude Code the pma MCP server
is already running beside the hooks with all of that loaded, so the hook process sends its
input there and prints the answer, importing nothing but this module (not even `typing`:
the names below exist for mypy only).

- **Same answer.** The request carries the hook's event, input, environment and working
  directory; the server resolves the settings from them and runs the same handler on its own
  connection (`handlers.serve`), so the output is what the hook would have printed. The
  server declines what it cannot answer exactly (not a context event, PostgreSQL under other
  `PG*` variables, a different user or home, PMA_HOOK_HANDOFF=0: `handlers._servable`);
  then, with no server, or on any error or timeout, the hook runs in its own process as
  before (`cli.main`).
- **User-only.** Sockets live in `/tmp/pma-mcp-<uid>` (or PMA_RUNTIME_DIR, see runtime.py):
  a directory this user owns with mode 0700, checked by both sides before use; on Linux the
  server also checks the peer's uid. The environment never leaves the user's own processes
  and is never logged.
- **Named by install.** `hook-<key>-<pid>.sock`, where the key is this install's version and
  folder: a hook only talks to a server running the same code. A server removes its socket
  when it exits; one left by a killed server refuses connections, and the hook that finds it
  removes it.
"""

from __future__ import annotations

import os
import sys

from pma_mcp import runtime

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

MAX_INPUT_BYTES = 32 * 1024 * 1024
"""Hook input beyond this is not read at all (real prompts are far smaller)."""
MAX_ENV_BYTES = 1024 * 1024
"""A request whose environment and working directory are larger is not sent."""
CONNECT_TIMEOUT_S = 0.5
REPLY_TIMEOUT_S = 5.0
"""How long a hook waits for the server's answer before running in its own process: the
server's own lock waits stop at 1 s (handlers.CONTEXT_BUSY_MS), Claude Code's hook at 10 s."""
MAGIC = b"pma-mcp-hook/1\n"
HANDLED = b"+"
DECLINED = b"-"
REQUEST_FIELDS = 5
"""key, event, cwd, environment, stdin."""


# -------------------------------------------------------------------------- framing


def field(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


def fields(data: bytes, count: int) -> list[bytes] | None:
    """Exactly `count` length-prefixed fields after MAGIC, or None."""
    if not data.startswith(MAGIC):
        return None
    out: list[bytes] = []
    at = len(MAGIC)
    for _ in range(count):
        size = int.from_bytes(data[at:at + 4], "big")
        at += 4
        if at + size > len(data):
            return None
        out.append(data[at:at + size])
        at += size
    return out if at == len(data) else None


def encode_env(env: Mapping[str, str]) -> bytes:
    return b"\0".join(os.fsencode(f"{k}={v}") for k, v in env.items() if "\0" not in k + v)


def decode_env(blob: bytes) -> dict[str, str]:
    pairs = (os.fsdecode(item).partition("=") for item in blob.split(b"\0") if item)
    return {k: v for k, sep, v in pairs if sep and k}


def request(key: str, event: str, cwd: str, env: Mapping[str, str], stdin: bytes) -> bytes:
    return MAGIC + b"".join(field(part) for part in (
        key.encode(), os.fsencode(event), os.fsencode(cwd), encode_env(env), stdin))


def reply(stdout: str | None, stderr: str) -> bytes:
    return (MAGIC + HANDLED + field((stdout or "").encode(errors="surrogateescape"))
            + field(stderr.encode(errors="replace")))


def declined() -> bytes:
    return MAGIC + DECLINED


def answer_of(data: bytes) -> tuple[bytes, bytes] | None:
    """(stdout, stderr) of a handled request; None when declined or not a reply."""
    if not data.startswith(MAGIC + HANDLED):
        return None
    parts = fields(MAGIC + data[len(MAGIC) + 1:], 2)
    return None if parts is None else (parts[0], parts[1])


# ------------------------------------------------------------------------ the hook


def read_stdin() -> bytes | None:
    """The hook's input as sent, at most one byte past MAX_INPUT_BYTES; None without stdin."""
    stream = getattr(sys.stdin, "buffer", None)
    return None if stream is None else bytes(stream.read(MAX_INPUT_BYTES + 1))


def emit(stream: object, data: bytes | str) -> None:
    """Write what the hook prints (bytes to the stream's buffer); a pipe Claude Code already
    closed (a timeout) is ignored."""
    target: Any = getattr(stream, "buffer", None) if isinstance(data, bytes) else stream
    if not data or target is None:
        return
    try:
        target.write(data)
        target.flush()
    except (OSError, ValueError):
        pass


def ask_server(event: str, stdin: bytes) -> tuple[bytes, bytes] | None:
    """(stdout, stderr) from a running server of this install, or None: run it here."""
    if not runtime.supported():
        return None
    folder = runtime.socket_dir()
    key = runtime.install_key()
    sockets = runtime.sockets_of(folder, key)
    if not sockets or not runtime.private(folder):
        return None
    try:
        cwd = os.getcwd()
    except OSError:
        return None
    message = request(key, event, cwd, os.environ, stdin)
    if len(message) - len(stdin) > MAX_ENV_BYTES:
        return None
    for path in sockets:
        answer = _exchange(path, message)
        if answer is not None:
            return answer_of(answer)
    return None


def _exchange(path: str, message: bytes) -> bytes | None:
    """The server's whole answer, or None if no server listens there (a stale socket is
    removed), the connection failed, or the answer took too long."""
    import _socket

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT_S)
        try:
            sock.connect(path)
        except (ConnectionRefusedError, FileNotFoundError):
            remove(path)
            return None
        sock.settimeout(REPLY_TIMEOUT_S)
        sock.sendall(message)
        sock.shutdown(_socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(1 << 16):
            chunks.append(chunk)
        return b"".join(chunks) or None
    except OSError:
        return None
    finally:
        sock.close()


def remove(path: str) -> None:
    """Remove a socket file that no server listens on any more (or is about to stop)."""
    try:  # noqa: SIM105 - contextlib costs a handed-off hook 2.7 ms of imports
        os.unlink(path)
    except OSError:
        pass
