"""What every reader shares: the source it reads, the error it raises, small parsers."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pma_mcp.core.errors import InvalidInputError
from pma_mcp.core.models import ImportItem
from pma_mcp.core.validation import MAX_LABEL_CHARS, MAX_LABELS


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


@dataclass(frozen=True, slots=True)
class Reader:
    """A format: its reader and what it expects, for the error a wrong input gets."""

    read: Callable[[Source], list[ImportItem]]
    expects: str


class FormatError(InvalidInputError):
    """The input is not what the named format reads; nothing was imported."""

    def __init__(self, fmt: str, path: Path, expects: str, why: str) -> None:
        super().__init__(f"--from {fmt}", f"{path} is not {expects}: {why}")


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


def epoch(value: object) -> float | None:
    """Epoch seconds from an ISO-8601 string or epoch seconds/milliseconds; None if unknown."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value) / 1000.0 if value > 100_000_000_000 else float(value)
    if isinstance(value, str) and value.strip():
        text = value.strip().replace("Z", "+00:00")
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            return None
        return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()
    return None


def mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None
