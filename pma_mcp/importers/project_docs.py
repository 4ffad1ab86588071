"""Project docs → semantic memories (pure but for reading files), for `pma-mcp seed`.

CLAUDE.md, README.md and docs/*.md are split at Markdown headings; each section (with its
heading path for context) becomes one memory. Long sections are cut at paragraph boundaries.

Files are not always what they seem, so reading is guarded: a path whose real location is
outside the project's real path (a `docs/setup.md` linked to `~/.aws/credentials`) is skipped,
so is anything that is not a regular file (a FIFO would block, a device never ends), and at
most MAX_FILE_BYTES of a file are read (the rest is left out, with a note). Every skip comes
back with its reason. Redaction happens where every write does, in the service.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from pma_mcp import files

SEED_FILES = ("CLAUDE.md", "README.md")
SEED_GLOB = "docs/*.md"
MAX_SECTION_CHARS = 4_000
MIN_SECTION_CHARS = 40
MAX_FILE_BYTES = 2_000_000  # per file; a larger file is cut here (documented in docs/CLI.md)
MAX_FILES = 500

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Section:
    source: str
    heading: str
    text: str


@dataclass(frozen=True)
class Skipped:
    """A file `seed` left out (or cut short), and why."""

    source: str
    reason: str


@dataclass(frozen=True)
class SeedRead:
    sections: list[Section] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)  # not read at all
    cut: list[Skipped] = field(default_factory=list)  # read only up to MAX_FILE_BYTES


def project_files(root: Path) -> list[Path]:
    """The candidate paths, as named inside the project (links not yet followed)."""
    files = [root / name for name in SEED_FILES if (root / name).is_file()]
    files.extend(sorted(p for p in root.glob(SEED_GLOB) if p.is_file()))
    return files


def split_sections(markdown: str, source: str) -> list[Section]:
    """Sections of a Markdown document, headings inside code fences ignored."""
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    body: list[str] = []
    in_fence = False

    def flush() -> None:
        text = "\n".join(body).strip()
        heading = " > ".join(title for _, title in path) if path else Path(source).name
        for chunk in _chunks(text):
            if len(chunk) >= MIN_SECTION_CHARS:
                sections.append(Section(source, heading, f"{heading}\n\n{chunk}"))
        body.clear()

    for line in markdown.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        match = None if in_fence else _HEADING.match(line)
        if match:
            flush()
            level = len(match.group(1))
            while path and path[-1][0] >= level:
                path.pop()
            path.append((level, match.group(2)))
        else:
            body.append(line)
    flush()
    return sections


def _chunks(text: str) -> list[str]:
    if len(text) <= MAX_SECTION_CHARS:
        return [text] if text else []
    chunks: list[str] = []
    current = ""
    for block in re.split(r"\n\s*\n", text):
        para = block
        while len(para) > MAX_SECTION_CHARS:
            if current:
                chunks.append(current)
                current = ""
            chunks.append(para[:MAX_SECTION_CHARS])
            para = para[MAX_SECTION_CHARS:]
        if current and len(current) + len(para) + 2 > MAX_SECTION_CHARS:
            chunks.append(current)
            current = para
        else:
            current = f"{current}\n\n{para}" if current else para
    if current:
        chunks.append(current)
    return chunks


def read_sections(root: Path) -> SeedRead:
    """Sections of the project's docs, with every file left out and why."""
    real_root = root.resolve()
    read = SeedRead()
    for file in project_files(root)[:MAX_FILES]:
        source = str(file.relative_to(root))
        try:
            text, note = read_inside(file, real_root)
        except Refused as refused:
            read.skipped.append(Skipped(source, str(refused)))
            continue
        if note:
            read.cut.append(Skipped(source, note))
        read.sections.extend(split_sections(text, source))
    extra = len(project_files(root)) - MAX_FILES
    if extra > 0:
        read.skipped.append(Skipped(SEED_GLOB, f"{extra} more files past the first {MAX_FILES}"))
    return read


class Refused(Exception):
    """A file that is not read, and why (the message)."""


def read_inside(file: Path, real_root: Path, limit: int = MAX_FILE_BYTES
                ) -> tuple[str, str | None]:
    """The text of `file` if it really lies inside `real_root`, read at most `limit` bytes;
    with a note when the file went on past that. Refused (saying why) for a link leading out
    of `real_root` or anything that is not a regular file."""
    real = file.resolve()
    if not real.is_relative_to(real_root):
        raise Refused("a symlink to a file outside the project; not read")
    try:
        # O_NOFOLLOW on the resolved path: a link swapped in since resolve() is refused too.
        head = files.read_head(real, limit, follow_symlinks=False)
    except files.RefusedFileError as refused:
        raise Refused(refused.reason) from None
    note = None
    if head.cut:
        size = f"{real.stat().st_size:,} bytes, " if real.exists() else ""
        note = f"{size}over the {limit:,}-byte cap per file: only the first part was read"
    text = head.data.decode("utf-8", errors="replace").replace("\x00", "")
    return text, note
