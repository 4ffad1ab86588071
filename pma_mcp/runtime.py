"""Where a running server and its hooks meet: the folder and names of the sockets over which
the server answers the context hooks (hooks/handoff.py, hooks/listener.py), and what doctor
reads of them (admin/doctor.py).

Imports only `os` and `sys` at the top: a handed-off hook process loads this module and
hooks/handoff.py, and nothing else of pma-mcp.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping


def supported() -> bool:
    """Unix sockets and user ids: not on Windows, where hooks always run themselves."""
    return sys.platform != "win32" and hasattr(os, "getuid")


def install_key() -> str:
    """This install's version and folder, as 8 hex digits: the same code on both sides."""
    import zlib

    from pma_mcp import __version__

    here = os.path.dirname(os.path.abspath(__file__))
    return f"{zlib.crc32(f'{__version__}:{here}'.encode(errors='surrogateescape')):08x}"


def socket_dir(env: Mapping[str, str] | None = None) -> str:
    """PMA_RUNTIME_DIR when it is an absolute path, else `/tmp/pma-mcp-<uid>`.

    The one PMA_ variable read outside config.py: a handed-off hook loads nothing else. The
    place depends on no variable a client may leave out of a server's environment
    (XDG_RUNTIME_DIR, TMPDIR), so a hook and its server always look in the same one."""
    env = os.environ if env is None else env
    configured = env.get("PMA_RUNTIME_DIR", "").strip()
    if configured and os.path.isabs(configured):
        return configured
    return f"/tmp/pma-mcp-{os.getuid()}"


def socket_name(key: str, pid: int) -> str:
    return f"hook-{key}-{pid}.sock"


def sockets_of(folder: str, key: str) -> list[str]:
    """Paths of the sockets in `folder` named for the install `key`, live or stale."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    prefix = socket_name(key, 0)[:-len("0.sock")]
    return [os.path.join(folder, n) for n in sorted(names)
            if n.startswith(prefix) and n.endswith(".sock")]


def pid_of(path: str) -> int | None:
    """The server process a socket is named for."""
    digits = os.path.basename(path).rsplit("-", 1)[-1][:-len(".sock")]
    return int(digits) if digits.isdigit() else None


def private(path: str) -> bool:
    """A real directory (not a link) owned by this user that no one else may enter."""
    import stat

    try:
        info = os.lstat(path)
    except OSError:
        return False
    return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
            and info.st_mode & 0o077 == 0)
