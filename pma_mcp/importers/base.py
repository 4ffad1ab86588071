"""What every reader shares: the source it reads, the error it raises, small parsers, and the
guarded reading of its input (pma_mcp.files: never blocking on a FIFO, bounded by bytes).

A record a reader cannot use (an odd value, metadata nested too deep, a line too long) is
skipped or coerced with a note in `Source.notes`, and the import goes on; only input that is
not the format at all, or too large to read, stops it with FormatError.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO, TypeVar

from pma_mcp import files
from pma_mcp.core.errors import InvalidInputError
from pma_mcp.core.models import ImportItem
from pma_mcp.core.validation import MAX_LABEL_CHARS, MAX_LABELS, MAX_METADATA_DEPTH, shallow

MAX_DOCUMENT_BYTES = 64_000_000
"""A JSON document parsed whole (or a member of an archive, or what a .gz expands to) past this
is refused: parsing it would take several times its size in memory."""
MAX_LINE_BYTES = 16_000_000
"""A JSON Lines line past this is skipped with a note, its bytes never held."""
MAX_STREAM_BYTES = 1_000_000_000
"""A JSON Lines input (after decompression) past this is refused."""
MAX_NOTES = 100
"""Notes kept per import; past it one line says how many more there were."""

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True, slots=True, kw_only=True)
class Source:
    """What to read and where it goes.

    `namespace` is the --namespace the user forced (None: each reader's own mapping);
    `current` is the namespace the server resolves here; `project_namespace(dir)` is the one
    a server started in `dir` would use; `claude_home` is Claude Code's config folder.
    """

    path: Path
    namespace: str | None
    current: str
    project_namespace: Callable[[Path], str]
    claude_home: Path
    notes: list[str] = field(default_factory=list)
    """What a reader skipped or coerced, one line each ("what: why"), for the user."""

    def note(self, what: str, why: str) -> None:
        if len(self.notes) < MAX_NOTES:
            self.notes.append(f"{what}: {why}")
        elif len(self.notes) == MAX_NOTES:
            self.notes.append("…: more records were skipped or changed; only the first "
                              f"{MAX_NOTES} are listed")


@dataclass(frozen=True, slots=True)
class Reader:
    """A format: its reader and what it expects, for the error a wrong input gets."""

    read: Callable[[Source], list[ImportItem]]
    expects: str


class FormatError(InvalidInputError):
    """The input is not what the named format reads; nothing was imported."""

    def __init__(self, fmt: str, path: Path, expects: str, why: str) -> None:
        super().__init__(f"--from {fmt}", f"{path} is not {expects}: {why}")


@contextmanager
def opened(fmt: str, path: Path, expects: str) -> Iterator[BinaryIO]:
    """`path` opened as a regular file (never blocking); FormatError naming it otherwise."""
    try:
        with files.open_regular(path) as handle:
            yield handle
    except files.RefusedFileError as exc:
        why = "no such file" if not path.exists() and not path.is_symlink() else exc.reason
        raise FormatError(fmt, path, expects, why) from None


def bounded(fmt: str, path: Path, expects: str, head: files.Head, what: str) -> bytes:
    """The bytes of `head`, or FormatError when the input went on past MAX_DOCUMENT_BYTES."""
    if head.cut:
        raise FormatError(fmt, path, expects, f"{what} is larger than {MAX_DOCUMENT_BYTES:,} "
                          "bytes, more than one import reads whole; nothing was imported")
    return head.data


def json_document(fmt: str, path: Path, expects: str, data: bytes) -> object:
    """One JSON document; FormatError if it is not UTF-8 JSON or nests too deep to parse."""
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise FormatError(fmt, path, expects, f"not UTF-8 text (byte {exc.start})") from None
    except RecursionError:
        raise FormatError(fmt, path, expects, "JSON nested too deep to read") from None


def each(records: Iterable[T], build: Callable[[T], R | None], source: Source, what: str
         ) -> list[R]:
    """`build` applied to every record; one whose values it cannot use (TypeError, ValueError,
    RecursionError, InvalidInputError) is skipped with a note naming it, and the rest go on."""
    out: list[R] = []
    for number, record in enumerate(records, 1):
        try:
            item = build(record)
        except (TypeError, ValueError, RecursionError, InvalidInputError) as exc:
            source.note(f"{what} {number}", f"skipped ({type(exc).__name__}: {exc})"[:300])
            continue
        if item is not None:
            out.append(item)
    return out


def shallow_metadata(value: object, source: Source, what: str) -> dict[str, object] | None:
    """`value` if it is an object nested at most MAX_METADATA_DEPTH deep, else None (a note
    says why when it was dropped for depth)."""
    if not isinstance(value, dict) or not value:
        return None
    try:
        shallow(value, limit=MAX_METADATA_DEPTH - 1)  # it is kept one level down
    except InvalidInputError:
        source.note(what, f"metadata nested more than {MAX_METADATA_DEPTH - 1} levels deep; "
                    "the record was kept without it")
        return None
    return value


def labels(values: Iterable[object]) -> tuple[str, ...]:
    """Distinct non-empty labels within our limits (longer ones are cut, extra ones dropped)."""
    out: list[str] = []
    for value in values:
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            continue
        text = str(value).strip()[:MAX_LABEL_CHARS].strip()
        if text and text not in out:
            out.append(text)
    return tuple(out[:MAX_LABELS])


def json_list(value: object) -> list[object]:
    """A list stored as JSON text (claude-mem's facts, concepts, files), or [] if it is not."""
    if isinstance(value, list):
        return value
    if not isinstance(value, str) or not value.strip():
        return []
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        return [value]
    return parsed if isinstance(parsed, list) else [parsed]


MAX_EPOCH = 253_402_300_800.0
"""Year 10000: an epoch past it (or before 1970) is no time a memory was made."""


def epoch(value: object) -> float | None:
    """Epoch seconds from an ISO-8601 string or epoch seconds/milliseconds; None if unknown."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        seconds = float(value) / 1000.0 if value > 100_000_000_000 else float(value)
        return seconds if 0 <= seconds < MAX_EPOCH else None
    if isinstance(value, str) and value.strip():
        text = value.strip().replace("Z", "+00:00")
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            return None
        seconds = (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()
        return seconds if 0 <= seconds < MAX_EPOCH else None
    return None


def mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None
