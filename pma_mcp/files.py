"""Reading a file someone else named, without trusting what the name turns out to be.

Every path pma-mcp reads and did not write itself (git's config files, a transcript, a
project's docs, another tool's export) goes through here, so three guarantees hold once for
all of them:

- Nothing blocks on a file that is not a regular file. The open is non-blocking (a FIFO with
  no writer would otherwise stop the process at `open`), and the opened file is checked with
  `fstat`: a FIFO, device, socket or directory is refused with `RefusedFileError` naming the
  path and what it is. A device such as /dev/zero never ends, so it is refused too.
- Every read is bounded by bytes: `read_head` keeps at most `limit` bytes and says whether the
  file went on; `lines` streams a file (or a decompressing stream) line by line with a cap on
  each line and on the whole, so a one-line gigabyte is never held in memory.
- Decompression is bounded by its output (`gunzip_head`), not by the compressed size.

`follow_symlinks=False` adds O_NOFOLLOW: the last component must not be a link (the caller
has resolved the path and checked where it lies; a link swapped in since is refused).
"""

from __future__ import annotations

import os
import stat
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, BinaryIO, Protocol

from pma_mcp.core.errors import PmaError

CHUNK = 1 << 16
"""Bytes read at a time: small enough that a bounded read never overshoots by much."""


class RefusedFileError(PmaError):
    """A path was not read: it is not a regular file, cannot be opened, or holds too much."""

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class Readable(Protocol):
    def read(self, size: int = ..., /) -> bytes: ...


def kind_of(mode: int) -> str:
    """What a file of this `st_mode` is, in words for an error message."""
    for test, name in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISDIR, "a directory"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def not_regular(path: str | os.PathLike[str]) -> str | None:
    """Why `path` (if it exists) is not a regular file, or None when it is one or is absent.

    For a file another library opens itself (SQLite): checked before it does, so it never
    opens a FIFO. A file swapped in between the check and that open is not caught.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    return None if stat.S_ISREG(mode) else f"is {kind_of(mode)}, not a regular file"


@contextmanager
def open_regular(path: str | os.PathLike[str], *, follow_symlinks: bool = True
                 ) -> Iterator[BinaryIO]:
    """`path` opened for reading, never blocking; RefusedFileError unless it is a regular file."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        why = exc.strerror or str(exc)
        if not follow_symlinks and exc.errno == getattr(os, "ELOOP", -1):
            why = "a symbolic link, not followed"
        raise RefusedFileError(path, f"cannot be opened ({why})") from None
    handle = os.fdopen(fd, "rb")
    with handle:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise RefusedFileError(path, f"is {kind_of(mode)}, not a regular file; not read")
        yield handle


@dataclass(frozen=True, slots=True)
class Head:
    """The first bytes of a file: `data` (at most the limit) and whether the file went on."""

    data: bytes
    cut: bool


def read_head(path: str | os.PathLike[str], limit: int, *, follow_symlinks: bool = True
              ) -> Head:
    """At most `limit` bytes of the regular file `path` (RefusedFileError otherwise)."""
    with open_regular(path, follow_symlinks=follow_symlinks) as handle:
        return head_of(handle, limit)


def head_of(stream: Readable, limit: int) -> Head:
    """At most `limit` bytes of `stream`, in chunks (one byte more says whether it went on)."""
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = stream.read(min(CHUNK, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    data = b"".join(chunks)
    return Head(data[:limit], len(data) > limit)


def read_text(path: str | os.PathLike[str], limit: int) -> str | None:
    """The file as text if it is a regular file of at most `limit` bytes, else None.

    For files that are skipped rather than reported when unreadable (git's config files).
    """
    try:
        head = read_head(path, limit)
    except RefusedFileError:
        return None
    return None if head.cut else head.data.decode("utf-8", errors="replace")


def gunzip_head(stream: Readable, limit: int) -> Head:
    """At most `limit` bytes of what the gzip `stream` decompresses to (every member of it).

    Output is bounded per step (`max_length`), so a small bomb expanding to gigabytes costs
    `limit` bytes of memory, never more. zlib.error on a damaged stream.
    """
    inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    out: list[bytes] = []
    size = 0
    pending = b""
    while size <= limit:
        if not pending:
            pending = stream.read(CHUNK)
            if not pending:
                out.append(inflate.flush())
                break
        piece = inflate.decompress(pending, limit + 1 - size)
        pending = inflate.unconsumed_tail
        out.append(piece)
        size += len(piece)
        if inflate.eof:  # another member may follow (gzip's `cat a.gz b.gz`); padding may not
            pending = (inflate.unused_data + pending) or stream.read(CHUNK)
            if not pending.startswith(b"\x1f\x8b"):
                break
            inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    data = b"".join(out)
    return Head(data[:limit], len(data) > limit)


@dataclass(frozen=True, slots=True)
class Line:
    """One line (without its newline), numbered from 1; `data` is None if it was too long."""

    number: int
    data: bytes | None


def lines(stream: IO[bytes] | Readable, name: str | os.PathLike[str], *, max_line: int,
          max_total: int) -> Iterator[Line]:
    """The lines of `stream`, each held only up to `max_line` bytes.

    A longer line is yielded with `data=None` (its bytes are skipped, never kept), so the
    caller can note it and go on. Past `max_total` bytes RefusedFileError (naming `name`)
    says so, rather than a part being taken for the whole.
    """
    number = 0
    buffer = b""
    overlong = False
    total = 0
    while True:
        chunk = stream.read(CHUNK)
        total += len(chunk)
        if total > max_total:
            raise RefusedFileError(name, f"goes on past {max_total:,} bytes; not read")
        if not chunk:
            break
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            number += 1
            if overlong or len(buffer) + end - start > max_line:
                yield Line(number, None)
            else:
                yield Line(number, buffer + chunk[start:end])
            buffer, overlong, start = b"", False, end + 1
        if not overlong:
            buffer += chunk[start:]
            if len(buffer) > max_line:
                buffer, overlong = b"", True
    if buffer or overlong:
        yield Line(number + 1, None if overlong else buffer)


def under(path: Path, root: Path) -> bool:
    """Whether `path`, links followed, really lies inside `root` (itself resolved)."""
    try:
        return path.resolve().is_relative_to(root)
    except (OSError, RuntimeError):  # a link loop
        return False
