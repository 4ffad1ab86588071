"""Writing an export to a path that may not be a regular file.

`export -o PATH` holds every memory, so it must neither clobber what PATH really is nor leave
a half-written file behind:

- a regular file (or a new name) is written atomically: a temporary file in the same
  directory, mode 0600, fsync, rename over PATH, fsync of the directory. A crash leaves the old
  file or the new one, never a mix; an existing file's mode is not kept (memories are private);
- anything else (a FIFO, /dev/null, a terminal, /dev/stdout) is streamed to as it is: the
  device node stays a device node;
- a symlink is refused when it leads to a regular file or to nothing (writing would replace
  whatever it points at), unless `follow_symlinks`; a link to a stream (/dev/stdout →
  /proc/self/fd/1 → a pipe) is streamed to;
- a directory, or a parent that does not exist, is a clear error and nothing is written.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from pma_mcp.core.errors import PmaError


class OutputError(PmaError):
    """The export target cannot be written as asked; nothing was written."""


def write(path: Path, data: bytes, *, follow_symlinks: bool = False) -> str:
    """Write `data` to `path` as described above; returns how ("file" or "stream")."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return _write_regular(path, data)
    if stat.S_ISLNK(info.st_mode):
        return _write_through_link(path, data, follow_symlinks=follow_symlinks)
    if stat.S_ISDIR(info.st_mode):
        raise OutputError(f"{path} is a directory; name a file inside it")
    if stat.S_ISREG(info.st_mode):
        return _write_regular(path, data)
    return _stream(path, data)


def _write_through_link(path: Path, data: bytes, *, follow_symlinks: bool) -> str:
    try:
        mode: int | None = os.stat(path).st_mode  # through the link: /dev/stdout is a pipe
    except FileNotFoundError:
        mode = None
    target = path.resolve()
    if mode is not None and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        return _stream(path, data)  # /dev/stdout and friends
    if not follow_symlinks:
        raise OutputError(
            f"{path} is a symlink to {target}; refusing to replace what it points at. "
            "Pass --follow-symlinks to write there, or -o - for stdout"
        )
    if mode is not None and stat.S_ISDIR(mode):
        raise OutputError(f"{path} links to the directory {target}; name a file inside it")
    return _write_regular(target, data)


def _write_regular(path: Path, data: bytes) -> str:
    directory = path.parent
    if not directory.is_dir():
        raise OutputError(f"{directory} does not exist; create it first")
    tmp = directory / f".{path.name}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(directory)
    return "file"


def _fsync_dir(directory: Path) -> None:
    """Make the rename durable; some filesystems refuse to fsync a directory (ignored)."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _stream(path: Path, data: bytes) -> str:
    """Write to an existing non-regular file without creating, truncating or replacing it."""
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)  # a FIFO blocks here until a reader comes
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    return "stream"
